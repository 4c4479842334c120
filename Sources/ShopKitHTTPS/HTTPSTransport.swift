import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime
import ShopKitCore
import ShopKitPinning
import ShopKitTLS

/// An OpenAPI `ClientTransport` that speaks HTTP/2 or HTTP/1.1 (chosen by ALPN) over pinned TLS (system OpenSSL),
/// with a connection pool.
///
/// Every connection is verified by OpenSSL (chain and hostname) and then checked against the pins of
/// `TLSClientConfiguration.pinning` before a request byte is sent. Only `https` base URLs are accepted. Redirects
/// are returned to the caller, never followed.
///
/// - Warning: There is no plaintext mode: the transport refuses non-https URLs.
public struct HTTPSTransport: ClientTransport {
    /// Everything that shapes the transport: TLS, timeouts, pool and limits.
    public struct Configuration: Sendable {
        /// Trust anchors, protocol floor and pins.
        public var tls: TLSClientConfiguration
        /// Connect, handshake, idle-read and whole-request timeouts.
        public var timeouts: Timeouts
        /// Keep-alive pool limits.
        public var pool: Pool
        /// The largest response body accepted, in bytes (default 16 MiB); larger ones fail with
        /// ``HTTPSTransportError/responseBodyTooLarge(limit:)``.
        public var maxResponseBodyBytes: Int
        /// The event loops to run on; nil uses `MultiThreadedEventLoopGroup.singleton`.
        public var eventLoopGroup: (any EventLoopGroup)?
        /// Where to open the TCP connection for a host instead of resolving it, as curl's `--resolve`: maps a
        /// URL host (case-insensitive) to an address (an IP literal or another name). Empty by default.
        ///
        /// Only the socket's destination changes: SNI, hostname verification and the pin set are still those
        /// of the URL's host, so an override can never make a certificate for another name acceptable.
        public var connectAddresses: [String: String]
        /// Which HTTP versions to use (default: HTTP/2 when the server chooses it in ALPN, else HTTP/1.1).
        public var httpVersion: HTTPVersionPolicy
        /// The HTTP proxy to tunnel through (`CONNECT`), or nil to connect directly (the default). Never read
        /// from the environment unless the app passes ``ProxyConfiguration/fromEnvironment(_:)``.
        ///
        /// Origins are verified and pinned inside the tunnel exactly as on a direct connection.
        public var proxy: ProxyConfiguration?
        /// Where the transport's own HTTP-level events go, at `debug` (connections opened, reused and closed by the
        /// pool, requests sent again, GOAWAY, dropped trailers), like AsyncHTTPClient's `backgroundActivityLogger`;
        /// `nil` (the default) uses the TLS configuration's logger, which is silent unless the app gives one. TLS
        /// events (which pin matched, a refused pin) always go to `tls.logger`. Never a header value, a token or
        /// a body.
        public var logger: Logger?

        /// A configuration; every parameter has a safe default.
        public init(
            tls: TLSClientConfiguration = TLSClientConfiguration(), timeouts: Timeouts = Timeouts(), pool: Pool = Pool(),
            maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes, eventLoopGroup: (any EventLoopGroup)? = nil,
            connectAddresses: [String: String] = [:], httpVersion: HTTPVersionPolicy = .automatic,
            proxy: ProxyConfiguration? = nil, logger: Logger? = nil
        ) {
            self.logger = logger
            self.proxy = proxy
            self.httpVersion = httpVersion
            self.tls = tls
            self.timeouts = timeouts
            self.pool = pool
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.eventLoopGroup = eventLoopGroup
            self.connectAddresses = connectAddresses
        }
    }

    /// The transport's timeouts: each fails the request with ``HTTPSTransportError/timeout(_:)``, but the
    /// handshake's, which is TLS's own (`TLSError.handshakeTimeout`).
    public struct Timeouts: Sendable, Hashable {
        /// Opening the TCP connection (default 10 s).
        public var connect: Duration
        /// The TLS handshake with chain, hostname and pin checks, and for HTTP/2 the server's first SETTINGS frame:
        /// a connection is ready only then (default 10 s).
        public var handshake: Duration
        /// The longest silence while waiting for response bytes (default 30 s).
        public var idleRead: Duration
        /// The whole request, from `send` until the last body byte, including waiting for a pooled
        /// connection (default 60 s).
        public var request: Duration
        /// How long an HTTP/2 connection may be silent (no frame from the server, idle in the pool or not) before
        /// the transport sends a PING to check that the server is still there (default 30 s); `nil` sends none.
        public var http2PingInterval: Duration?
        /// How long the server has to acknowledge that PING (default 10 s). If it does not, the connection is
        /// closed and its streams fail with ``HTTPSTransportError/Timeout/ping``.
        public var http2PingTimeout: Duration

        /// Timeouts with the given values.
        public init(
            connect: Duration = .seconds(10), handshake: Duration = .seconds(10), idleRead: Duration = .seconds(30),
            request: Duration = .seconds(60), http2PingInterval: Duration? = .seconds(30),
            http2PingTimeout: Duration = .seconds(10)
        ) {
            self.connect = connect
            self.handshake = handshake
            self.idleRead = idleRead
            self.request = request
            self.http2PingInterval = http2PingInterval
            self.http2PingTimeout = http2PingTimeout
        }
    }

    /// Which HTTP versions a transport may speak; offered to the server in ALPN, which picks.
    ///
    /// Whatever is chosen, every connection is verified and pinned exactly the same way before any HTTP byte.
    public enum HTTPVersionPolicy: Sendable, Hashable {
        /// Offer `h2` and `http/1.1`; use what the server chose (the default). A host that chose HTTP/2 gets
        /// one connection with many concurrent streams instead of one connection per request.
        case automatic
        /// Offer and speak HTTP/1.1 only.
        case http1Only
        /// Offer `h2` only; a server that does not choose it fails with
        /// ``HTTPSTransportError/http2NotNegotiated(alpn:)``.
        case http2Only

        /// The ALPN protocols offered, most preferred first.
        var applicationProtocols: [String] {
            switch self {
            case .automatic: return ["h2", "http/1.1"]
            case .http1Only: return ["http/1.1"]
            case .http2Only: return ["h2"]
            }
        }
    }

    /// Keep-alive pool limits.
    public struct Pool: Sendable, Hashable {
        /// The most connections per host and port, idle and busy together (default 8); further requests wait.
        /// An HTTP/2 connection counts once, however many streams it carries.
        public var maxConnectionsPerHost: Int
        /// How long an unused connection stays open (default 60 s).
        public var idleTimeout: Duration

        /// Pool limits with the given values.
        public init(maxConnectionsPerHost: Int = 8, idleTimeout: Duration = .seconds(60)) {
            self.maxConnectionsPerHost = max(1, maxConnectionsPerHost)
            self.idleTimeout = idleTimeout
        }
    }

    /// The configuration the transport was built with (`tls.pinning` is the policy it started with).
    package let configuration: Configuration
    let pool: ConnectionPool
    /// The TLS context whose pins ``replacePinning(_:)`` replaces (nil for a transport with a security of its own).
    let tlsContext: TLSClientContext?

    /// A task executor on the event loop the transport opens its first connections on: a request loop run under
    /// `withTaskExecutorPreference(transport.executor) { … }` crosses no threads per request (the exchange
    /// starts and resumes the caller on that loop).
    ///
    /// All connections share that loop when the transport's ``Configuration/eventLoopGroup`` has one loop, and
    /// when connections are opened one at a time; concurrent connections are spread over the group's loops,
    /// and a request on another loop than this one crosses threads as usual.
    ///
    /// - Warning: Work done under this preference runs on the event loop: never block there (locks held for
    ///   long, synchronous I/O, heavy computation), or every connection of that loop stalls.
    public let executor: any TaskExecutor

    /// A transport whose connections are secured by OpenSSL with `configuration.tls`.
    ///
    /// - Throws: when the TLS context cannot be built from the configuration (bad PEM anchors, for example).
    public init(configuration: Configuration) throws(TLSContextError) {
        try self.init(configuration: configuration, now: { Date() })
    }

    /// The same with the wall clock of pin checks injected (tests of expiry).
    package init(configuration: Configuration, now: @escaping @Sendable () -> Date) throws(TLSContextError) {
        let context = try Self.makeContext(for: configuration.tls, httpVersion: configuration.httpVersion, now: now)
        try self.init(
            configuration: configuration, security: context.makeSecurity(),
            proxySecurity: configuration.proxy.flatMap(Self.makeProxySecurity), tlsContext: context)
    }

    /// The pinning policy new connections are checked against: `configuration.tls.pinning` until
    /// ``replacePinning(_:)`` replaces it. Its `version` is the signed document's in force (0 for the baseline).
    public var pinning: PinningPolicy { tlsContext?.pinning ?? configuration.tls.pinning }

    /// Replaces the pins while requests run. When this returns, every new connection is checked against `policy`
    /// (and resumes only sessions cached under the pin set it gives the host); no pooled connection whose verified
    /// chain `policy` refuses is handed out again (idle ones are closed, busy ones close when their exchange ends);
    /// requests already running finish on their connection. A connection whose handshake was running (checked
    /// against the pins it started with) carries no request if `policy` refuses its chain, or if the old pins
    /// refused a server `policy` may accept: its request gets a new connection checked against `policy`.
    ///
    /// - Warning: This replaces the pins outright. Apply only a policy from a trusted source: code, or a signed
    ///   document checked by `PinSetVerifier` (`PinUpdates` does both).
    public func replacePinning(_ policy: PinningPolicy) {
        guard let tlsContext else { return }
        tlsContext.replacePinning(policy)
        pool.pinningChanged(expiries: policy.expiryInstants)
    }

    /// Replaces the pins as ``replacePinning(_:)`` does, only if the policy in force has `version`; whether it did
    /// (`PinUpdates` and `PinsFileWatcher` end an expired document this way, so it never undoes a newer one).
    package func replacePinning(_ policy: PinningPolicy, ifVersion version: Int) -> Bool {
        guard let tlsContext, tlsContext.replacePinning(policy, ifVersion: version) else { return false }
        pool.pinningChanged(expiries: policy.expiryInstants)
        return true
    }

    /// The Certificate Transparency log list new connections check SCTs against: `configuration.tls`'s until
    /// ``replaceCertificateTransparencyLogList(_:)`` replaces it.
    public var certificateTransparencyLogList: CTLogList {
        tlsContext?.certificateTransparency.logList ?? configuration.tls.certificateTransparency.logList
    }

    /// Replaces the CT log list while requests run: every handshake that starts after this returns checks SCTs
    /// against `logList`, and a resumed session's SCTs are judged by it. Connections already made keep running.
    ///
    /// - Warning: Apply only a list from a trusted source: the app, or a signed document checked by
    ///   `PinSetVerifier` (`CTLogListUpdates` does both).
    /// - Throws: `TLSContextError` (`.invalidInput`) when a log's key does not load or its `log_id` is not the
    ///   SHA-256 of its key; the list in force is kept.
    public func replaceCertificateTransparencyLogList(_ logList: CTLogList) throws(TLSContextError) {
        try tlsContext?.replaceCertificateTransparencyLogList(logList)
    }

    /// Replaces the CT log list as ``replaceCertificateTransparencyLogList(_:)`` does until `expiry` (a signed
    /// document's), from which every handshake uses the configuration's list again (`CTLogListUpdates`).
    package func replaceCertificateTransparencyLogList(_ logList: CTLogList, until expiry: Date)
        throws(TLSContextError)
    {
        try tlsContext?.replaceCertificateTransparencyLogList(logList, until: expiry)
    }

    /// Builds the connection security for `configuration` once per transport: one OpenSSL client context
    /// (one `SSL_CTX`, one session cache) shared by every connection, offering in ALPN what `httpVersion`
    /// allows.
    ///
    /// - Throws: `TLSContextError` when the trust anchors or protocol settings cannot be loaded.
    static func makeSecurity(
        for configuration: TLSClientConfiguration, httpVersion: HTTPVersionPolicy = .automatic
    ) throws(TLSContextError) -> any ConnectionSecurity {
        try makeContext(for: configuration, httpVersion: httpVersion).makeSecurity()
    }

    /// The OpenSSL client context for `configuration`, offering in ALPN what `httpVersion` allows.
    static func makeContext(
        for configuration: TLSClientConfiguration, httpVersion: HTTPVersionPolicy,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(TLSContextError) -> TLSClientContext {
        var tls = configuration
        tls.applicationProtocols = httpVersion.applicationProtocols
        return try TLSClientContext(configuration: tls, now: now)
    }

    /// A transport with an explicit security layer (the seam the OpenSSL handler plugs into, and tests).
    package init(
        configuration: Configuration, security: any ConnectionSecurity, proxySecurity: (any ConnectionSecurity)? = nil,
        tlsContext: TLSClientContext? = nil
    ) {
        self.configuration = configuration
        self.tlsContext = tlsContext
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        let factory = ConnectionFactory(
            group: group, security: security, connectTimeout: TimeAmount(configuration.timeouts.connect),
            handshakeTimeout: TimeAmount(configuration.timeouts.handshake), httpVersion: configuration.httpVersion,
            http2Keepalive: configuration.timeouts.http2PingInterval.map {
                .init(interval: TimeAmount($0), timeout: TimeAmount(configuration.timeouts.http2PingTimeout))
            },
            connectAddresses: Dictionary(
                // Keyed by the canonical server name, the value a request's target carries.
                configuration.connectAddresses.map { ((try? ServerName($0.key).text) ?? $0.key.lowercased(), $0.value) },
                uniquingKeysWith: { _, last in last }),
            proxySecurity: proxySecurity, logger: configuration.httpLogger)
        var wallClock: @Sendable () -> Date = { Date() }
        if let tlsContext { wallClock = tlsContext.now }
        self.pool = ConnectionPool(
            factory: factory, maxPerHost: configuration.pool.maxConnectionsPerHost,
            idleTimeout: TimeAmount(configuration.pool.idleTimeout), logger: configuration.httpLogger, now: wallClock)
        self.executor = EventLoopTaskExecutor(loop: pool.loops[0])
    }

    /// Sends `request` to `baseURL` and returns the response head with its streamed body.
    ///
    /// A request that fails on a reused connection before any response byte arrived (the server closed it
    /// while idle) is sent once more on another connection, if it is idempotent and its body replayable.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await send(
            request, body: body, baseURL: baseURL, operationID: operationID,
            requestTimeout: configuration.timeouts.request)
    }

    /// ``send(_:body:baseURL:operationID:)`` with its own whole-request timeout.
    func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String, requestTimeout: Duration
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let target = try RequestTarget(baseURL: baseURL).routed(through: configuration.proxy)
        let deadline = NIODeadline.now() + TimeAmount(requestTimeout)
        let bodyLength: HTTPConversion.BodyLength
        switch body?.length {
        case nil: bodyLength = .none
        case .known(let count)?: bodyLength = .known(count)
        case .unknown?: bodyLength = .unknown
        }
        let head = HTTPConversion.requestHead(request, baseURL: baseURL, target: target, bodyLength: bodyLength)
        try HTTPConversion.validateRequestTarget(head.uri)
        let mayRetry = HTTPConversion.isRetryable(request, body: body)
        let limits = HTTPRequestStateMachine.Limits(
            deadline: deadline, idleReadTimeout: TimeAmount(configuration.timeouts.idleRead),
            maxResponseBodyBytes: configuration.maxResponseBodyBytes)
        var attempt = 1
        while true {
            do {
                let (started, responseHead) = try await exchange(head, body: body, to: target, limits: limits)
                return try await response(of: started, head: responseHead, isHead: request.method == .head)
            } catch is ConnectionNotQuiet {
                // Nothing was written on it: not an attempt. The pool no longer has it.
                configuration.httpLogger.debug(
                    "discarded a kept-alive connection: the server sent bytes or closed it while it was idle",
                    metadata: ["host": "\(target.host)"])
            } catch let failure as NotProcessed {
                // Not processed by the server: a kept-alive HTTP/1.1 connection it had closed while idle, or an
                // HTTP/2 stream it refused (above the last stream id of its GOAWAY).
                guard mayRetry, attempt == 1 else { throw failure.error }
                configuration.httpLogger.debug(
                    "retrying on a new connection: the server did not process the request",
                    metadata: ["host": "\(target.host)", "method": "\(request.method)", "error": "\(failure.error)"])
                attempt += 1
            }
        }
    }

    /// Closes idle connections; requests still running finish, then their connections close. A request that has
    /// no connection yet, or comes later, fails with ``HTTPSTransportError/shutDown``.
    public func shutdown() async {
        pool.shutDown()
    }
}

extension HTTPSTransport.Configuration {
    /// The logger for HTTP-level events: ``logger``, or the TLS configuration's.
    var httpLogger: Logger { logger ?? tls.logger }
}

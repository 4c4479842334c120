import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ShopKitTLS

/// A connection in the pool: HTTP/1.1 (one exchange at a time) or HTTP/2 (one exchange per stream).
enum PooledConnection: Sendable {
    case http1(HTTPClientConnection)
    case http2(HTTP2Connection)

    /// The TCP (TLS) channel.
    var channel: any Channel {
        switch self {
        case .http1(let connection): return connection.channel
        case .http2(let connection): return connection.channel
        }
    }

    /// Closes the connection.
    func close() {
        channel.close(promise: nil)
    }

    /// On the event loop: what the next request runs on, handed to `opened`: an HTTP/1.1 connection itself, at
    /// once; for HTTP/2, a new stream (or an ``HTTPSTransportError`` when none could be opened).
    func openCarrier(_ opened: @escaping @Sendable (Result<HTTPClientConnection, any Error>) -> Void) {
        switch self {
        case .http1(let connection): opened(.success(connection))
        case .http2(let connection): connection.openStream(opened)
        }
    }
}

/// How connections are opened: TCP, then the security layer (TLS with its checks and its handshake deadline),
/// then HTTP/2 or HTTP/1.1 as ALPN decided.
struct ConnectionFactory: Sendable {
    let group: any EventLoopGroup
    let security: any ConnectionSecurity
    let connectTimeout: TimeAmount
    let handshakeTimeout: TimeAmount
    /// Which HTTP versions may be used.
    let httpVersion: HTTPSTransport.HTTPVersionPolicy
    /// PINGs on silent HTTP/2 connections, or `nil` for none.
    var http2Keepalive: HTTP2Connection.Keepalive?
    /// Lowercased URL host → address to connect to (``HTTPSTransport/Configuration/connectAddresses``).
    var connectAddresses: [String: String] = [:]
    /// The security of an `https://` proxy's own connection (its trust, no pins), when one is configured.
    var proxySecurity: (any ConnectionSecurity)?
    let logger: Logger

    /// Connects, secures and prepares a connection to `target`, all on the connection's event loop. The
    /// future fails with ``HTTPSTransportError/connectFailed(host:port:reason:)`` or
    /// ``HTTPSTransportError/timeout(_:)`` (`.connect`) for the TCP connection, with the security layer's
    /// `TLSError` (its handshake deadline included) for TLS, with
    /// ``HTTPSTransportError/http2NotNegotiated(alpn:)`` when HTTP/2 is required and the server did not choose
    /// it, and with ``HTTPSTransportError/connectionClosed`` if the connection closes while it is set up.
    ///
    /// An IP literal is connected to directly, without NIO's resolver (`ClientBootstrap.connect(literalOrHost:port:)`).
    ///
    /// A target routed through a proxy is reached through a `CONNECT` tunnel first (see
    /// ``tunnel(to:through:on:)``), whose failures are the proxy's own errors; TLS to the origin then runs inside
    /// the tunnel exactly as on a direct connection.
    ///
    /// The future's second value tells whether the connection's verified chain still satisfies the pins in force
    /// (``ConnectionPool/pinningChanged()`` asks it after the pins were replaced).
    ///
    /// - Parameters:
    ///   - loop: the connection's event loop (one of ``group``'s); called there, nothing hops to another thread.
    ///   - events: what an HTTP/2 connection reports to the pool (asked once it is set up).
    func connect(
        to target: RequestTarget, on loop: any EventLoop, events: @escaping @Sendable () -> HTTP2Connection.Events
    ) -> EventLoopFuture<(PooledConnection, stillTrusted: @Sendable () -> Bool)> {
        let opened: EventLoopFuture<any Channel>
        switch target.route {
        case .direct:
            let host = connectAddresses[target.host] ?? target.host
            opened = tcpConnect(host: host, port: target.port, on: loop).flatMapErrorThrowing { error -> any Channel in
                if case ChannelError.connectTimeout = error { throw HTTPSTransportError.timeout(.connect) }
                throw HTTPSTransportError.connectFailed(
                    host: target.host, port: target.port, reason: SocketFailureWording.reason(error))
            }
        case .tunnel(let proxy):
            opened = tunnel(to: target, through: proxy, on: loop)
        }
        let security = self.security
        let handshakeTimeout = self.handshakeTimeout
        let httpVersion = self.httpVersion
        let keepalive = self.http2Keepalive
        let logger = self.logger
        return opened.flatMap { channel in
            // The handshake deadline covers connection set-up to the first request: the TLS handshake, and for
            // HTTP/2 the server's first SETTINGS too.
            let setUpDeadline = channel.eventLoop.now + handshakeTimeout
            return security.addHandlers(
                to: channel, host: target.host, port: target.port, handshakeTimeout: handshakeTimeout
            ).hop(to: channel.eventLoop).flatMap { secured -> EventLoopFuture<(PooledConnection, stillTrusted: @Sendable () -> Bool)> in
                let alpn = secured.alpn
                if alpn == "h2" && httpVersion != .http1Only {
                    return HTTP2Connection.start(
                        on: channel, settingsDeadline: setUpDeadline, keepalive: keepalive, logger: logger, events: events)
                        .map { (.http2($0), secured.stillTrusted) }
                }
                if httpVersion == .http2Only {
                    return channel.eventLoop.makeFailedFuture(HTTPSTransportError.http2NotNegotiated(alpn: alpn))
                }
                return channel.eventLoop.makeCompletedFuture {
                    (try .http1(Self.http1(on: channel, logger: logger)), secured.stillTrusted)
                }
            }.flatMapErrorThrowing { error in
                channel.close(promise: nil)
                throw error
            }
        }
    }

    /// A TCP connection to `host` on `loop` (an IP literal directly, without the resolver).
    func tcpConnect(host: String, port: Int, on loop: any EventLoop) -> EventLoopFuture<any Channel> {
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                // First in the pipeline: counts what the socket gave, for the reuse check (`ConnectionQuiet`).
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ReceivedByteCounter()) }
            }
        return bootstrap.connect(literalOrHost: host, port: port)
    }

    /// Adds NIO's request encoder and the exchange handler (which frames responses itself) behind the security
    /// handlers.
    private static func http1(on channel: any Channel, logger: Logger) throws -> HTTPClientConnection {
        let handler = HTTP1ConnectionHandler(logger: logger)
        let sync = channel.pipeline.syncOperations
        do {
            try sync.addHandler(HTTPRequestEncoder())
            try sync.addHandler(handler)
        } catch {
            // After the handshake: not a TLS failure. The channel closed meanwhile.
            throw HTTPSTransportError.connectionClosed
        }
        return HTTPClientConnection(channel: channel, handler: handler)
    }
}

import NIOCore

/// The TLS seam: what secures a freshly connected channel before an HTTP client adds its codec.
///
/// An implementation is built once per ``TLSClientConfiguration`` (one OpenSSL context shared by every
/// connection) and asked, for each new TCP connection, to add its handlers at the end of the pipeline, which
/// is empty on a direct connection and holds a proxy's TLS handler on a tunnel through an `https://` proxy.
/// The returned future succeeds only once the connection is verified (chain, hostname and pins passed), with
/// the ALPN protocol the server chose (if any), and fails with a ``TLSError`` otherwise: ``TLSError/handshakeTimeout`` when that takes longer than
/// `handshakeTimeout` (the deadline lives with what it races), ``TLSError/connectionClosed`` when the channel
/// closes first. On failure the implementation closes the channel.
package protocol ConnectionSecurity: Sendable {
    /// Adds the security handlers to `channel` (connected, on its event loop's terms) for `host`:`port`.
    ///
    /// - Returns: a future that succeeds when the connection is verified and ready for application data, with
    ///   the negotiated ALPN protocol and the connection's trust re-check.
    func addHandlers(to channel: any Channel, host: String, port: Int, handshakeTimeout: TimeAmount)
        -> EventLoopFuture<SecuredConnection>
}

/// What securing a connection established: the ALPN protocol, and whether the connection may still be used once
/// the pins were replaced.
package struct SecuredConnection: Sendable {
    /// The ALPN protocol the server chose, if any.
    package var alpn: String?
    /// Whether the connection's verified chain still satisfies the pinning policy in force (true until the
    /// policy is replaced; then the new policy decides). A pool asks before handing a connection out again.
    package var stillTrusted: @Sendable () -> Bool

    package init(alpn: String?, stillTrusted: @escaping @Sendable () -> Bool = { true }) {
        self.alpn = alpn
        self.stillTrusted = stillTrusted
    }
}

/// No security at all: for the HTTP client's tests against a plain-HTTP loopback server only.
///
/// - Warning: Package access only; never reachable from the public API, whose initializers always use TLS.
package struct PlaintextTestingSecurity: ConnectionSecurity {
    /// The plaintext test security.
    package init() {}

    /// Adds nothing and succeeds at once, with no ALPN protocol (so HTTP/1.1).
    package func addHandlers(to channel: any Channel, host: String, port: Int, handshakeTimeout: TimeAmount)
        -> EventLoopFuture<SecuredConnection>
    {
        channel.eventLoop.makeSucceededFuture(SecuredConnection(alpn: nil))
    }
}

extension TLSClientContext {
    /// The connection security of this context: ShopKit's `TLSHandler` in front of each pipeline, and a gate
    /// that succeeds on ``TLSHandshakeCompleted`` (fired only after chain, hostname and pins passed).
    package func makeSecurity() -> any ConnectionSecurity {
        HandlerSecurity(
            makeHandler: { host, port in self.makeClientHandler(host: host, port: port) },
            isVerified: { $0 is TLSHandshakeCompleted },
            negotiatedProtocol: { ($0 as? TLSHandshakeCompleted)?.info.alpnProtocol },
            trustCheck: { event in
                guard let completed = event as? TLSHandshakeCompleted else { return { true } }
                let (host, chain, generation) = (completed.info.host, completed.info.verifiedChain, completed.pinningGeneration)
                return { self.stillTrusts(host: host, chain: chain, verifiedUnder: generation) }
            })
    }
}

/// A ``ConnectionSecurity`` made of a client `ChannelHandler` that announces verification with a user
/// inbound event: the shape of ShopKit's OpenSSL handler, so wiring it in is one small function.
///
/// For each connection it adds `makeHandler(host, port)` at the end of the pipeline, then a
/// ``VerificationGate`` behind it. The gate succeeds when an event for which `isVerified` returns true
/// arrives (fired only after chain, hostname and pin checks passed), and fails with the `TLSError` passed
/// to `errorCaught` (or `handshakeFailed` for any other error, `connectionClosed` for a close, or
/// `handshakeTimeout` when its timer fires first), then removes itself so that later events reach the HTTP
/// handler.
package struct HandlerSecurity: ConnectionSecurity {
    /// Makes the client TLS handler for one connection to `host`:`port` (called on the channel's event loop).
    let makeHandler: @Sendable (_ host: String, _ port: Int) throws -> any ChannelHandler
    /// Whether a user inbound event is the handler's "verified" event.
    let isVerified: @Sendable (Any) -> Bool
    /// The ALPN protocol a "verified" event carries.
    let negotiatedProtocol: @Sendable (Any) -> String?
    /// The trust re-check of the connection a "verified" event announces.
    let trustCheck: @Sendable (Any) -> @Sendable () -> Bool

    /// A security from a handler factory and its "verified" event.
    package init(
        makeHandler: @escaping @Sendable (_ host: String, _ port: Int) throws -> any ChannelHandler,
        isVerified: @escaping @Sendable (Any) -> Bool,
        negotiatedProtocol: @escaping @Sendable (Any) -> String? = { _ in nil },
        trustCheck: @escaping @Sendable (Any) -> @Sendable () -> Bool = { _ in { true } }
    ) {
        self.makeHandler = makeHandler
        self.isVerified = isVerified
        self.negotiatedProtocol = negotiatedProtocol
        self.trustCheck = trustCheck
    }

    package func addHandlers(to channel: any Channel, host: String, port: Int, handshakeTimeout: TimeAmount)
        -> EventLoopFuture<SecuredConnection>
    {
        let loop = channel.eventLoop
        let makeHandler = self.makeHandler
        let isVerified = self.isVerified
        let negotiatedProtocol = self.negotiatedProtocol
        let trustCheck = self.trustCheck
        return loop.flatSubmit {
            let verified = loop.makePromise(of: SecuredConnection.self)
            do {
                let pipeline = channel.pipeline.syncOperations
                // At the end: behind an https proxy's TLS handler when the channel is a CONNECT tunnel (TLS in
                // TLS); a direct connection's pipeline is empty here. The gate goes first, so it is in place
                // before the TLS handler starts the handshake.
                let gate = VerificationGate(
                    promise: verified, isVerified: isVerified,
                    secured: { SecuredConnection(alpn: negotiatedProtocol($0), stillTrusted: trustCheck($0)) },
                    timeout: handshakeTimeout)
                try pipeline.addHandler(gate)
                try pipeline.addHandler(makeHandler(host, port), position: .before(gate))
            } catch {
                verified.fail(error as? TLSError ?? TLSError.handshakeFailed(reason: "\(error)"))
                channel.close(promise: nil)
            }
            return verified.futureResult
        }
    }
}

/// Waits behind a TLS handler for its "verified" event, and turns its errors, an early close or its own
/// handshake deadline into the security future's failure.
final class VerificationGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var promise: EventLoopPromise<SecuredConnection>?
    private let isVerified: @Sendable (Any) -> Bool
    private let secured: @Sendable (Any) -> SecuredConnection
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(
        promise: EventLoopPromise<SecuredConnection>, isVerified: @escaping @Sendable (Any) -> Bool,
        secured: @escaping @Sendable (Any) -> SecuredConnection, timeout: TimeAmount
    ) {
        self.promise = promise
        self.isVerified = isVerified
        self.secured = secured
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (gate, context) = bound.value
            gate.timer = nil
            gate.complete(.handshakeTimeout)
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if isVerified(event), let promise {
            self.promise = nil
            cancelTimer()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            promise.succeed(secured(event))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(error as? TLSError ?? TLSError.handshakeFailed(reason: "\(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(TLSError.connectionClosed)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        complete(TLSError.connectionClosed)
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }

    private func complete(_ error: TLSError) {
        cancelTimer()
        guard let promise else { return }
        self.promise = nil
        promise.fail(error)
    }
}

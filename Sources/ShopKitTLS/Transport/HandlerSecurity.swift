import NIOCore

/// A ``ConnectionSecurity`` made of a client `ChannelHandler` that announces verification with a user
/// inbound event: the shape of ShopKit's OpenSSL handler, so wiring it in is one small function.
///
/// For each connection it adds `makeHandler(host, port)` at the front of the pipeline, then a
/// ``VerificationGate`` behind it. The gate succeeds when an event for which `isVerified` returns true
/// arrives (fired only after chain, hostname and pin checks passed), and fails with the `TLSError` passed
/// to `errorCaught` (or `handshakeFailed` for any other error, `connectionClosed` for a close), then removes
/// itself so that later events reach the HTTP handler.
struct HandlerSecurity: ConnectionSecurity {
    /// Makes the client TLS handler for one connection to `host`:`port` (called on the channel's event loop).
    let makeHandler: @Sendable (_ host: String, _ port: Int) throws -> any ChannelHandler
    /// Whether a user inbound event is the handler's "verified" event.
    let isVerified: @Sendable (Any) -> Bool

    func addHandlers(to channel: any Channel, host: String, port: Int) -> EventLoopFuture<Void> {
        let loop = channel.eventLoop
        let makeHandler = self.makeHandler
        let isVerified = self.isVerified
        return loop.flatSubmit {
            let verified = loop.makePromise(of: Void.self)
            do {
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(VerificationGate(promise: verified, isVerified: isVerified), position: .first)
                try pipeline.addHandler(makeHandler(host, port), position: .first)
            } catch {
                verified.fail(error as? TLSError ?? TLSError.handshakeFailed(reason: "\(error)"))
                channel.close(promise: nil)
            }
            return verified.futureResult
        }
    }
}

/// Waits behind a TLS handler for its "verified" event, and turns its errors into the security future's failure.
final class VerificationGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var promise: EventLoopPromise<Void>?
    private let isVerified: @Sendable (Any) -> Bool

    init(promise: EventLoopPromise<Void>, isVerified: @escaping @Sendable (Any) -> Bool) {
        self.promise = promise
        self.isVerified = isVerified
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if isVerified(event), let promise {
            self.promise = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            promise.succeed()
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

    private func complete(_ error: TLSError) {
        guard let promise else { return }
        self.promise = nil
        promise.fail(error)
    }
}

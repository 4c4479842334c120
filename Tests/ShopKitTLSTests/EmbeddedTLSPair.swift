import NIOCore
import NIOEmbedded
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS

/// Records what comes out of the end of a TLS pipeline: decrypted plaintext, TLS events, errors, the close.
/// Optionally answers the server's handshake event with a write, as an eager server would.
final class PipelineRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    var plaintext: [UInt8] = []
    var completed: TLSConnectionInfo?
    var serverCompleted: TLSServerHandshakeCompleted?
    var failureDetails: TLSHandshakeFailureDetails?
    var uncleanShutdown = false
    var errors: [any Error] = []
    var inactive = false
    /// Written as soon as the server's handshake completed, if set.
    var replyOnServerHandshake: String?

    var text: String { String(decoding: plaintext, as: UTF8.self) }
    var tlsErrors: [TLSError] { errors.compactMap { $0 as? TLSError } }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        plaintext += unwrapInboundIn(data).readableBytesView
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let event as TLSHandshakeCompleted: completed = event.info
        case let event as TLSServerHandshakeCompleted:
            serverCompleted = event
            if let reply = replyOnServerHandshake {
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: reply)), promise: nil)
            }
        case let event as TLSHandshakeFailureDetails: failureDetails = event
        case is TLSUncleanShutdown: uncleanShutdown = true
        default: break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }

    func channelInactive(context: ChannelHandlerContext) { inactive = true }
}

/// A client and a server `TLSHandler`, each in an `EmbeddedChannel`, wired back to back: the test moves the
/// ciphertext between them by hand, so nothing touches a socket and every step can be looked at.
///
/// Embedded channels are single-threaded: use a pair from one synchronous test function only, and `finish()` it.
final class EmbeddedTLSPair {
    let client = EmbeddedChannel()
    let server = EmbeddedChannel()
    let clientRecorder = PipelineRecorder()
    let serverRecorder = PipelineRecorder()

    init(client context: TLSClientContext, server serverContext: TLSServerContext, host: String = "localhost") throws {
        try client.pipeline.syncOperations.addHandler(context.makeHandler(host: host, port: 443))
        try client.pipeline.syncOperations.addHandler(clientRecorder)
        try server.pipeline.syncOperations.addHandler(serverContext.makeHandler())
        try server.pipeline.syncOperations.addHandler(serverRecorder)
    }

    /// Activates both channels: the client handler starts its handshake (its ClientHello waits in the outbound
    /// buffer), the server handler waits for it.
    func connect() throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        server.connect(to: address, promise: nil)
        client.connect(to: address, promise: nil)
    }

    /// Closes whichever channel is still open and runs what is left, so the pipelines (and the OpenSSL objects in
    /// their handlers) are torn down. Call it at the end of every test (`defer`).
    func finish() {
        _ = try? client.finish(acceptAlreadyClosed: true)
        _ = try? server.finish(acceptAlreadyClosed: true)
    }

    /// Moves ciphertext both ways until neither side has any left to send (to a side still open).
    func shuttle() throws {
        for _ in 0..<20 {
            let movedToServer = try deliver(from: client, to: server)
            let movedToClient = try deliver(from: server, to: client)
            if !movedToServer && !movedToClient { return }
        }
    }

    /// Moves what `from` has written to `to`, if `to` is still open; returns whether there was anything.
    @discardableResult
    func deliver(from: EmbeddedChannel, to: EmbeddedChannel) throws -> Bool {
        let buffers = try Self.written(by: from)
        if to.isActive { for buffer in buffers { try to.writeInbound(buffer) } }
        return !buffers.isEmpty
    }

    /// Takes the ciphertext `channel` has written so far.
    static func written(by channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(buffer) }
        return buffers
    }

    /// Writes `text` as plaintext into `channel`'s pipeline (it reaches the TLS handler), returning the result box.
    func write(_ text: String, on channel: EmbeddedChannel) -> NIOLoopBoundBox<Result<Void, any Error>?> {
        let result = NIOLoopBoundBox<Result<Void, any Error>?>(nil, eventLoop: channel.eventLoop)
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { result.value = $0 }
        channel.writeAndFlush(channel.allocator.buffer(string: text), promise: promise)
        return result
    }
}

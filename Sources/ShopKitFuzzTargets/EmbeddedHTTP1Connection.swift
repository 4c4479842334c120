import NIOCore
import NIOEmbedded
import NIOHTTP1
import ShopKitHTTPS
import ShopKitTLS

/// The pipeline a real HTTP/1.1 connection has after its handshake (NIO's request encoder, ``HTTP1ConnectionHandler``
/// with its own response framing) on a connected `EmbeddedChannel`, fed server bytes as the fuzzer cuts them: the
/// HTTP fuzz targets' one harness.
struct EmbeddedHTTP1Connection {
    let channel: EmbeddedChannel
    let handler: HTTP1ConnectionHandler
    var loop: EmbeddedEventLoop { channel.embeddedEventLoop }

    /// A connected channel; `first`, when given, goes in front of everything (it sees the raw reads).
    init(first: (any ChannelHandler)? = nil) {
        channel = EmbeddedChannel()
        let handler = HTTP1ConnectionHandler()
        self.handler = handler
        do {
            let sync = channel.pipeline.syncOperations
            if let first { try sync.addHandler(first) }
            try sync.addHandler(HTTPRequestEncoder())
            try sync.addHandler(handler)
            channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
        } catch {
            fatalError("cannot set up the embedded channel: \(error)")
        }
    }

    /// Delivers `bytes` in reads of `readSize` bytes (0: all in one), each with its read-complete, running the loop
    /// after each.
    func feed(_ bytes: ArraySlice<UInt8>, readSize: Int) {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let end = readSize == 0 ? bytes.endIndex : min(offset + readSize, bytes.endIndex)
            _ = try? channel.writeInbound(channel.allocator.buffer(bytes: bytes[offset..<end]))
            offset = end
            loop.run()
        }
    }

    /// The server goes away; `unclean`: without close_notify (the TLS layer's `TLSUncleanShutdown` first, as on a
    /// forged TCP close).
    func finish(unclean: Bool) {
        if unclean { channel.pipeline.fireUserInboundEventTriggered(TLSUncleanShutdown()) }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        loop.run()
    }
}

import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ShopKitTLS

/// An in-process `https://` proxy on 127.0.0.1: ShopKit's server-role TLS handler, then a minimal `CONNECT`
/// handler that opens a TCP connection to the requested target and splices the two. tinyproxy cannot speak TLS
/// to its clients; this stands in for a TLS-protected corporate proxy in the TLS-in-TLS tests.
package final class LoopbackTLSProxy: Sendable {
    /// The port the proxy listens on.
    package let port: Int
    private let channel: any Channel
    private let seen: NIOLockedValueBox<[String]>

    /// The `CONNECT` request heads received so far (request line and fields, as sent).
    package var requests: [String] { seen.withLockedValue { $0 } }

    private init(port: Int, channel: any Channel, seen: NIOLockedValueBox<[String]>) {
        self.port = port
        self.channel = channel
        self.seen = seen
    }

    /// Starts a proxy presenting the `TestCerts` `chain` with `key`.
    package static func start(chain: [String], key: String) async throws -> LoopbackTLSProxy {
        let tls = try TLSServerContext(
            certificateChainPEM: TestCertificates.chain(chain), privateKeyPEM: TestCertificates.privateKey(key))
        let seen = NIOLockedValueBox<[String]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(tls.makeHandler())
                    try child.pipeline.syncOperations.addHandler(ConnectHandler(seen: seen))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw TLSContextError(message: "proxy has no port") }
        return LoopbackTLSProxy(port: port, channel: channel, seen: seen)
    }

    /// Stops listening.
    package func shutdown() async throws {
        try await channel.close()
    }
}

/// Reads one `CONNECT` head, connects to its target, answers 200 and then forwards bytes both ways.
private final class ConnectHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let seen: NIOLockedValueBox<[String]>
    private var head: [UInt8] = []
    private var peer: (any Channel)?
    private var done = false

    init(seen: NIOLockedValueBox<[String]>) { self.seen = seen }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if let peer {
            peer.writeAndFlush(buffer, promise: nil)
            return
        }
        guard !done else { return }
        head += buffer.readableBytesView
        guard let text = String(bytes: head, encoding: .utf8), text.contains("\r\n\r\n") else { return }
        done = true
        seen.withLockedValue { $0.append(text) }
        let words = text.split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0] == "CONNECT", let colon = words[1].lastIndex(of: ":"),
            let port = Int(words[1][words[1].index(after: colon)...])
        else {
            return reply(context: context, "HTTP/1.1 400 Bad Request\r\n\r\n", close: true)
        }
        let host = String(words[1][..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let client = context.channel
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(.seconds(60))  // a loaded machine can hold a loopback connect past NIO's 10 s
            .channelInitializer { outbound in
                outbound.eventLoop.makeCompletedFuture {
                    try outbound.pipeline.syncOperations.addHandler(Splice(to: client))
                }
            }
            .connect(host: host, port: port)
            .hop(to: context.eventLoop)
            .whenComplete { result in
                let (handler, context) = bound.value
                switch result {
                case .success(let outbound):
                    handler.peer = outbound
                    outbound.closeFuture.whenComplete { _ in client.close(promise: nil) }
                    handler.reply(context: context, "HTTP/1.1 200 Connection established\r\n\r\n", close: false)
                case .failure:
                    handler.reply(context: context, "HTTP/1.1 502 Bad Gateway\r\n\r\n", close: true)
                }
            }
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer?.close(promise: nil)
        context.fireChannelInactive()
    }

    private func reply(context: ChannelHandlerContext, _ text: String, close: Bool) {
        let written = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)))
        let channel = context.channel
        if close { written.whenComplete { _ in channel.close(promise: nil) } }
    }
}

/// Writes what one channel reads to another.
private final class Splice: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let target: any Channel

    init(to target: any Channel) { self.target = target }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        target.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }
}

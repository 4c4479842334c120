import NIOCore
import NIOPosix
import Testing
@testable import ShopKitHTTPS

/// The check made before a kept-alive HTTP/1.1 connection carries another request: a byte from the server that
/// waits unread in the socket, or the server's FIN, makes the connection not quiet. Real TCP on 127.0.0.1; the
/// client reads nothing by itself (`autoRead` off), so what the server sent stays in the kernel's queue.
@Suite(.timeLimit(.minutes(3))) struct ConnectionQuietTests {
    /// A server that hands out its accepted channel, and a client connected to it with the byte counter first.
    struct Pair {
        let group: MultiThreadedEventLoopGroup
        let server: any Channel
        let accepted: any Channel
        let client: any Channel
        /// Completed for each chunk the client reads once it asks to.
        let read: EventLoopPromise<Void>

        static func connect() async throws -> Pair {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let acceptedPromise = group.next().makePromise(of: (any Channel).self)
            let server = try await ServerBootstrap(group: group)
                .childChannelInitializer { child in
                    acceptedPromise.succeed(child)
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: "127.0.0.1", port: 0).get()
            let read = group.next().makePromise(of: Void.self)
            let client = try await ClientBootstrap(group: group)
                .channelOption(.autoRead, value: false)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ReceivedByteCounter())
                        try channel.pipeline.syncOperations.addHandler(ReadSignal(read: read))
                    }
                }
                .connect(to: server.localAddress!).get()
            let accepted = try await acceptedPromise.futureResult.get()
            return Pair(group: group, server: server, accepted: accepted, client: client, read: read)
        }

        var quiet: Bool {
            get async throws { try await client.eventLoop.submit { ConnectionQuiet.check(client) }.get() }
        }

        func close() async throws {
            read.succeed()  // for the tests that read nothing (a no-op once the client read)
            try? await client.close()
            try? await server.close()
            try await group.shutdownGracefully()
        }
    }

    final class ReadSignal: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let read: EventLoopPromise<Void>
        init(read: EventLoopPromise<Void>) { self.read = read }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { read.succeed() }
    }

    @Test func aConnectionNobodySpokeOnIsQuiet() async throws {
        let pair = try await Pair.connect()
        #expect(try await pair.quiet)
        try await pair.close()
    }

    /// Loopback TCP queues the bytes at the receiver before the sender's write completes.
    @Test func anUnreadByteMakesItNotQuietUntilItIsRead() async throws {
        let pair = try await Pair.connect()
        try await pair.accepted.writeAndFlush(ByteBuffer(string: "HTTP/1.1 200 OK\r\n")).get()
        #expect(try await !pair.quiet)
        pair.client.read()
        try await pair.read.futureResult.get()
        #expect(try await pair.quiet, "every byte the kernel received was read")
        try await pair.close()
    }

    @Test func theServersCloseMakesItNotQuiet() async throws {
        let pair = try await Pair.connect()
        try await pair.accepted.close(mode: .output).get()
        #expect(try await !pair.quiet)
        try await pair.close()
    }

    @Test func aClosedChannelIsNotQuiet() async throws {
        let pair = try await Pair.connect()
        try await pair.client.close()
        #expect(try await !pair.quiet)
        try await pair.close()
    }
}

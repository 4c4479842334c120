import NIOCore
import NIOPosix
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// Close paths: an unclean EOF after the handshake, and a peer that hangs up during the handshake.
@Suite(.timeLimit(.minutes(3))) struct ShutdownTests {
    /// Records what the client handler reports, completing when the channel goes inactive.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        struct Outcome: Sendable {
            var handshakeCompleted = false
            var uncleanShutdown = false
            var errors: [TLSError] = []
        }
        private var outcome = Outcome()
        private let promise: EventLoopPromise<Outcome>
        init(promise: EventLoopPromise<Outcome>) { self.promise = promise }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is TLSHandshakeCompleted { outcome.handshakeCompleted = true }
            if event is TLSUncleanShutdown { outcome.uncleanShutdown = true }
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if let error = error as? TLSError { outcome.errors.append(error) }
        }
        func channelInactive(context: ChannelHandlerContext) { promise.succeed(outcome) }
    }

    /// After its handshake, the server closes the TCP connection *below* its TLS handler: no close_notify.
    final class HangUpAfterHandshake: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard event is TLSServerHandshakeCompleted else { return }
            let tls = try? context.pipeline.syncOperations.context(handlerType: TLSHandler.self)
            tls?.close(promise: nil)  // goes to the socket, bypassing the TLS handler's close_notify
        }
    }

    private func run(server: ServerBootstrap) async throws -> Recorder.Outcome {
        let serverChannel = try await server.bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(serverChannel.localAddress?.port)
        let context = try TLSClientContext(configuration: Probe.configuration())
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Recorder.Outcome.self)
        do {
            _ = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.seconds(60))  // wide: not this test's subject
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(context.makeHandler(host: "localhost", port: port))
                        try channel.pipeline.syncOperations.addHandler(Recorder(promise: promise))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            promise.fail(error)  // never leaked
            throw error
        }
        let outcome = try await promise.futureResult.get()
        try await serverChannel.close()
        return outcome
    }

    @Test func eofWithoutCloseNotifyIsReportedAsUncleanShutdown() async throws {
        let tls = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let outcome = try await run(
            server: ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(tls.makeHandler())
                    try channel.pipeline.syncOperations.addHandler(HangUpAfterHandshake())
                }
            })
        #expect(outcome.handshakeCompleted)
        #expect(outcome.uncleanShutdown)
        #expect(outcome.errors.isEmpty)
    }

    @Test func hangUpDuringHandshakeIsAHandshakeFailure() async throws {
        let outcome = try await run(
            server: ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).childChannelInitializer { channel in
                channel.close()
            })
        #expect(!outcome.handshakeCompleted)
        #expect(outcome.errors.count == 1)
        if outcome.errors.first?.code != .handshakeFailed { Issue.record("expected handshakeFailed, got \(outcome.errors)") }
    }
}

import Foundation
import NIOCore
import NIOEmbedded
import Testing
import TestSupport
@testable import ShopKitTLS

/// A stand-in for the TLS client handler: it announces verification, or fails with a typed error, as soon
/// as it is added to an active channel. It encrypts nothing.
final class FakeVerifyingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    struct Verified: Sendable {}
    let failure: TLSError?

    init(failure: TLSError?) { self.failure = failure }

    func handlerAdded(context: ChannelHandlerContext) {
        let failure = self.failure
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let context = bound.value
            if let failure {
                context.fireErrorCaught(failure)
                context.close(promise: nil)
            } else {
                context.fireUserInboundEventTriggered(Verified())
            }
        }
    }
}

@Suite struct HandlerSecurityTests {
    func security(failing failure: TLSError? = nil) -> HandlerSecurity {
        HandlerSecurity(
            makeHandler: { _, _ in FakeVerifyingHandler(failure: failure) },
            isVerified: { $0 is FakeVerifyingHandler.Verified })
    }

    @Test func gateOpensOnTheVerifiedEventAndLeavesThePipeline() async throws {
        let channel = EmbeddedChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        let verified = security().addHandlers(to: channel, host: "h.test", port: 1)
        channel.embeddedEventLoop.run()
        try await verified.get()
        #expect(throws: ChannelPipelineError.self) { try channel.pipeline.syncOperations.handler(type: VerificationGate.self) }
        _ = try? channel.finish()
    }

    @Test func gateFailsWithTheHandlersTypedError() async throws {
        let channel = EmbeddedChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        let verified = security(failing: .hostnameMismatch(host: "h.test")).addHandlers(to: channel, host: "h.test", port: 1)
        channel.embeddedEventLoop.run()
        await #expect(throws: TLSError.hostnameMismatch(host: "h.test")) { try await verified.get() }
        #expect(!channel.isActive)
    }

    @Test func gateFailsWhenTheConnectionClosesFirst() async throws {
        let channel = EmbeddedChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        let verified = HandlerSecurity(makeHandler: { _, _ in FakeVerifyingHandler(failure: nil) }, isVerified: { _ in false })
            .addHandlers(to: channel, host: "h.test", port: 1)
        channel.embeddedEventLoop.run()
        try await channel.close().get()
        await #expect(throws: TLSError.connectionClosed) { try await verified.get() }
    }

    @Test func transportRunsThroughTheSeamAndCarriesItsErrors() async throws {
        let server = try await LoopbackHTTPServer.start { _ in .ok() }
        let verifying = makeTransport(security: security())
        #expect(try await verifying.fetch(baseURL: server.baseURL).0.status == .ok)
        let refusing = makeTransport(security: security(failing: .untrustedChain(reason: "unable to get local issuer certificate", verifyCode: 20)))
        await #expect(throws: TLSError.untrustedChain(reason: "unable to get local issuer certificate", verifyCode: 20)) {
            _ = try await refusing.fetch(baseURL: server.baseURL)
        }
        #expect(server.counts.requests == 1)
        await verifying.shutdown()
        await refusing.shutdown()
        await server.stop()
    }
}

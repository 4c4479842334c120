import Foundation
import NIOCore
import Testing
import TestSupport
@testable import ShopKitHTTPS
import ShopKitTLS

/// A stand-in for the TLS client handler: it announces verification, or fails with a typed error, as soon
/// as it is added to an active channel. It encrypts nothing.
final class FakeVerifyingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    struct Verified: Sendable {}
    let failure: TLSError?
    let closeSilently: Bool

    init(failure: TLSError?, closeSilently: Bool = false) {
        self.failure = failure
        self.closeSilently = closeSilently
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let failure = self.failure
        let closeSilently = self.closeSilently
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let context = bound.value
            if closeSilently {
                context.close(promise: nil)
            } else if let failure {
                context.fireErrorCaught(failure)
                context.close(promise: nil)
            } else {
                context.fireUserInboundEventTriggered(Verified())
            }
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct HandlerSecurityTests {
    func security(failing failure: TLSError? = nil) -> HandlerSecurity {
        HandlerSecurity(
            makeHandler: { _, _ in FakeVerifyingHandler(failure: failure) },
            isVerified: { $0 is FakeVerifyingHandler.Verified })
    }

    @Test func gateFailsWhenTheConnectionClosesBeforeVerification() async throws {
        let server = try await LoopbackHTTPServer.start { _ in .ok() }
        let closing = HandlerSecurity(
            makeHandler: { _, _ in FakeVerifyingHandler(failure: nil, closeSilently: true) },
            isVerified: { $0 is FakeVerifyingHandler.Verified })
        let transport = makeTransport(security: closing)
        await #expect(throws: TLSError.connectionClosed) { _ = try await transport.fetch(baseURL: server.baseURL) }
        #expect(server.counts.requests == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test func verificationThatNeverArrivesTimesOut() async throws {
        let server = try await LoopbackHTTPServer.start { _ in .ok() }
        let silent = HandlerSecurity(
            makeHandler: { _, _ in FakeVerifyingHandler(failure: nil) }, isVerified: { _ in false })
        let transport = makeTransport(timeouts: .wide(handshake: .milliseconds(50)), security: silent)
        await #expect(throws: TLSError.handshakeTimeout) { _ = try await transport.fetch(baseURL: server.baseURL) }
        #expect(server.counts.requests == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test func verifiedConnectionsAreKeptAlive() async throws {
        let server = try await LoopbackHTTPServer.start { _ in .ok() }
        let transport = makeTransport(security: security())
        for _ in 0..<3 { #expect(try await transport.fetch(baseURL: server.baseURL).0.status == .ok) }
        #expect(server.counts.accepted == 1)
        await transport.shutdown()
        await server.stop()
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

import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import OpenAPIRuntime
import ShopKitAPI
import ShopKitCore
import ShopKitHTTPS
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// This target links the HTTPS, TLS and API products and not the `ShopKit` umbrella: what an app that composes
/// the decorators itself gets. Every error type declares its retry classification in its own module, so the
/// verdict cannot depend on which products are linked.
@Suite(.timeLimit(.minutes(3))) struct RetryClassificationTests {
    /// The retry decorator over the pinned transport, pinned to keys the loopback server does not have.
    @Test func aPinMismatchIsTriedOnceWithoutTheUmbrella() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let wrongPins = ["backup-intermediate", "leaf-localhost-rsa"].map(TestCertificates.pin)
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: wrongPins)]),
            sessionResumption: false)
        let transport = try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide()))
        let attempts = AttemptCounter(upstream: transport)
        let sleeper = RecordingSleeper()
        let retrying = MiddlewareChain(attempts, [RetryMiddleware(policy: RetryPolicy(maxAttempts: 3), sleeper: sleeper)])
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
        await #expect {
            _ = try await retrying.send(
                request, body: nil, baseURL: URL(string: "https://127.0.0.1:\(server.port)")!, operationID: "get")
        } throws: { error in
            guard (error as? TLSError)?.code == .pinMismatch else { return false }
            return true
        }
        // Counted where the retry decorator sends, not at the server (which may record the handshake only after
        // the client has already given up on it).
        #expect(attempts.count == 1)
        #expect(await sleeper.durations.isEmpty)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func everyErrorTypeDeclaresItsClassification() throws {
        let report = PinFailureReport(
            host: "a.test", chain: VerifiedChain(verifiedCertificates: []), configuredPins: [], date: Date())
        let never: [any Error] = [
            TLSError.pinMismatch(report), TLSError.untrustedChain(reason: "x", verifyCode: 20),
            TLSError.hostnameMismatch(host: "a.test"), TLSContextError(message: "bad anchors"),
            HTTPSTransportError.invalidURL(reason: "http"), HTTPSTransportError.responseBodyTooLarge(limit: 1),
            HTTPSTransportError.malformedResponse(.headTooLarge),
            HTTPSTransportError.invalidProxy(reason: "x"), HTTPSTransportError.proxyAuthenticationRequired,
            HTTPSTransportError.proxyRefused(status: 403),
            HTTPSTransportError.proxyTLSFailed(.untrustedChain(reason: "x", verifyCode: 20)),
        ]
        let maybe: [any Error] = [
            TLSError.handshakeFailed(reason: "x"), TLSError.handshakeTimeout, TLSError.connectionClosed,
            HTTPSTransportError.connectFailed(host: "a", port: 1, reason: "refused"),
            HTTPSTransportError.timeout(.request), HTTPSTransportError.connectionClosed,
            HTTPSTransportError.proxyRefused(status: 502), HTTPSTransportError.proxyClosed,
            HTTPSTransportError.proxyConnectFailed(host: "proxy", port: 3128, reason: "refused"),
        ]
        for error in never { #expect((error as? any RetryClassifiableError)?.isRetryable == false, "\(error)") }
        for error in maybe { #expect((error as? any RetryClassifiableError)?.isRetryable == true, "\(error)") }
    }
}

/// Counts the requests the decorator above sends down.
final class AttemptCounter: ClientTransport, Sendable {
    let upstream: any ClientTransport
    private let counter = NIOLockedValueBox(0)

    init(upstream: any ClientTransport) { self.upstream = upstream }

    var count: Int { counter.withLockedValue { $0 } }

    func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        counter.withLockedValue { $0 += 1 }
        return try await upstream.send(request, body: body, baseURL: baseURL, operationID: operationID)
    }
}

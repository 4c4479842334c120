import Foundation
import Logging
import NIOConcurrencyHelpers
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Strict hosts over real sockets: a host no pin set covers is refused on the verified connection, before any
/// HTTP byte; by default it connects and a notice is logged once per host.
@Suite(.timeLimit(.minutes(3))) struct StrictHostsHandshakeTests {
    /// A pin set for a name the connection does not use (the typo a strict policy catches).
    private func configuration(_ unpinned: PinningPolicy.UnpinnedHosts, capture: LogCapture? = nil) throws -> TLSClientConfiguration {
        let set = try PinSet(
            hostPattern: HostPattern("localhots"), pins: [TestCertificates.pin("leaf-localhost-ecdsa"), TestCertificates.pin("backup-intermediate")])
        var configuration = try Probe.configuration()
        configuration.pinning = PinningPolicy(pinSets: [set], unpinnedHosts: unpinned)
        configuration.sessionResumption = false
        if let capture { configuration.logger = capture.logger() }
        return configuration
    }

    @Test func strictPolicyRefusesAnUnpinnedHostBeforeAnyHTTPByte() async throws {
        let requests = NIOLockedValueBox(0)
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa") { _, _ in
            requests.withLockedValue { $0 += 1 }
            return .init(body: Array("hello".utf8))
        }
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(configuration: configuration(.refuse))
        do {
            let result = try await Probe.get(context: context, port: server.port)
            Issue.record("connected unpinned: \(result.info.pinVerdict)")
        } catch let error as TLSError {
            #expect(error == .hostNotPinned(host: "localhost", patterns: ["localhots"]))
            #expect(error.description.contains("localhots"))
            #expect(!error.isRetryable)
        }
        await server.connectionsClosed()
        // Refused inside verification, after OpenSSL accepted the chain (issue 25, defect 2): the server's
        // handshake never completes.
        #expect(server.fullHandshakes == 0)
        #expect(requests.withLockedValue { $0 } == 0)
    }

    @Test func defaultPolicyConnectsAndLogsANoticeOncePerHost() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let capture = LogCapture()
        let context = try TLSClientContext(configuration: configuration(.allow, capture: capture))
        for _ in 0..<3 { #expect(try await Probe.get(context: context, port: server.port).body == "hello") }
        _ = try await Probe.get(context: context, port: server.port, host: "127.0.0.1")
        let notices = capture.records.filter { $0.level == .notice && $0.message.contains("not pinned") }
        #expect(notices.count == 2)  // localhost once, 127.0.0.1 once
        #expect(server.fullHandshakes == 4)
    }
}

/// Issue 25, defect 5: under a strict policy a host whose only pin set has expired counts as unpinned: refused
/// inside verification, with a reason that names the expired set.
@Suite(.timeLimit(.minutes(3))) struct StrictExpiredPinSetHandshakeTests {
    @Test func aHostWhoseOnlyPinSetExpiredIsRefusedUnderStrictMode() throws {
        let expiration = Date().addingTimeInterval(-3_600)
        var configuration = try Probe.configuration()
        configuration.pinning = PinningPolicy(
            pinSets: [
                try PinSet(
                    hostPattern: HostPattern("localhost"),
                    pins: [TestCertificates.pin("leaf-localhost-ecdsa"), TestCertificates.pin("backup-intermediate")],
                    expiration: expiration)
            ],
            unpinnedHosts: .refuse)
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let pair = try EmbeddedTLSPair(client: TLSClientContext(configuration: configuration), server: server)
        defer { pair.finish() }
        try pair.connect()
        try pair.shuttle()
        #expect(pair.clientRecorder.completed == nil, "an expired set must not count as pinned under strict mode")
        let error = try #require(pair.clientRecorder.tlsErrors.first)
        #expect(error.description.contains("the pin set localhost expired at \(expiration.ISO8601Format())"))
        #expect(error == .pinSetExpired(host: "localhost", pattern: "localhost", expiration: expiration))
        #expect(!error.isRetryable)
    }
}

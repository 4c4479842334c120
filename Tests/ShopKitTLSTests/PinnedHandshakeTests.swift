import Foundation
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// The client handler over real sockets on 127.0.0.1 against the in-process OpenSSL server.
@Suite(.timeLimit(.minutes(3))) struct PinnedHandshakeTests {
    static let standard = ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"]

    private func probe(
        serverChain: [String] = standard, key: String = "leaf-localhost-ecdsa", configuration: TLSClientConfiguration,
        host: String = "localhost"
    ) async throws -> ProbeResult {
        let server = try await LoopbackTLSServer.start(chain: serverChain, key: key)
        defer { Task { try? await server.shutdown() } }
        return try await Probe.get(context: TLSClientContext(configuration: configuration), port: server.port, host: host)
    }

    private func expectTLSError(_ expected: (TLSError) -> Bool, _ body: () async throws -> ProbeResult) async {
        do {
            let result = try await body()
            Issue.record("connection should have failed, verdict \(result.info.pinVerdict)")
        } catch let error as TLSError {
            #expect(expected(error), "unexpected \(error)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func leafPinMatches() async throws {
        let result = try await probe(configuration: Probe.configuration(pins: ["leaf-localhost-ecdsa", "backup-intermediate"]))
        #expect(result.body == "hello")
        #expect(result.info.pinVerdict == .matched(pin: TestCertificates.pin("leaf-localhost-ecdsa"), certificateIndex: 0))
        #expect(result.info.alpnProtocol == "http/1.1")
        #expect(result.info.verifiedChain.certificates.count == 4)
        #expect(!result.info.resumed)
    }

    @Test func backupIntermediatePinMatches() async throws {
        let result = try await probe(
            serverChain: ["leaf-backup-localhost", "backup-intermediate"], key: "leaf-backup-localhost",
            configuration: Probe.configuration(pins: ["intermediate-2", "backup-intermediate"]))
        #expect(result.info.pinVerdict == .matched(pin: TestCertificates.pin("backup-intermediate"), certificateIndex: 1))
    }

    @Test func rootPinMatches() async throws {
        let result = try await probe(configuration: Probe.configuration(pins: ["root", "other-root"]))
        #expect(result.info.pinVerdict == .matched(pin: TestCertificates.pin("root"), certificateIndex: 3))
    }

    @Test func ipAddressHostConnects() async throws {
        let result = try await probe(
            key: "leaf-localhost-ecdsa", configuration: Probe.configuration(), host: "127.0.0.1")
        #expect(result.info.pinVerdict == .notPinned)
    }

    @Test func noMatchingPinFails() async {
        await expectTLSError({
            guard let report = $0.pinFailureReport else { return false }
            return report.host == "localhost" && report.chainPins.count == 4
                && report.configuredPins == [TestCertificates.pin("other-root"), TestCertificates.pin("other-intermediate")]
        }) {
            try await probe(configuration: Probe.configuration(pins: ["other-root", "other-intermediate"]))
        }
    }

    @Test func pinnedUnrelatedCertificateAppendedToValidChainFails() async {
        // Chain injection: the server appends certificates whose keys are pinned; they are not on the
        // verified path, so they must never match.
        await expectTLSError({ $0.code == .pinMismatch }) {
            try await probe(
                serverChain: Self.standard + ["other-intermediate", "other-root"],
                configuration: Probe.configuration(pins: ["other-intermediate", "other-root"]))
        }
    }

    @Test func untrustedRootWithMatchingPinFails() async {
        await expectTLSError({ $0.code == .untrustedChain }) {
            try await probe(
                serverChain: ["other-leaf-localhost", "other-intermediate", "other-root"], key: "other-leaf-localhost",
                configuration: Probe.configuration(pins: ["other-leaf-localhost", "other-root"]))
        }
    }

    @Test func expiredLeafFails() async {
        await expectTLSError({
            $0.code == .untrustedChain && $0.reason?.contains("expired") == true
        }) {
            try await probe(
                serverChain: ["leaf-expired", "intermediate-2", "intermediate-1"], key: "leaf-expired",
                configuration: Probe.configuration(pins: ["leaf-expired", "root"]))
        }
    }

    @Test func hostnameMismatchFails() async {
        await expectTLSError({ $0 == .hostnameMismatch(host: "localhost") }) {
            try await probe(
                serverChain: ["leaf-other-host", "intermediate-2", "intermediate-1"], key: "leaf-other-host",
                configuration: Probe.configuration(pins: ["leaf-other-host", "root"]))
        }
    }

    @Test func reportOnlyMismatchDeliversReportAndConnects() async throws {
        let reporter = CollectingReporter()
        let result = try await probe(
            configuration: Probe.configuration(pins: ["other-root", "other-intermediate"], reportOnly: true, reporter: reporter))
        #expect(result.body == "hello")
        guard case .reportOnlyMismatch(let report) = result.info.pinVerdict else {
            Issue.record("expected a report-only verdict, got \(result.info.pinVerdict)")
            return
        }
        #expect(reporter.reports == [report])
        #expect(report.chainPins.first?.pin == TestCertificates.pin("leaf-localhost-ecdsa"))
    }
}

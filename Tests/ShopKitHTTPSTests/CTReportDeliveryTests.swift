import Foundation
import NIOConcurrencyHelpers
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// Certificate Transparency reports through ShopKit's reporters: RFC 9163's JSON POSTed by `HTTPPinFailureReporter`
/// to the same collectors as pin reports, deduplicated in every field but the date, and forwarded by the composite.
@Suite(.timeLimit(.minutes(3))) struct CTReportDeliveryTests {
    static func report(host: String = "cdn.example.net", date: Date = Date(timeIntervalSince1970: 1_800_000_000))
        -> CTComplianceReport
    {
        let sct = SignedCertificateTimestamp(
            logID: [UInt8](repeating: 3, count: 32), timestamp: Date(timeIntervalSince1970: 1_799_000_000),
            source: .embedded, status: .valid, serialized: [0, 1, 2])
        let evaluation = CertificateTransparencyPolicy(
            defaultMode: .reportOnly,
            logList: CTLogList(timestamp: Date(timeIntervalSince1970: 1_800_000_000), version: nil, operators: [
                .init(name: "Operator", logs: [
                    .init(
                        description: "Log", logID: [UInt8](repeating: 3, count: 32), key: [1], url: nil, mmd: nil,
                        state: .usable(.distantPast), temporalInterval: nil, operatorName: "Operator")
                ])
            ])
        ).evaluate(
            host: host,
            chain: VerifiedChain(verifiedCertificates: [
                CertificateInfo(
                    spkiPin: try! SPKIPin(sha256: [UInt8](repeating: 1, count: 32)), subject: "CN=\(host)", issuer: "CN=CA",
                    subjectAlternativeNames: [host], notBefore: date - 86_400, notAfter: date + 90 * 86_400,
                    keyDescription: "ECDSA P-256", signatureAlgorithm: "ecdsa-with-SHA256")
            ]),
            scts: [sct], rootIsPublic: true, now: date)
        return CTComplianceReport(
            evaluation: evaluation, host: host, port: 443, servedChainPEM: ["PEM"], validatedChainPEM: ["PEM"], date: date)
    }

    @Test func aCTReportIsPostedInRFC9163FormAndDeduplicated() async throws {
        let stub = StubTransport(replies: [.status(204)])
        let clock = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
        let reporter = try PinFailureReporterTests.reporter(stub, clock: clock)
        let first = Self.report()
        #expect(!first.verdict.isEmpty, "the fixture report is for a non-compliant chain")
        reporter.report(first)
        clock.withLockedValue { $0 += 60 }
        reporter.report(Self.report(date: clock.withLockedValue { $0 }))
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        let requests = await stub.requests
        #expect(requests.count == 1, "the second report differs only in its date")
        let sent = try #require(requests.first)
        #expect(sent.request.path == "/pins/report?v=1")
        let json = try #require(try JSONSerialization.jsonObject(with: sent.body ?? Data()) as? [String: Any])
        let body = try #require(json["expect-ct-report"] as? [String: Any])
        #expect(body["hostname"] as? String == "cdn.example.net")
        #expect(body["port"] as? Int == 443)
        #expect((body["scts"] as? [[String: Any]])?.count == 1)
        #expect(reporter.statistics == .init(accepted: 1, deduplicated: 1, dropped: 0, delivered: 1, failed: 0))
    }

    @Test func theCompositeForwardsCTReportsToEveryReporter() {
        let first = CollectingCTReporter()
        let second = CollectingCTReporter()
        CompositePinFailureReporter([first, second]).report(Self.report())
        #expect(first.ctReports.count == 1)
        #expect(second.ctReports.count == 1)
    }
}

final class CollectingCTReporter: PinFailureReporter, Sendable {
    private let stored = NIOLockedValueBox<[CTComplianceReport]>([])
    func report(_ report: PinFailureReport) {}
    func report(_ report: CTComplianceReport) { stored.withLockedValue { $0.append(report) } }
    var ctReports: [CTComplianceReport] { stored.withLockedValue { $0 } }
}

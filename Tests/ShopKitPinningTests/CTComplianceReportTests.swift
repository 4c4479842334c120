import Foundation
import Testing
@testable import ShopKitPinning

/// `CTComplianceReport`: RFC 9163's Expect-CT report JSON, plus `shopkit-verdict`.
@Suite(.timeLimit(.minutes(3))) struct CTComplianceReportTests {
    typealias F = CTFixture

    static let evaluation = F.evaluate([
        F.sct(F.a), F.sct(F.c, .tlsExtension, status: .invalid), F.sct(9, .ocsp, status: .unknownLog),
    ])

    static func report(_ evaluation: CTEvaluation = evaluation) -> CTComplianceReport {
        CTComplianceReport(
            evaluation: evaluation, host: "localhost", port: 8443, servedChainPEM: ["-----BEGIN CERTIFICATE-----\nAB/C\n-----END CERTIFICATE-----\n"],
            validatedChainPEM: ["LEAF", "ROOT"], date: F.now)
    }

    @Test func theJSONHasRFC9163sShape() throws {
        let verdict = try #require(CertificateTransparencyPolicyTests.reason(Self.evaluation))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let escaped = String(decoding: try encoder.encode(verdict), as: UTF8.self)
        let golden = #"{"expect-ct-report":{"date-time":"2026-11-28T12:00:00Z","effective-expiration-date":"2027-01-10T00:00:00Z","#
            + #""failure-mode":"enforce","hostname":"localhost","port":8443,"scheme":"https","#
            + #""scts":[{"serialized_sct":"AAE=","source":"embedded","status":"valid","version":1},"#
            + #"{"serialized_sct":"AAM=","source":"tls-extension","status":"invalid","version":1},"#
            + #"{"serialized_sct":"AAk=","source":"ocsp","status":"unknown","version":1}],"#
            + #""served-certificate-chain":["-----BEGIN CERTIFICATE-----\nAB/C\n-----END CERTIFICATE-----\n"],"#
            + #""shopkit-verdict":\#(escaped),"test-report":false,"validated-certificate-chain":["LEAF","ROOT"]}}"#
        #expect(String(decoding: Self.report().jsonData(), as: UTF8.self) == golden)
    }

    @Test func aReportOnlyConnectionSaysSo() throws {
        let reportOnly = F.evaluate([F.sct(F.a)], policy: F.policy(.reportOnly))
        #expect(Self.report(reportOnly).failureMode == "report-only")
        let stale = F.evaluate([F.sct(F.a)], now: F.date("2027-02-01T00:00:00Z"))
        #expect(Self.report(stale).failureMode == "report-only")
    }

    @Test func theJSONDecodesBackToTheReport() throws {
        let report = Self.report()
        #expect(try JSONDecoder().decode(CTComplianceReport.self, from: report.jsonData()) == report)
        let object = try #require(try JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
        #expect(Array(object.keys) == ["expect-ct-report"])
    }
}

// README-BEGIN (this block is the README's "Certificate Transparency" example, verbatim; a test checks they match)
import Foundation
import ShopKit

/// A transport that refuses a payment provider's chain without enough SCTs, and reports every other host.
func transportWithCertificateTransparency(logListJSON: Data) throws -> HTTPSTransport {
    var tls = TLSClientConfiguration()
    tls.certificateTransparency = try CertificateTransparencyPolicy(
        defaultMode: .reportOnly,  // the default: connect, log and report a chain that is not compliant
        rules: [.init(host: "*.payments.example", mode: .enforced)],
        logList: try CTLogList(json: logListJSON))  // a list you may use (below); CTLogListUpdates keeps it fresh
    return try HTTPSTransport(configuration: .init(tls: tls))
}
// README-END

import Testing
import TestSupport

@Suite(.timeLimit(.minutes(3))) struct READMECertificateTransparencyTests {
    @Test func exampleIsTheREADMEsExample() throws {
        let example = try #require(try READMESnippets.example(inFile: #filePath))
        #expect(try READMESnippets.readmeShows(example), "README.md's Certificate Transparency example differs from this file")
    }

    @Test func theExampleBuildsATransportWithThoseModes() async throws {
        let transport = try transportWithCertificateTransparency(logListJSON: TestCertificates.ctData("test-log-list.json"))
        let policy = transport.configuration.tls.certificateTransparency
        #expect(policy.mode(for: "api.payments.example") == .enforced)
        #expect(policy.mode(for: "cdn.example.net") == .reportOnly)
        #expect(transport.certificateTransparencyLogList.logs.count == 4)
        await transport.shutdown()
    }

    /// The default: report-only for every host, with the bundled list, which has no logs, so nothing is judged.
    @Test func theDefaultIsReportOnlyWithTheBundledList() {
        let policy = TLSClientConfiguration().certificateTransparency
        #expect(policy.defaultMode == .reportOnly)
        #expect(policy.rules.isEmpty)
        #expect(policy.logList == CTLogList.bundled)
        #expect(policy.maximumLogListAge == 70 * 86_400)
    }
}

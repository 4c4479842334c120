import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// `HTTPPinFailureReporter` without a network: TrustKit's JSON, deduplication on an injected clock, the bounded
/// queue, and the guard against reporting a report URI's failure to itself.
@Suite(.timeLimit(.minutes(3))) struct PinFailureReporterTests {
    static let app = PinFailureReportApp(
        bundleID: "com.example.shop", version: "1.2.3", vendorID: "install-7", platform: "linux", platformVersion: "6.1")

    static func report(host: String = "api.example.com", port: Int = 443, date: Date = Date(timeIntervalSince1970: 1_800_000_000)) -> PinFailureReport {
        let leaf = CertificateInfo(
            spkiPin: try! SPKIPin(sha256: [UInt8](repeating: 1, count: 32)), subject: "CN=\(host)", issuer: "CN=CA",
            subjectAlternativeNames: [host], notBefore: .distantPast, notAfter: .distantFuture,
            keyDescription: "ECDSA P-256", signatureAlgorithm: "ecdsa-with-SHA256")
        return PinFailureReport(
            host: host, chain: VerifiedChain(verifiedCertificates: [leaf]),
            configuredPins: [try! SPKIPin(sha256: [UInt8](repeating: 7, count: 32)), try! SPKIPin(sha256: [UInt8](repeating: 8, count: 32))],
            date: date, hostPattern: try! HostPattern("*.example.com"), enforced: true, port: port,
            validatedChainPEM: ["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"], policyVersion: 4)
    }

    static func reporter(
        _ transport: StubTransport, uris: [String] = ["https://collector.example.net/pins/report?v=1"], capacity: Int = 64,
        clock: NIOLockedValueBox<Date> = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
    ) throws -> HTTPPinFailureReporter {
        try HTTPPinFailureReporter(
            configuration: .init(reportURIs: uris.map { URL(string: $0)! }, app: app, queueCapacity: capacity),
            transport: transport, now: { clock.withLockedValue { $0 } })
    }

    @Test func postsTrustKitJSON() async throws {
        let stub = StubTransport(replies: [.status(204)])
        let reporter = try Self.reporter(stub)
        reporter.report(Self.report())
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        let requests = await stub.requests
        #expect(requests.count == 1)
        let sent = try #require(requests.first)
        #expect(sent.request.method == .post)
        #expect(sent.request.path == "/pins/report?v=1")
        #expect(sent.baseURL.absoluteString == "https://collector.example.net")
        #expect(sent.request.headerFields[.contentType] == "application/json")
        let json = try #require(try JSONSerialization.jsonObject(with: sent.body ?? Data()) as? [String: Any])
        #expect(json["app-bundle-id"] as? String == "com.example.shop")
        #expect(json["app-version"] as? String == "1.2.3")
        #expect(json["app-vendor-id"] as? String == "install-7")
        #expect(json["app-platform"] as? String == "linux")
        #expect(json["app-platform-version"] as? String == "6.1")
        #expect(json["hostname"] as? String == "api.example.com")
        #expect(json["port"] as? Int == 443)
        #expect(json["noted-hostname"] as? String == "*.example.com")
        #expect(json["include-subdomains"] as? Bool == true)
        #expect(json["enforce-pinning"] as? Bool == true)
        #expect(json["validation-result"] as? Int == 1)
        #expect(json["date-time"] as? String == "2027-01-15T08:00:00Z")
        #expect(json["policy-version"] as? Int == 4)
        #expect((json["validated-certificate-chain"] as? [String])?.first?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
        #expect(
            json["known-pins"] as? [String] == [
                "pin-sha256=\"\(Data(repeating: 7, count: 32).base64EncodedString())\"",
                "pin-sha256=\"\(Data(repeating: 8, count: 32).base64EncodedString())\"",
            ])
        #expect(reporter.statistics == .init(accepted: 1, deduplicated: 0, dropped: 0, delivered: 1, failed: 0))
    }

    @Test func identicalReportsAreSentOncePer24Hours() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let clock = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
        let reporter = try Self.reporter(stub, clock: clock)
        reporter.report(Self.report())
        // Same report a minute later (only the date differs): a duplicate.
        clock.withLockedValue { $0 += 60 }
        reporter.report(Self.report(date: clock.withLockedValue { $0 }))
        // Another host is not a duplicate.
        reporter.report(Self.report(host: "www.example.com"))
        // Just under 24 hours after the first: still a duplicate; at 24 hours: sent again.
        clock.withLockedValue { $0 = Date(timeIntervalSince1970: 1_800_000_000 + 86_399) }
        reporter.report(Self.report())
        clock.withLockedValue { $0 = Date(timeIntervalSince1970: 1_800_000_000 + 86_400) }
        reporter.report(Self.report())
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        let hosts = await stub.requests.compactMap { request in
            (try? JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])?["hostname"] as? String
        }
        #expect(hosts == ["api.example.com", "www.example.com", "api.example.com"])
        #expect(reporter.statistics.deduplicated == 2)
    }

    @Test func fullQueueDropsAndCounts() async throws {
        let gate = Gate()
        let stub = StubTransport { _ in
            try await gate.wait()
            return .status(200)
        }
        let reporter = try Self.reporter(stub, capacity: 2)
        reporter.report(Self.report(host: "h0.example.com"))
        try await stub.arrivals.wait(until: 1)  // the first is being sent, held by the gate
        for index in 1...9 { reporter.report(Self.report(host: "h\(index).example.com")) }
        #expect(reporter.statistics.accepted == 3)
        #expect(reporter.statistics.dropped == 7)
        await gate.open()
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        #expect(await stub.requests.count == 3)
        #expect(reporter.statistics.delivered == 3)
        // A dropped report was never sent, so it is not a duplicate later.
        reporter.report(Self.report(host: "h9.example.com"))
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        #expect(reporter.statistics.delivered == 4)
    }

    @Test func aReportAboutAReportURIIsNotSentToThatURI() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let reporter = try Self.reporter(
            stub, uris: ["https://collector.example.net/r", "https://backup-collector.example.org:8443/r"])
        // The first collector's own pins failed: sending there would fail the same way (and could loop).
        reporter.report(Self.report(host: "collector.example.net", port: 443))
        // The same host on another port is another endpoint.
        reporter.report(Self.report(host: "backup-collector.example.org", port: 443))
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        let sent = await stub.requests.map(\.baseURL.absoluteString)
        #expect(sent == ["https://backup-collector.example.org:8443", "https://collector.example.net", "https://backup-collector.example.org:8443"])
    }

    /// Issue 39, item 4: the own-endpoint check compares canonical names: a report URI spelled with capitals, a
    /// trailing dot or brackets is still the endpoint the report is about.
    @Test(arguments: [
        ("https://COLLECTOR.Example.NET./r", "collector.example.net", 443),
        ("https://127.0.0.1.:8443/r", "127.0.0.1", 8443),
        ("https://[0:0:0:0:0:0:0:1]:8443/r", "::1", 8443),
    ])
    func aReportURIInAnotherSpellingIsStillItsOwnEndpoint(uri: String, host: String, port: Int) async throws {
        let stub = StubTransport(replies: [.status(200)])
        let reporter = try Self.reporter(stub, uris: [uri, "https://backup-collector.example.org/r"])
        reporter.report(Self.report(host: host, port: port))
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        let sent = await stub.requests.map(\.baseURL.absoluteString)
        #expect(sent == ["https://backup-collector.example.org"], "\(uri)")
    }

    @Test func failedPostsAreCountedNotRetried() async throws {
        let stub = StubTransport(replies: [.status(500), .failure(HTTPSTransportError.connectionClosed)])
        let reporter = try Self.reporter(stub)
        reporter.report(Self.report(host: "a.example.com"))
        reporter.report(Self.report(host: "b.example.com"))
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        #expect(reporter.statistics.failed == 2)
        #expect(reporter.statistics.delivered == 0)
        #expect(await stub.requests.count == 2)
    }

    @Test func reportURIsMustBeHTTPS() {
        let stub = StubTransport(replies: [.status(200)])
        #expect(throws: HTTPPinFailureReporterError.invalidReportURI("http://collector.example.net/r")) {
            try Self.reporter(stub, uris: ["http://collector.example.net/r"])
        }
        #expect(throws: HTTPPinFailureReporterError.noReportURI) { try Self.reporter(stub, uris: []) }
    }
}

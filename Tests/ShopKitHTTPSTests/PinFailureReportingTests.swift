import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// Pin failure reports end to end over real TLS on 127.0.0.1: the app's transport fails a pin check, the TLS
/// layer hands the report to `HTTPPinFailureReporter`, which POSTs it through its own pinned transport to a
/// local collector (or to a dead one, which must change nothing for the app).
@Suite(.timeLimit(.minutes(3))) struct PinFailureReportingTests {
    /// A collector keeping each POSTed body.
    final class Collector: Sendable {
        let bodies = NIOLockedValueBox<[(uri: String, body: [UInt8])]>([])
        let server: LoopbackTLSServer

        init() async throws {
            let bodies = self.bodies
            server = try await LoopbackTLSServer.start(
                certificateChainPEM: TestCertificates.standardChain(),
                privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa")
            ) { head, body in
                bodies.withLockedValue { $0.append((head.uri, body)) }
                return .init(status: .noContent, body: [])
            }
        }

        var reports: [[String: Any]] {
            bodies.withLockedValue { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] }
        }
    }

    /// The reporter's own transport: pinned to the collector's key at 127.0.0.1 (a report URI can be pinned). Wide
    /// timeouts: a report that fails under load is not what these tests are about (a 10 s handshake timeout once
    /// failed one of two reports on a loaded machine).
    static func reporterTransport() throws -> HTTPSTransport {
        try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: loopbackClientTLS, timeouts: .wide()))
    }

    /// The app's transport to `localhost`, pinned to keys the server does not use.
    static func appTransport(reportOnly: Bool, reporter: (any PinFailureReporter)?) throws -> HTTPSTransport {
        let set = try PinSet(
            hostPattern: HostPattern("localhost"), pins: ["other-root", "other-intermediate"].map(TestCertificates.pin),
            reportOnly: reportOnly)
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [set]), pinFailureReporter: reporter)
        return try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide()))
    }

    static func base64(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    @Test func localCollectorReceivesExactlyTheExpectedReports() async throws {
        let collector = try await Collector()
        let appServer = try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let clock = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
        let reporter = try HTTPPinFailureReporter(
            configuration: .init(
                reportURIs: [URL(string: "https://127.0.0.1:\(collector.server.port)/pkp-report")!],
                app: PinFailureReportApp(bundleID: "com.example.shop", version: "2.0")),
            transport: try Self.reporterTransport(), now: { clock.withLockedValue { $0 } })
        let app = try Self.appTransport(reportOnly: false, reporter: reporter)
        let base = URL(string: "https://localhost:\(appServer.port)")!

        // Three enforced mismatches within a day: refused each time, reported once.
        for _ in 0..<3 {
            await #expect { _ = try await app.fetch(baseURL: base) } throws: { error in
                (error as? TLSError)?.code == .pinMismatch
            }
            try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        }
        // A day later the same failure is reported again.
        clock.withLockedValue { $0 += 86_400 }
        await #expect(throws: TLSError.self) { _ = try await app.fetch(baseURL: base) }
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }

        let reports = collector.reports
        #expect(reports.count == 2)
        #expect(collector.bodies.withLockedValue { $0.map(\.uri) } == ["/pkp-report", "/pkp-report"])
        let report = try #require(reports.first)
        #expect(report["hostname"] as? String == "localhost")
        #expect(report["port"] as? Int == appServer.port)
        #expect(report["noted-hostname"] as? String == "localhost")
        #expect(report["include-subdomains"] as? Bool == false)
        #expect(report["enforce-pinning"] as? Bool == true)
        #expect(report["validation-result"] as? Int == 1)
        #expect(report["app-bundle-id"] as? String == "com.example.shop")
        #expect(
            report["known-pins"] as? [String] == ["other-root", "other-intermediate"].map {
                "pin-sha256=\"\(TestCertificates.pin($0).description.dropFirst("sha256/".count))\""
            })
        // The verified chain, leaf to root, as PEM.
        let chain = (report["validated-certificate-chain"] as? [String]) ?? []
        #expect(chain.map(Self.base64) == ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1", "root"].map {
            Self.base64(TestCertificates.certificate($0))
        })
        #expect(reporter.statistics == .init(accepted: 2, deduplicated: 2, dropped: 0, delivered: 2, failed: 0))

        await app.shutdown()
        try await appServer.shutdown()
        try await collector.server.shutdown()
    }

    @Test func reportOnlyMismatchesAreReportedAndConnect() async throws {
        let collector = try await Collector()
        let appServer = try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let reporter = try HTTPPinFailureReporter(
            configuration: .init(
                reportURIs: [URL(string: "https://127.0.0.1:\(collector.server.port)/r")!], app: .init(bundleID: "shop")),
            transport: try Self.reporterTransport())
        let app = try Self.appTransport(reportOnly: true, reporter: reporter)
        let (response, body) = try await app.fetch(baseURL: URL(string: "https://localhost:\(appServer.port)")!)
        #expect(response.status == .ok)
        #expect(body == Array("hello".utf8))
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        #expect(collector.reports.map { $0["enforce-pinning"] as? Bool } == [false])
        await app.shutdown()
        try await appServer.shutdown()
        try await collector.server.shutdown()
    }

    /// A collector that accepts TCP but never finishes a handshake, and one that refuses connections: the app
    /// sees exactly what it sees without a reporter, and is answered while the report is still being sent.
    @Test func deadCollectorChangesNothingForTheApp() async throws {
        let appServer = try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let base = URL(string: "https://localhost:\(appServer.port)")!
        let closed = try BoundClosedPort()
        let mute = try await LoopbackHTTPServer.start(script: { _ in .ok() })  // plaintext: no TLS handshake
        let hanging = try StalledListener()
        defer {
            closed.release()
            hanging.close()
        }
        let reporter = try HTTPPinFailureReporter(
            configuration: .init(
                reportURIs: [
                    URL(string: "https://127.0.0.1:\(hanging.port)/r")!, URL(string: "https://127.0.0.1:\(closed.port)/r")!,
                    URL(string: "https://127.0.0.1:\(mute.port)/r")!,
                ],
                app: .init(bundleID: "shop")),
            // Long enough that the stalled collector's connect is certainly still waiting when the app's request
            // returns, however slow the machine: the test ends that wait itself, below.
            transport: try Self.reporterTransport())

        // Report-only: the app's request succeeds with or without the dead collector.
        let reportingApp = try Self.appTransport(reportOnly: true, reporter: reporter)
        let (response, body) = try await reportingApp.fetch(baseURL: base)
        #expect(response.status == .ok)
        #expect(body == Array("hello".utf8))
        // Answered before the collectors' failure was even known: reporting is off the connection's path.
        #expect(reporter.statistics.failed + reporter.statistics.delivered < 3)

        // Enforced: the same error as an app without a reporter.
        var errors: [String] = []
        for reporterGiven in [true, false] {
            let app = try Self.appTransport(reportOnly: false, reporter: reporterGiven ? reporter : nil)
            do {
                _ = try await app.fetch(baseURL: URL(string: "https://localhost:\(appServer.port)")!)
                Issue.record("a pin mismatch connected")
            } catch {
                errors.append("\(error)")
            }
            await app.shutdown()
        }
        #expect(errors.count == 2 && errors[0] == errors[1])

        // The stalled collector goes away: its waiting connects are refused at their next SYN, so every report
        // has now failed, none was delivered.
        hanging.close()
        try await withDeadline("the reporter to send its reports") { await reporter.waitUntilIdle() }
        #expect(reporter.statistics.delivered == 0)
        #expect(reporter.statistics.failed == 6)
        await reportingApp.shutdown()
        await mute.stop()
        try await appServer.shutdown()
    }
}

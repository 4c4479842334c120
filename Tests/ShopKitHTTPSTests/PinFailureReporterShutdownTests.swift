import Foundation
import Logging
import NIOConcurrencyHelpers
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// Reports that reach someone at exit, over real TLS on 127.0.0.1: several reporters at once, a shutdown that
/// sends the last report before it returns and is bounded when the collector does not answer, and a release with
/// reports still queued that says so.
@Suite(.timeLimit(.minutes(3))) struct PinFailureReporterShutdownTests {
    /// A collector whose received report count can be waited on.
    final class CountingCollector: Sendable {
        let received = WaitableState(0)
        let server: LoopbackTLSServer

        init() async throws {
            let received = self.received
            server = try await LoopbackTLSServer.start(
                certificateChainPEM: TestCertificates.standardChain(),
                privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa")
            ) { _, body in
                if (try? JSONSerialization.jsonObject(with: Data(body))) != nil { received.withLockedValue { $0 += 1 } }
                return .init(status: .noContent, body: [])
            }
        }

        var uri: URL { URL(string: "https://127.0.0.1:\(server.port)/r")! }
        var count: Int { received.withLockedValue { $0 } }
    }

    /// A reporter keeping what it is handed (the app's own log, say).
    final class Recorder: PinFailureReporter {
        let hosts = NIOLockedValueBox<[String]>([])
        func report(_ report: PinFailureReport) { hosts.withLockedValue { $0.append(report.host) } }
    }

    static func reporter(_ uris: [URL], logger: Logger? = nil) throws -> HTTPPinFailureReporter {
        var configuration = HTTPPinFailureReporter.Configuration(reportURIs: uris, app: .init(bundleID: "shop"))
        if let logger { configuration.logger = logger }
        return try HTTPPinFailureReporter(
            configuration: configuration, transport: try PinFailureReportingTests.reporterTransport())
    }

    /// One enforced mismatch reaches two collectors (each with its own reporter) and the app's recorder.
    @Test func aCompositeReachesEveryReporter() async throws {
        let first = try await CountingCollector()
        let second = try await CountingCollector()
        let appServer = try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let recorder = Recorder()
        let reporters = CompositePinFailureReporter(
            try Self.reporter([first.uri]), CompositePinFailureReporter(try Self.reporter([second.uri])), recorder)
        let app = try PinFailureReportingTests.appTransport(reportOnly: false, reporter: reporters)
        await #expect(throws: TLSError.self) { _ = try await app.fetch(baseURL: URL(string: "https://localhost:\(appServer.port)")!) }

        let unsent = try await withDeadline("the composite's reporters to shut down") {
            await reporters.shutdown(timeout: .seconds(60))
        }
        #expect(unsent == 0)
        #expect(first.count == 1)
        #expect(second.count == 1)
        #expect(recorder.hosts.withLockedValue { $0 } == ["localhost"])

        await app.shutdown()
        try await appServer.shutdown()
        try await first.server.shutdown()
        try await second.server.shutdown()
    }

    /// The last report is on the collector when `shutdown()` returns; later reports are dropped and counted.
    @Test func shutdownSendsTheLastReportBeforeReturning() async throws {
        let collector = try await CountingCollector()
        let reporter = try Self.reporter([collector.uri])
        reporter.report(PinFailureReporterTests.report())
        // A wide bound: the subject is that shutdown waits for the send, not how long a loaded machine takes.
        let unsent = try await withDeadline("the reporter to shut down") { await reporter.shutdown(timeout: .seconds(60)) }
        #expect(unsent == 0)
        #expect(collector.count == 1)
        #expect(reporter.statistics.delivered == 1)
        reporter.report(PinFailureReporterTests.report(host: "late.example.com"))
        #expect(reporter.statistics.dropped == 1)
        try await collector.server.shutdown()
    }

    /// A collector that never answers (its connect hangs) holds `shutdown(timeout:)` for its timeout only: it
    /// returns the number not sent and logs a warning, whatever the transport's own (wide) timeouts. Both reports
    /// still pending proves it: waiting for the transport (60 s to fail each connect) would have counted them
    /// failed, and would outlast the test's deadline. No wall clock: a loaded machine can delay the return.
    @Test func shutdownIsBoundedWhenTheCollectorDoesNotAnswer() async throws {
        let hanging = try StalledListener()
        defer { hanging.close() }
        let logs = LogCapture()
        let reporter = try Self.reporter([URL(string: "https://127.0.0.1:\(hanging.port)/r")!], logger: logs.logger())
        reporter.report(PinFailureReporterTests.report())
        reporter.report(PinFailureReporterTests.report(host: "second.example.com"))
        let unsent = try await withDeadline("a bounded shutdown") { await reporter.shutdown(timeout: .milliseconds(300)) }
        #expect(unsent == 2)
        let warning = logs.records.first { $0.level == .warning }
        #expect(warning?.message.contains("not sent") == true)
        #expect(warning?.metadata["unsent"] == "2")
    }

    /// A reporter released with a report still queued warns (how many, and that exit loses them), and the report
    /// is still sent while the process runs.
    @Test func releasingWithQueuedReportsWarnsAndStillSends() async throws {
        let hanging = try StalledListener()
        defer { hanging.close() }
        let collector = try await CountingCollector()
        let logs = LogCapture()
        var reporter: HTTPPinFailureReporter? = try Self.reporter(
            [URL(string: "https://127.0.0.1:\(hanging.port)/r")!, collector.uri], logger: logs.logger())
        reporter?.report(PinFailureReporterTests.report())  // held by the stalled collector
        reporter = nil
        let warning = logs.records.first { $0.level == .warning }
        #expect(warning?.message.contains("shutdown()") == true)
        #expect(warning?.metadata["waiting"] == "1")
        // The stalled collector goes away: its connect is refused at the next SYN, and the report goes on to the
        // collector that answers.
        hanging.close()
        try await collector.received.wait(until: { $0 == 1 }, for: "the released reporter's report")
        try await collector.server.shutdown()
    }
}

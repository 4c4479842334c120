import Foundation
import NIOConcurrencyHelpers
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Certificate Transparency against a real `openssl s_server` on 127.0.0.1 serving the `TestCerts/ct` fixtures:
/// leaves whose SCTs four test logs signed (embedded, in the TLS extension, in a stapled OCSP response), checked
/// against the test log list. The clock is fixed (a month after the SCTs), so the list's age never depends on
/// the day the tests run.
@Suite(.timeLimit(.minutes(3))) struct CertificateTransparencyTests {
    /// A month after the fixtures' SCTs (2026-11-01T01:00Z) and the test list (2026-11-01).
    static let now = Date(timeIntervalSince1970: 1_796_083_200)  // 2026-12-01T00:00:00Z

    /// The test log list, edited: `edit` gets its JSON object.
    static func logList(_ edit: (inout [String: Any]) -> Void = { _ in }) throws -> CTLogList {
        var json = try #require(
            try JSONSerialization.jsonObject(with: TestCertificates.ctData("test-log-list.json")) as? [String: Any])
        edit(&json)
        return try CTLogList(json: JSONSerialization.data(withJSONObject: json))
    }

    /// Moves every log into the first operator.
    static func oneOperator(_ json: inout [String: Any]) {
        guard var operators = json["operators"] as? [[String: Any]] else { return }
        let logs = operators.flatMap { ($0["logs"] as? [[String: Any]]) ?? [] }
        operators[0]["logs"] = logs
        json["operators"] = [operators[0]]
    }

    /// Sets the state of the log described `description` to `retired` at `date`.
    static func retire(_ description: String, at date: String) -> (inout [String: Any]) -> Void {
        { json in
            guard var operators = json["operators"] as? [[String: Any]] else { return }
            for index in operators.indices {
                guard var logs = operators[index]["logs"] as? [[String: Any]] else { continue }
                for logIndex in logs.indices where logs[logIndex]["description"] as? String == description {
                    logs[logIndex]["state"] = ["retired": ["timestamp": date]]
                }
                operators[index]["logs"] = logs
            }
            json["operators"] = operators
        }
    }

    static func context(
        mode: CertificateTransparencyPolicy.Mode = .enforced, logList: CTLogList? = nil,
        publicRoots: CertificateTransparencyPolicy.PublicRoots = .spkiPins([TestCertificates.pin("root")]),
        reporter: CollectingReporter? = nil, now: Date = now, resumption: Bool = false
    ) throws -> TLSClientContext {
        var configuration = try Probe.configuration(reporter: reporter)
        configuration.sessionResumption = resumption
        configuration.certificateTransparency = CertificateTransparencyPolicy(
            defaultMode: mode, logList: try logList ?? Self.logList(), publicRoots: publicRoots)
        return try TLSClientContext(configuration: configuration, now: { now })
    }

    /// s_server with the CT leaf `leaf` (or the standard ECDSA leaf), plus `arguments`.
    static func server(leaf: String?, _ arguments: [String], connections: Int = 1) async throws -> OpenSSLSServer {
        if let leaf {
            return try await OpenSSLSServer.start(
                leafFiles: TestCertificates.ctLeafFiles(leaf), connections: connections, arguments)
        }
        return try await OpenSSLSServer.start(connections: connections, arguments)
    }

    /// Connects once; the established connection's CT evaluation, or the error.
    static func connect(_ context: TLSClientContext, to server: OpenSSLSServer) async -> Result<ProbeResult, any Error> {
        do { return .success(try await Probe.get(context: context, port: server.port)) } catch { return .failure(error) }
    }

    static func refusal(_ result: Result<ProbeResult, any Error>, log: String) -> CTEvaluation? {
        switch result {
        case .success(let probe):
            Issue.record("connected: \(String(describing: probe.info.certificateTransparency))\n\(log)")
            return nil
        case .failure(let error):
            guard let tls = error as? TLSError, tls.code == .certificateTransparency else {
                Issue.record("expected a certificateTransparency refusal, got \(error)\n\(log)")
                return nil
            }
            #expect(tls.host == "localhost")
            #expect(tls.isRetryable == false)
            return tls.certificateTransparency
        }
    }

    static func evaluation(_ result: Result<ProbeResult, any Error>, log: String) -> CTEvaluation? {
        switch result {
        case .success(let probe):
            let evaluation = probe.info.certificateTransparency
            if evaluation == nil { Issue.record("no CT evaluation on the connection") }
            return evaluation
        case .failure(let error):
            Issue.record("expected a connection, got \(error)\n\(log)")
            return nil
        }
    }

    // MARK: Embedded SCTs

    @Test(arguments: ["-tls1_2", "-tls1_3"])
    func aCompliantChainConnectsWithItsThreeEmbeddedSCTsCounted(version: String) async throws {
        let server = try await Self.server(leaf: "leaf-ct-compliant", [version])
        defer { server.stop() }
        let result = await Self.connect(try Self.context(), to: server)
        let evaluation = try #require(Self.evaluation(result, log: server.log))
        #expect(evaluation.verdict == .compliant)
        #expect(evaluation.assessments.count == 3)
        #expect(evaluation.assessments.allSatisfy { $0.counted && $0.sct.status == .valid && $0.sct.source == .embedded })
        #expect(Set(evaluation.assessments.compactMap(\.operatorName)).count == 3)
    }

    @Test func tooFewSCTsAreRefusedWhenEnforcedAndReportedInRFC9163Form() async throws {
        let reporter = CollectingReporter()
        let server = try await Self.server(leaf: "leaf-ct-one-sct", ["-tls1_3"])
        defer { server.stop() }
        let result = await Self.connect(try Self.context(reporter: reporter), to: server)
        let evaluation = try #require(Self.refusal(result, log: server.log))
        guard case .notCompliant = evaluation.verdict else {
            Issue.record("\(evaluation.verdict)")
            return
        }
        #expect(evaluation.assessments.count == 1)
        let report = try #require(reporter.ctReports.first)
        #expect(reporter.ctReports.count == 1, "reported exactly once")
        let json = try #require(
            try JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
        let body = try #require(json["expect-ct-report"] as? [String: Any])
        #expect(body["hostname"] as? String == "localhost")
        #expect((body["scts"] as? [[String: Any]])?.first?["source"] as? String == "embedded")
        #expect((body["validated-certificate-chain"] as? [String])?.isEmpty == false)
    }

    @Test func twoLogsAreTooFewForACertificateLongerThan180Days() async throws {
        let server = try await Self.server(leaf: "leaf-ct-two-logs", ["-tls1_3"])
        defer { server.stop() }
        let evaluation = try #require(Self.refusal(await Self.connect(try Self.context(), to: server), log: server.log))
        #expect(evaluation.assessments.filter(\.counted).count == 2)
    }

    @Test func sctsFromOneOperatorOnlyAreRefused() async throws {
        let server = try await Self.server(leaf: "leaf-ct-compliant", ["-tls1_3"])
        defer { server.stop() }
        let context = try Self.context(logList: Self.logList(Self.oneOperator))
        let evaluation = try #require(Self.refusal(await Self.connect(context, to: server), log: server.log))
        #expect(Set(evaluation.assessments.compactMap(\.operatorName)).count == 1)
    }

    @Test func anSCTFromALogRetiredBeforeItWasIssuedDoesNotCount() async throws {
        let server = try await Self.server(leaf: "leaf-ct-compliant", ["-tls1_3"])
        defer { server.stop() }
        let context = try Self.context(logList: Self.logList(Self.retire("ShopKit Test Log D", at: "2026-10-01T00:00:00Z")))
        let evaluation = try #require(Self.refusal(await Self.connect(context, to: server), log: server.log))
        let fromD = try #require(evaluation.assessments.first { $0.logDescription == "ShopKit Test Log D" })
        #expect(!fromD.counted)
    }

    @Test func anSCTIssuedBeforeItsLogRetiredStillCounts() async throws {
        let server = try await Self.server(leaf: "leaf-ct-compliant", ["-tls1_3"])
        defer { server.stop() }
        let context = try Self.context(logList: Self.logList(Self.retire("ShopKit Test Log D", at: "2026-11-15T00:00:00Z")))
        let evaluation = try #require(Self.evaluation(await Self.connect(context, to: server), log: server.log))
        #expect(evaluation.verdict == .compliant)
    }

    @Test func aForgedSCTSignatureIsInvalidAndDoesNotCount() async throws {
        let server = try await Self.server(leaf: "leaf-ct-forged", ["-tls1_3"])
        defer { server.stop() }
        let evaluation = try #require(Self.refusal(await Self.connect(try Self.context(), to: server), log: server.log))
        let fromD = try #require(evaluation.assessments.first { $0.logDescription == "ShopKit Test Log D" })
        #expect(fromD.sct.status == .invalid)
        #expect(!fromD.counted)
        #expect(evaluation.assessments.filter { $0.sct.status == .valid }.count == 2)
    }

    @Test func sctsMadeForAnotherCertificateAreInvalid() async throws {
        let server = try await Self.server(leaf: "leaf-ct-other-cert", ["-tls1_3"])
        defer { server.stop() }
        let evaluation = try #require(Self.refusal(await Self.connect(try Self.context(), to: server), log: server.log))
        #expect(evaluation.assessments.count == 3)
        #expect(evaluation.assessments.allSatisfy { $0.sct.status == .invalid && !$0.counted })
    }

    @Test func sctsFromALogMissingFromTheListAreUnknown() async throws {
        let server = try await Self.server(leaf: "leaf-ct-compliant", ["-tls1_3"])
        defer { server.stop() }
        let context = try Self.context(logList: Self.logList { json in
            guard var operators = json["operators"] as? [[String: Any]] else { return }
            operators.removeLast()  // operator Three: log D
            json["operators"] = operators
        })
        let evaluation = try #require(Self.refusal(await Self.connect(context, to: server), log: server.log))
        #expect(evaluation.assessments.filter { $0.sct.status == .unknownLog }.count == 1)
    }

    // MARK: The TLS extension and OCSP

    @Test(arguments: ["-tls1_2", "-tls1_3"])
    func sctsInTheTLSExtensionFromTwoOperatorsAreCompliant(version: String) async throws {
        let server = try await Self.server(
            leaf: nil, [version, "-serverinfo", TestCertificates.ctFile("leaf-localhost-ecdsa.scts.serverinfo").path])
        defer { server.stop() }
        let evaluation = try #require(Self.evaluation(await Self.connect(try Self.context(), to: server), log: server.log))
        #expect(evaluation.verdict == .compliant)
        #expect(evaluation.assessments.count == 2)
        #expect(evaluation.assessments.allSatisfy { $0.sct.source == .tlsExtension && $0.counted })
    }

    @Test(arguments: ["-tls1_2", "-tls1_3"])
    func sctsInTheTLSExtensionForAnotherCertificateAreRefused(version: String) async throws {
        let server = try await Self.server(
            leaf: nil, [version, "-serverinfo", TestCertificates.ctFile("leaf-localhost-ecdsa.other-cert.serverinfo").path])
        defer { server.stop() }
        let evaluation = try #require(Self.refusal(await Self.connect(try Self.context(), to: server), log: server.log))
        #expect(evaluation.assessments.allSatisfy { $0.sct.status == .invalid && $0.sct.source == .tlsExtension })
    }

    @Test(arguments: ["-tls1_2", "-tls1_3"])
    func sctsInAStapledOCSPResponseAreRead(version: String) async throws {
        let server = try await Self.server(
            leaf: nil, [version, "-status_file", TestCertificates.ctFile("leaf-localhost-ecdsa.scts.ocsp.der").path])
        defer { server.stop() }
        let evaluation = try #require(Self.evaluation(await Self.connect(try Self.context(), to: server), log: server.log))
        #expect(evaluation.verdict == .compliant)
        #expect(evaluation.assessments.allSatisfy { $0.sct.source == .ocsp && $0.counted })
    }

    @Test func noSCTsAtAllAreRefusedWhenEnforced() async throws {
        let server = try await Self.server(leaf: nil, ["-tls1_3"])
        defer { server.stop() }
        let evaluation = try #require(Self.refusal(await Self.connect(try Self.context(), to: server), log: server.log))
        #expect(evaluation.assessments.isEmpty)
    }

    // MARK: Modes, scope, staleness

    @Test func reportOnlyConnectsAndReports() async throws {
        let reporter = CollectingReporter()
        let server = try await Self.server(leaf: "leaf-ct-one-sct", ["-tls1_3"])
        defer { server.stop() }
        let result = await Self.connect(try Self.context(mode: .reportOnly, reporter: reporter), to: server)
        let evaluation = try #require(Self.evaluation(result, log: server.log))
        guard case .notCompliant = evaluation.verdict else {
            Issue.record("\(evaluation.verdict)")
            return
        }
        #expect(evaluation.allowsConnection)
        #expect(reporter.ctReports.count == 1)
    }

    @Test func disabledAsksForNoSCTsAndEvaluatesNothing() async throws {
        let server = try await Self.server(leaf: "leaf-ct-one-sct", ["-tls1_3"])
        defer { server.stop() }
        let result = await Self.connect(try Self.context(mode: .disabled), to: server)
        guard case .success(let probe) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(probe.info.certificateTransparency == nil)
    }

    @Test func aChainEndingAtAPrivateRootIsExempt() async throws {
        let reporter = CollectingReporter()
        let server = try await Self.server(leaf: "leaf-ct-one-sct", ["-tls1_3"])
        defer { server.stop() }
        // The default public roots (Debian's Mozilla roots) do not hold the tests' root.
        let context = try Self.context(publicRoots: .system, reporter: reporter)
        let evaluation = try #require(Self.evaluation(await Self.connect(context, to: server), log: server.log))
        guard case .exempt = evaluation.verdict else {
            Issue.record("\(evaluation.verdict)")
            return
        }
        #expect(reporter.ctReports.isEmpty)
    }

    @Test func aStaleLogListFallsBackToReportOnlyNeverToRefusingEveryHost() async throws {
        let reporter = CollectingReporter()
        let server = try await Self.server(leaf: "leaf-ct-one-sct", ["-tls1_3"])
        defer { server.stop() }
        // 71 days after the list's timestamp (2026-11-01).
        let later = Date(timeIntervalSince1970: 1_793_491_200 + 71 * 86_400)
        let context = try Self.context(reporter: reporter, now: later)
        let evaluation = try #require(Self.evaluation(await Self.connect(context, to: server), log: server.log))
        #expect(evaluation.logListStale)
        #expect(evaluation.mode == .enforced)
        #expect(evaluation.effectiveMode == .reportOnly)
        #expect(reporter.ctReports.count == 1)
    }

    // MARK: Resumption and live list updates

    /// A resumed connection runs no verification and receives no SCTs: its cached SCTs are judged again under the
    /// list in force, so a list that drops two of the logs refuses the resumed connection.
    @Test func aResumedConnectionIsJudgedAgainUnderTheListInForce() async throws {
        let server = try await Self.server(leaf: "leaf-ct-compliant", ["-tls1_3"], connections: 3)
        defer { server.stop() }
        let context = try Self.context(resumption: true)
        let first = try #require(Self.evaluation(await Self.connect(context, to: server), log: server.log))
        #expect(first.verdict == .compliant)
        let second = await Self.connect(context, to: server)
        guard case .success(let resumed) = second else {
            Issue.record("\(second)")
            return
        }
        #expect(resumed.info.resumed)
        #expect(resumed.info.certificateTransparency?.verdict == .compliant)

        try context.replaceCertificateTransparencyLogList(Self.logList { json in
            guard let operators = json["operators"] as? [[String: Any]] else { return }
            json["operators"] = [operators[0]]  // logs A and B only
        })
        let third = await Self.connect(context, to: server)
        _ = Self.refusal(third, log: server.log)
    }

    @Test func aListWhoseLogIDIsNotItsKeysHashIsRefused() throws {
        var json = try #require(
            try JSONSerialization.jsonObject(with: TestCertificates.ctData("test-log-list.json")) as? [String: Any])
        var operators = try #require(json["operators"] as? [[String: Any]])
        var logs = try #require(operators[0]["logs"] as? [[String: Any]])
        // Log A's key under an id that is no key's hash.
        logs[0]["log_id"] = Data(repeating: 7, count: 32).base64EncodedString()
        operators[0]["logs"] = logs
        json["operators"] = operators
        let list = try CTLogList(json: JSONSerialization.data(withJSONObject: json))
        let context = try Self.context()
        #expect(throws: TLSContextError.self) { try context.replaceCertificateTransparencyLogList(list) }
        // The list in force is kept.
        #expect(context.certificateTransparency.logList == (try Self.logList()))
    }
}

import Foundation
import TestSupport
import Testing

/// `pin-check --ct`: the built binary against `openssl s_server` serving the `TestCerts/ct` leaves, whose SCTs the
/// test logs signed, judged against `TestCerts/ct/test-log-list.json` (or the bundled list, which has no logs).
///
/// pin-check reads the real clock. The test list is dated 2026-11-01 and goes stale 70 days later, on 2027-01-10,
/// after which `enforced` acts as report-only: each test asserts what the day it runs on calls for.
@Suite(.timeLimit(.minutes(3))) struct PinCheckCertificateTransparencyTests {
    /// When the test list goes stale: its timestamp (2026-11-01T00:00:00Z) plus 70 days.
    static let testListStaleAfter = Date(timeIntervalSince1970: 1_793_491_200 + 70 * 86_400)
    static var testListIsStale: Bool { Date() >= testListStaleAfter }

    static let root = MutualTLSFixtures.path("root.pem")
    static let testList = TestCertificates.ctFile("test-log-list.json").path
    /// The test root made public for CT, with the test log list.
    static let testLogs = ["--ct-log-list", testList, "--ct-public-root", root]

    /// pin-check against s_server serving the CT leaf `leaf` over TLS 1.3, trusting the test root.
    static func run(leaf: String, _ arguments: [String]) async throws -> PinCheckBinary.Outcome {
        let server = try await OpenSSLSServer.start(leafFiles: TestCertificates.ctLeafFiles(leaf), ["-tls1_3"])
        defer { server.stop() }
        return try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", root] + arguments)
    }

    static func json(_ outcome: PinCheckBinary.Outcome) throws -> (report: [String: Any], ct: [String: Any]) {
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any], "\(outcome.stdout)")
        let ct = try #require(report["certificateTransparency"] as? [String: Any], "\(outcome.stdout)")
        return (report, ct)
    }

    @Test func aCompliantChainShowsEachSCTAndTheVerdictInText() async throws {
        let outcome = try await Self.run(leaf: "leaf-ct-compliant", ["--ct", "enforced"] + Self.testLogs)
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        let section = try #require(outcome.section("Certificate Transparency:"), "\(outcome.stdout)")
        if Self.testListIsStale {
            #expect(section.contains("mode enforced (acting as report-only: the log list is stale)"), "\(section)")
            #expect(section.contains("STALE since 2027-01-10"), "\(section)")
        } else {
            #expect(section.hasPrefix("Certificate Transparency: mode enforced\n"), "\(section)")
            #expect(section.contains("stale after 2027-01-10"), "\(section)")
        }
        #expect(section.contains("log list:  \(Self.testList), 2026-11-01T00:00:00Z, 4 logs"), "\(section)")
        #expect(section.contains("SCTs (3, in the order read):"), "\(section)")
        for (log, operatorName) in [
            ("ShopKit Test Log A", "ShopKit Test Operator One"), ("ShopKit Test Log C", "ShopKit Test Operator Two"),
            ("ShopKit Test Log D", "ShopKit Test Operator Three"),
        ] {
            #expect(section.contains("] \(log) (\(operatorName))"), "\(section)")
        }
        #expect(section.components(separatedBy: "timestamp: 2026-11-01T01:00:00Z, embedded").count == 4, "\(section)")
        #expect(section.components(separatedBy: "status:    valid, counted").count == 4, "\(section)")
        #expect(section.contains("verdict:   compliant: 3 of 3 SCTs counted"), "\(section)")
        #expect(outcome.stdout.contains("Verdict: ok (exit 0)"))
    }

    @Test func aCompliantChainInJSON() async throws {
        let outcome = try await Self.run(leaf: "leaf-ct-compliant", ["--ct", "enforced", "--json"] + Self.testLogs)
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        let (report, ct) = try Self.json(outcome)
        #expect(report["verdict"] as? String == "ok")
        #expect(ct["mode"] as? String == "enforced")
        #expect(ct["effectiveMode"] as? String == (Self.testListIsStale ? "report-only" : "enforced"))
        #expect(ct["verdict"] as? String == "compliant")
        #expect((ct["reason"] as? String)?.hasPrefix("compliant: 3 of 3 SCTs counted") == true)
        let list = try #require(ct["logList"] as? [String: Any])
        #expect(list["source"] as? String == Self.testList)
        #expect(list["timestamp"] as? String == "2026-11-01T00:00:00Z")
        #expect(list["logs"] as? Int == 4)
        #expect(list["stale"] as? Bool == Self.testListIsStale)
        #expect(list["staleAfter"] as? String == "2027-01-10T00:00:00Z")
        let scts = try #require(ct["scts"] as? [[String: Any]])
        #expect(scts.count == 3)
        #expect(scts.compactMap { $0["operator"] as? String }.count == 3)
        #expect(Set(scts.compactMap { $0["operator"] as? String }).count == 3)
        for sct in scts {
            #expect(sct["log"] is String)
            #expect((sct["logID"] as? String).flatMap { Data(base64Encoded: $0) }?.count == 32)
            #expect(sct["timestamp"] as? String == "2026-11-01T01:00:00Z")
            #expect(sct["source"] as? String == "embedded")
            #expect(sct["status"] as? String == "valid")
            #expect(sct["counted"] as? Bool == true)
            #expect(sct["reason"] is NSNull)
        }
    }

    /// One SCT is too few: enforced refuses the chain in the handshake, and the report still shows the SCT and the
    /// verdict (the TLS error carries the evaluation); exit 5. Once the list is stale, enforced acts as report-only.
    @Test func tooFewSCTsUnderEnforcedFailWithExit5() async throws {
        let text = try await Self.run(leaf: "leaf-ct-one-sct", ["--ct", "enforced"] + Self.testLogs)
        let json = try await Self.run(leaf: "leaf-ct-one-sct", ["--ct", "enforced", "--json"] + Self.testLogs)
        let (report, ct) = try Self.json(json)
        #expect(ct["verdict"] as? String == "not-compliant")
        #expect((ct["reason"] as? String)?.contains("not compliant:") == true, "\(ct)")
        let scts = try #require(ct["scts"] as? [[String: Any]])
        #expect(scts.count == 1)
        #expect(scts.first?["log"] as? String == "ShopKit Test Log A")
        #expect(scts.first?["status"] as? String == "valid")
        let section = try #require(text.section("Certificate Transparency:"), "\(text.stdout)")
        #expect(section.contains("[0] ShopKit Test Log A (ShopKit Test Operator One)"), "\(section)")
        #expect(section.contains("verdict:   not compliant:"), "\(section)")
        if Self.testListIsStale {
            #expect(text.status == 0)
            #expect(json.status == 0)
            #expect(report["verdict"] as? String == "ok")
            #expect(text.stdout.contains("warning: the chain is not Certificate Transparency compliant; CT is enforced, but the log list is stale"))
        } else {
            #expect(text.status == 5, "\(text.stdout)\(text.stderr)")
            #expect(json.status == 5)
            #expect(report["verdict"] as? String == "ct-not-compliant")
            #expect((report["reason"] as? String)?.contains("not Certificate Transparency compliant, and CT is enforced") == true)
            #expect(text.stdout.contains("Verdict: ct-not-compliant (exit 5)"), "\(text.stdout)")
            #expect(text.stdout.contains("Chain the server sent (it leads to a trusted root and the name matched, but Certificate Transparency refused it"))
        }
    }

    /// The same chain under report-only (the default mode): connects, exit 0, a warning.
    @Test func tooFewSCTsUnderReportOnlyWarnAndExit0() async throws {
        let outcome = try await Self.run(leaf: "leaf-ct-one-sct", Self.testLogs)
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("Certificate Transparency: mode report-only\n"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("warning: the chain is not Certificate Transparency compliant; CT is report-only"))
    }

    /// Without --ct-log-list: the bundled list, which has no logs, so no verdict; the output says so.
    @Test func theBundledListHasNoLogsAndTheOutputSaysSo() async throws {
        let text = try await Self.run(leaf: "leaf-ct-compliant", ["--ct-public-root", Self.root])
        #expect(text.status == 0, "\(text.stdout)\(text.stderr)")
        let section = try #require(text.section("Certificate Transparency:"), "\(text.stdout)")
        #expect(section.hasPrefix("Certificate Transparency: mode report-only"), "\(section)")
        #expect(section.contains("log list:  ShopKit's bundled list,"), "\(section)")
        #expect(section.contains(", 0 logs,"), "\(section)")
        #expect(section.contains("verdict:   not checked: the log list has no logs (ShopKit's bundled list has none: give a list with --ct-log-list FILE)"), "\(section)")
        #expect(section.contains("log not in the list"), "\(section)")

        let json = try await Self.run(leaf: "leaf-ct-compliant", ["--ct-public-root", Self.root, "--json"])
        let (_, ct) = try Self.json(json)
        #expect(ct["mode"] as? String == "report-only")
        #expect(ct["verdict"] as? String == "no-log-list")
        let list = try #require(ct["logList"] as? [String: Any])
        #expect(list["source"] as? String == "bundled")
        #expect(list["logs"] as? Int == 0)
    }

    /// Without --ct-public-root the test root is not public: the chain is exempt, even when enforced.
    @Test func aPrivateRootIsExempt() async throws {
        let outcome = try await Self.run(leaf: "leaf-ct-one-sct", ["--ct", "enforced", "--ct-log-list", Self.testList])
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("verdict:   exempt: the chain ends at a root that is not publicly trusted"), "\(outcome.stdout)")
    }

    @Test func disabledAsksForNoSCTs() async throws {
        let outcome = try await Self.run(leaf: "leaf-ct-one-sct", ["--ct", "disabled", "--json"] + Self.testLogs)
        #expect(outcome.status == 0)
        let (_, ct) = try Self.json(outcome)
        #expect(ct["verdict"] as? String == "not-checked")
        #expect((ct["scts"] as? [Any])?.isEmpty == true)
    }

    /// The fleet table has a CT column; an enforced refusal is the host's verdict and its exit code.
    @Test func theFleetTableShowsTheCTVerdict() async throws {
        let compliant = try await OpenSSLSServer.start(leafFiles: TestCertificates.ctLeafFiles("leaf-ct-compliant"), ["-tls1_3"])
        defer { compliant.stop() }
        let refused = try await OpenSSLSServer.start(leafFiles: TestCertificates.ctLeafFiles("leaf-ct-one-sct"), ["-tls1_3"])
        defer { refused.stop() }
        let hosts = try PinCheckBinary.temporaryFile(
            "localhost:\(compliant.port)\nlocalhost:\(refused.port)\n", suffix: ".txt")
        defer { try? FileManager.default.removeItem(at: hosts) }
        let outcome = try await PinCheckBinary.run(
            ["--hosts-file", hosts.path, "--ca-file", Self.root, "--ct", "enforced", "--timeout", "60"] + Self.testLogs)
        let lines = outcome.stdout.split(separator: "\n")
        #expect(lines.first?.contains("VERDICT") == true && lines.first?.contains(" CT ") == true, "\(outcome.stdout)")
        let rows = lines.dropFirst().dropLast().map { $0.split(separator: " ").map(String.init) }
        #expect(rows.count == 2, "\(outcome.stdout)")
        #expect(rows.first?[1] == "ok" && rows.first?[2] == "compliant", "\(outcome.stdout)")
        if Self.testListIsStale {
            #expect(outcome.status == 0)
            #expect(rows.last?[1] == "ok" && rows.last?[2] == "not-compliant", "\(outcome.stdout)")
        } else {
            #expect(outcome.status == 5, "\(outcome.stdout)\(outcome.stderr)")
            #expect(rows.last?[1] == "ct-not-compliant" && rows.last?[2] == "not-compliant", "\(outcome.stdout)")
        }
    }

    @Test func badCTOptionsAreUsageErrors() async throws {
        let mode = try await PinCheckBinary.run(["127.0.0.1:1", "--ct", "reportOnly"])
        #expect(mode.status == 64)
        let notAList = try await PinCheckBinary.run(["127.0.0.1:1", "--ct-log-list", Self.root])
        #expect(notAList.status == 64)
        #expect(notAList.stderr.contains("--ct-log-list \(Self.root): not a log list"), "\(notAList.stderr)")
        let withPEM = try await PinCheckBinary.run(["--pem", Self.root, "--ct", "enforced"])
        #expect(withPEM.status == 64)
    }
}

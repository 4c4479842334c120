import Foundation
import ShopKitInspector
import TestSupport
import Testing

/// Issue 39, defect 1: `pin-check --cert/--key` holds the library's promise. With a client identity the pins are
/// enforced inside the handshake, so a server whose verified chain matches no pin never receives the client
/// certificate; the report still shows the verified chain and the `pin-mismatch` verdict.
///
/// The server is a real `openssl s_server -Verify 1` that asks for a certificate from `client-ca`: its log has a
/// `verify return` line for each client certificate it receives.
@Suite(.timeLimit(.minutes(3))) struct PinCheckClientCertificatePinsTests {
    static func path(_ file: String) -> String { MutualTLSFixtures.path(file) }

    static func run(version: String, pins: [String], _ extra: [String] = []) async throws
        -> (PinCheckBinary.Outcome, log: String)
    {
        let server = try await OpenSSLSServer.start([version, "-Verify", "1", "-CAfile", path("client-ca.pem")])
        defer { server.stop() }
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", path("root.pem"), "--timeout", "60",
             "--cert", path("client-ecdsa-chain.pem"), "--key", path("client-ecdsa.key")]
                + pins.flatMap { ["--pin", TestCertificates.pin($0).description] } + extra)
        return (outcome, try await server.waitForExit())
    }

    static let chainPins = ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1", "root"].map {
        TestCertificates.pin($0).description
    }

    @Test(arguments: ["-tls1_3", "-tls1_2"])
    func aPinMismatchNeverSendsTheClientCertificateAndShowsTheChain(version: String) async throws {
        let (outcome, log) = try await Self.run(
            version: version, pins: ["other-leaf-localhost", "other-intermediate"], ["--json"])
        #expect(!log.contains("verify return"), "s_server received the client certificate:\n\(log)")
        #expect(!log.contains("shopkit-client-ecdsa"), "s_server received the client certificate:\n\(log)")
        #expect(outcome.status == 1, "stdout: \(outcome.stdout)\nstderr: \(outcome.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "pin-mismatch")
        let verified = try #require(object["verifiedChain"] as? [[String: Any]])
        #expect(verified.map { $0["pin"] as? String } == Self.chainPins)
        #expect(object["matchedPin"] is NSNull)
        let reason = try #require(object["reason"] as? String)
        #expect(reason.contains("Certificate pinning failure for localhost"))
        #expect(reason.contains("before the client certificate was sent"))
        let client = object["clientCertificate"] as? [String: Any]
        #expect(client == nil || client?["sent"] is NSNull, "the report claims a certificate was sent")
        // `null` said "the server asked for none", which is not what happened: a certificate was configured and
        // withheld because the pins refused the chain before the server's request (if any) was answered.
        let withheld = try #require(client, "clientCertificate is null: \(outcome.stdout)")
        #expect(withheld["requested"] is NSNull, "\(withheld)")
        #expect((withheld["withheld"] as? String)?.contains("the pins refused the server's chain") == true, "\(withheld)")
    }

    @Test(arguments: ["-tls1_3", "-tls1_2"])
    func theTextReportShowsTheVerifiedChainAndThePinsToUse(version: String) async throws {
        let (outcome, log) = try await Self.run(version: version, pins: ["other-leaf-localhost", "other-intermediate"])
        #expect(!log.contains("verify return"), "s_server received the client certificate:\n\(log)")
        #expect(outcome.status == 1, "stdout: \(outcome.stdout)\nstderr: \(outcome.stderr)")
        #expect(outcome.stdout.contains("Verified chain (leaf to root):"))
        #expect(outcome.stdout.contains("Verdict: pin-mismatch (exit 1)"))
        #expect(outcome.stdout.contains("  \(Self.chainPins[0])  CN=localhost"), "\(outcome.stdout)")
        #expect(!outcome.stdout.contains("Chain the server sent"))
        #expect(outcome.stdout.contains("Client certificate: not sent (the pins refused the server's chain"), "\(outcome.stdout)")
    }

    /// The refused handshake keeps the report's warnings: one pin given is still warned about.
    @Test func aSinglePinIsStillWarnedAboutWhenThePinsRefuse() async throws {
        let (outcome, log) = try await Self.run(version: "-tls1_3", pins: ["other-leaf-localhost"])
        #expect(!log.contains("verify return"), "s_server received the client certificate:\n\(log)")
        #expect(outcome.status == 1, "stdout: \(outcome.stdout)\nstderr: \(outcome.stderr)")
        #expect(outcome.stdout.contains("warning: only one pin given: add a backup pin"), "\(outcome.stdout)")
    }

    /// The refused handshake keeps the chain's own warnings too: a leaf that expires within 30 days (the clock is
    /// injected; OpenSSL's own check uses the real time, so the chain still verifies). Two pins, so the single-pin
    /// warning stays out of it.
    @Test func aLeafExpiringSoonIsStillWarnedAboutWhenThePinsRefuse() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let date = try #require(ISO8601DateFormatter().date(from: "2045-12-21T00:00:00Z"))
        var inspector = ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port), serverName: "localhost",
            pins: [TestCertificates.pin("other-leaf-localhost"), TestCertificates.pin("other-intermediate")],
            trustAnchorsPEM: TestCertificates.certificate("root"), timeout: .seconds(60), now: { date })
        inspector.clientIdentity = try MutualTLSFixtures.pemIdentity("client-ecdsa")
        let report: ServerReport
        do { report = try await inspector.inspect() } catch {
            try await server.shutdown()
            throw error
        }
        try await server.shutdown()
        #expect(report.verdict == .pinMismatch)
        #expect(report.reason?.contains("before the client certificate was sent") == true, "\(report.reason ?? "")")
        #expect(report.verifiedChain.map(\.pin) == Self.chainPins)
        #expect(
            report.warnings.contains { $0.contains("expires within 30 days, in 10 days") }, "warnings: \(report.warnings)")
        #expect(!report.warnings.contains { $0.contains("only one pin given") }, "warnings: \(report.warnings)")
    }

    /// The control: with a matching pin the same server receives and verifies the certificate, so the absence of
    /// `verify return` above means something.
    @Test(arguments: ["-tls1_3", "-tls1_2"])
    func aMatchingPinSendsTheClientCertificate(version: String) async throws {
        let (outcome, log) = try await Self.run(version: version, pins: ["intermediate-2", "other-intermediate"], ["--json"])
        #expect(outcome.status == 0, "stdout: \(outcome.stdout)\nstderr: \(outcome.stderr)")
        #expect(log.contains("verify return"), "s_server did not verify the client certificate:\n\(log)")
        #expect(outcome.verdict == "ok")
    }
}

import Foundation
import TestSupport
import Testing

/// `pin-check --cert FILE --key FILE` against a real nginx that demands a client certificate.
@Suite("pin-check with a client certificate", .timeLimit(.minutes(3)))
struct PinCheckMutualTLSTests {
    static func path(_ file: String) -> String { MutualTLSFixtures.path(file) }

    static func run(_ extra: [String]) async throws -> (BuiltBinary.Outcome, [String: Any]?) {
        let nginx = try MutualTLSFixtures.startNginx()
        defer { nginx.stop() }
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(nginx.port)", "--servername", "localhost", "--ca-file", path("root.pem")] + extra)
        let object = try? JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        return (outcome, object)
    }

    @Test("with --cert and --key the check passes and the JSON shows the request and the certificate sent")
    func withIdentity() async throws {
        let (outcome, json) = try await Self.run(
            ["--cert", Self.path("client-ecdsa-chain.pem"), "--key", Self.path("client-ecdsa.key"), "--json"])
        #expect(outcome.status == 0, "stderr: \(outcome.stderr)")
        let object = try #require(json)
        #expect(object["verdict"] as? String == "ok")
        let client = try #require(object["clientCertificate"] as? [String: Any])
        #expect(client["acceptedIssuers"] as? [String] == [MutualTLSFixtures.clientCA])
        #expect(client["sent"] as? String == "O=ShopKit Test,CN=shopkit-client-ecdsa")
        #expect((object["verifiedChain"] as? [Any])?.count == 4)
    }

    @Test("without a client certificate: connect-failed (exit 4) naming the accepted CAs and the options to pass")
    func withoutIdentity() async throws {
        let (outcome, json) = try await Self.run(["--json"])
        #expect(outcome.status == 4, "stderr: \(outcome.stderr)")
        let object = try #require(json)
        #expect(object["verdict"] as? String == "connect-failed")
        let reason = try #require(object["reason"] as? String)
        #expect(reason.contains(MutualTLSFixtures.clientCA) && reason.contains("--cert FILE --key FILE"))
        let client = try #require(object["clientCertificate"] as? [String: Any])
        #expect(client["acceptedIssuers"] as? [String] == [MutualTLSFixtures.clientCA])
        #expect(client["sent"] is NSNull)
        // The server's chain was verified before it asked: the presented chain is shown.
        #expect((object["presentedChain"] as? [Any])?.isEmpty == false)
    }

    @Test("text output names the request; an expired certificate is refused with exit 4")
    func expiredIdentityText() async throws {
        let (outcome, _) = try await Self.run(
            ["--cert", Self.path("client-expired-chain.pem"), "--key", Self.path("client-expired.key")])
        #expect(outcome.status == 4, "stderr: \(outcome.stderr)")
        #expect(outcome.stdout.contains("Client certificate: requested (accepted issuers: \(MutualTLSFixtures.clientCA)); sent: none"))
        #expect(outcome.stdout.contains("expired on 2021-01-01"))
    }

    @Test("--cert and --key are usage errors (64) alone, unreadable, or not matching", arguments: [
        (["--cert", "CHAIN"], "--cert and --key go together"),
        (["--key", "KEY"], "--cert and --key go together"),
        (["--cert", "/nonexistent.pem", "--key", "KEY"], "cannot read the client certificate file /nonexistent.pem"),
        (["--cert", "CHAIN", "--key", "RSAKEY"], "does not belong to the first certificate"),
    ])
    func usageErrors(extra: [String], message: String) async throws {
        let resolved = extra.map {
            switch $0 {
            case "CHAIN": return Self.path("client-ecdsa-chain.pem")
            case "KEY": return Self.path("client-ecdsa.key")
            case "RSAKEY": return Self.path("client-rsa.key")
            default: return $0
            }
        }
        let outcome = try await PinCheckBinary.run(["localhost"] + resolved)
        #expect(outcome.status == 64, "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
    }

    @Test("--cert does not apply to --pem")
    func certWithPEM() async throws {
        let outcome = try await PinCheckBinary.run(
            ["--pem", Self.path("root.pem"), "--cert", Self.path("client-ecdsa-chain.pem"), "--key", Self.path("client-ecdsa.key")])
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains("--cert does not apply to --pem"), "stderr: \(outcome.stderr)")
    }
}

import Foundation
import TestSupport
import Testing

/// `pin-check` against the static-RSA-only nginx: refused by default, connected and warned about with
/// `--allow-static-rsa`.
@Suite(.timeLimit(.minutes(3))) struct PinCheckLegacyKeyExchangeTests {
    static func run(_ extra: [String]) async throws -> PinCheckBinary.Outcome {
        let nginx = try NginxServer.tls12RSA(ciphers: "AES128-SHA256")
        defer { nginx.stop() }
        let caFile = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        return try await PinCheckBinary.run(
            ["127.0.0.1:\(nginx.port)", "--servername", "localhost", "--ca-file", caFile.path] + extra)
    }

    @Test func theDefaultRefusesAndTheOptInReportsIt() async throws {
        let refused = try await Self.run([])
        #expect(refused.status != 0)
        let allowed = try await Self.run(["--allow-static-rsa"])
        #expect(allowed.status == 0)
        #expect(allowed.stdout.contains("cipher AES128-SHA256"))
        #expect(allowed.stdout.contains("warning: the server uses static RSA key exchange (AES128-SHA256): no forward secrecy"))
    }
}

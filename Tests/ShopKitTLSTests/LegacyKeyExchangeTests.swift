import Foundation
import ShopKitTLS
import TestSupport
import Testing

/// Issue 25, defect 6: TLS 1.2 without forward secrecy. A real nginx on 127.0.0.1 speaking TLS 1.2 with static RSA
/// key exchange only (`AES128-SHA256`, `kRSA`): the default client (ECDHE with AEAD suites only) refuses it; the
/// explicit opt-in `allowsStaticRSAKeyExchange` connects.
@Suite(.timeLimit(.minutes(3))) struct LegacyKeyExchangeTests {
    static func startNginx(ciphers: String) throws -> NginxServer {
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-rsa-chain-\(UUID()).pem")
        try TestCertificates.standardChain(leaf: "leaf-localhost-rsa").write(to: chain, atomically: true, encoding: .utf8)
        return try NginxServer(
            configuration: .init(
                certificateChainPath: chain.path,
                privateKeyPath: TestCertificates.directory.appendingPathComponent("leaf-localhost-rsa.key").path,
                protocols: "TLSv1.2", ciphers: ciphers))
    }

    @Test func theDefaultRefusesAServerWithStaticRSAKeyExchangeOnly() async throws {
        let nginx = try Self.startNginx(ciphers: "AES128-SHA256")
        defer { nginx.stop() }
        let context = try TLSClientContext(configuration: Probe.configuration())
        #expect(!context.configuration.allowsStaticRSAKeyExchange)
        do {
            let result = try await Probe.get(context: context, port: nginx.port)
            Issue.record("connected without forward secrecy: \(result.info.cipherSuite)")
        } catch let error as TLSError {
            guard error.code == .handshakeFailed else {
                Issue.record("expected a handshake failure, got \(error)")
                return
            }
        }
    }

    @Test func theOptInConnectsToIt() async throws {
        let nginx = try Self.startNginx(ciphers: "AES128-SHA256")
        defer { nginx.stop() }
        var configuration = try Probe.configuration()
        configuration.allowsStaticRSAKeyExchange = true
        let result = try await Probe.get(context: TLSClientContext(configuration: configuration), port: nginx.port)
        #expect(result.info.cipherSuite == "AES128-SHA256")
        #expect(result.info.protocolVersion == "TLSv1.2")
    }

    /// ECDHE with a CBC suite has forward secrecy but no AEAD: refused by default too.
    @Test func theDefaultRefusesECDHEWithCBC() async throws {
        let nginx = try Self.startNginx(ciphers: "ECDHE-RSA-AES128-SHA256")
        defer { nginx.stop() }
        await #expect(throws: TLSError.self) {
            try await Probe.get(context: TLSClientContext(configuration: Probe.configuration()), port: nginx.port)
        }
    }

    /// The default still speaks to an ordinary TLS 1.2 server.
    @Test func theDefaultConnectsWithECDHEAndAEAD() async throws {
        let nginx = try Self.startNginx(ciphers: "ECDHE-RSA-AES128-GCM-SHA256")
        defer { nginx.stop() }
        let result = try await Probe.get(context: TLSClientContext(configuration: Probe.configuration()), port: nginx.port)
        #expect(result.info.cipherSuite == "ECDHE-RSA-AES128-GCM-SHA256")
    }
}

/// `pin-check` against the static-RSA-only nginx: refused by default, connected and warned about with
/// `--allow-static-rsa`.
@Suite(.timeLimit(.minutes(3))) struct PinCheckLegacyKeyExchangeTests {
    static func run(_ extra: [String]) async throws -> PinCheckBinary.Outcome {
        let nginx = try LegacyKeyExchangeTests.startNginx(ciphers: "AES128-SHA256")
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

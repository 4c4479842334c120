import Foundation
import ShopKitTLS
import TestSupport
import Testing

/// Issue 25, defect 6: TLS 1.2 without forward secrecy. A real nginx on 127.0.0.1 speaking TLS 1.2 with static RSA
/// key exchange only (`AES128-SHA256`, `kRSA`): the default client (ECDHE with AEAD suites only) refuses it; the
/// explicit opt-in `allowsStaticRSAKeyExchange` connects.
@Suite(.timeLimit(.minutes(3))) struct LegacyKeyExchangeTests {
    static func startNginx(ciphers: String) throws -> NginxServer { try NginxServer.tls12RSA(ciphers: ciphers) }

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

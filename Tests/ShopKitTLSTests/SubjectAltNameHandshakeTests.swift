import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// Certificates with every subjectAltName kind, over real sockets: the verified chain of an accepted server
/// and the presented chain of a refused one both show the names, and reading them never crashes.
@Suite(.timeLimit(.minutes(3))) struct SubjectAltNameHandshakeTests {
    static let expected = [
        "localhost", "127.0.0.1", "email:ops@example.test", "URI:https://shop.example.test/",
        "othername:1.3.6.1.4.1.311.20.2.3", "DirName:CN=ShopKit Directory Name,O=ShopKit Test", "RID:1.2.3.4",
    ]

    @Test func trustedHandshakeShowsTheNames() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-san-kinds", "intermediate-2", "intermediate-1"], key: "leaf-san-kinds")
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(
            configuration: Probe.configuration(pins: ["leaf-san-kinds", "backup-intermediate"]))
        let result = try await Probe.get(context: context, port: server.port)
        #expect(result.body == "hello")
        #expect(result.info.verifiedChain.leaf?.subjectAlternativeNames == Self.expected)
        #expect(result.info.presentedChain?.certificates.first?.subjectAlternativeNames == Self.expected)
    }

    @Test func refusedServersPresentedChainShowsTheNames() async throws {
        let server = try await LoopbackTLSServer.start(chain: ["self-signed-san-kinds"], key: "self-signed-san-kinds")
        defer { Task { try? await server.shutdown() } }
        let inspector = ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port), serverName: "localhost",
            trustAnchorsPEM: TestCertificates.certificate("root"), timeout: .seconds(60))
        let report = try await inspector.inspect()
        #expect(report.verdict == .untrusted)
        #expect(report.verifiedChain.isEmpty)
        #expect(report.presentedChain.first?.subjectAlternativeNames == Self.expected)
    }
}

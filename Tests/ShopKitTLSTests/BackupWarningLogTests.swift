import Logging
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// The "no real backup" warning: logged at notice level after a full handshake whose pin set has every pin
/// on the verified chain, once per host and client context.
@Suite struct BackupWarningLogTests {
    private func context(pins: [String], capture: LogCapture) throws -> TLSClientContext {
        var configuration = try Probe.configuration(pins: pins)
        configuration.logger = capture.logger()
        configuration.sessionResumption = false  // every connection is a full handshake
        return try TLSClientContext(configuration: configuration)
    }

    private func warnings(_ capture: LogCapture) -> [String] {
        capture.records.filter { $0.level == .notice && $0.message.contains("no real backup") }.map(\.message)
    }

    @Test func pinSetWithoutARealBackupIsWarnedAboutOncePerHostAndContext() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let capture = LogCapture()
        // Both pins are on the current chain: replacing the leaf key and the intermediate would lock clients out.
        let context = try context(pins: ["leaf-localhost-ecdsa", "intermediate-2"], capture: capture)
        for _ in 0..<3 { _ = try await Probe.get(context: context, port: server.port) }
        #expect(server.fullHandshakes == 3)
        let logged = warnings(capture)
        #expect(logged.count == 1)
        #expect(logged.first?.contains(TestCertificates.pin("intermediate-2").description) == true)

        // Another context (another transport) warns once again.
        let other = LogCapture()
        _ = try await Probe.get(context: try self.context(pins: ["leaf-localhost-ecdsa", "intermediate-2"], capture: other), port: server.port)
        #expect(warnings(other).count == 1)
    }

    @Test func pinSetWithABackupIsNotWarnedAbout() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let capture = LogCapture()
        let context = try context(pins: ["leaf-localhost-ecdsa", "backup-intermediate"], capture: capture)
        _ = try await Probe.get(context: context, port: server.port)
        #expect(warnings(capture).isEmpty)
        #expect(capture.records.contains { $0.message == "pin matched" })
    }
}

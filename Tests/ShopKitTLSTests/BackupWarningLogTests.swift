import Foundation
import Logging
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// The "no real backup" warning: logged at notice level after a full handshake whose pin set has every pin
/// on the verified chain, once per host and client context.
@Suite(.timeLimit(.minutes(3))) struct BackupWarningLogTests {
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

    /// Issue 25, defect 5: the warning is about the set that applied. Of two `localhost` sets the first would win,
    /// but it has expired (and has no backup): the live second one applies, and it has a backup.
    @Test func anExpiredSetIsNotWarnedAboutWhenALiveSetApplies() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let capture = LogCapture()
        var configuration = try Probe.configuration()
        configuration.pinning = PinningPolicy(pinSets: [
            try PinSet(
                hostPattern: HostPattern("localhost"),
                pins: [TestCertificates.pin("leaf-localhost-ecdsa"), TestCertificates.pin("intermediate-2")],
                expiration: Date().addingTimeInterval(-60)),
            try PinSet(
                hostPattern: HostPattern("localhost"),
                pins: [TestCertificates.pin("intermediate-2"), TestCertificates.pin("backup-intermediate")]),
        ])
        configuration.logger = capture.logger()
        let result = try await Probe.get(context: TLSClientContext(configuration: configuration), port: server.port)
        #expect(result.info.pinVerdict == .matched(pin: TestCertificates.pin("intermediate-2"), certificateIndex: 1))
        #expect(warnings(capture).isEmpty, "warned about the expired set: \(warnings(capture))")
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

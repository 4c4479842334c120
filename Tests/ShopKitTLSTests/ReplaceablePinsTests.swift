import Foundation
import ShopKitInspector
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Pins replaced while checks run (`pin-check --hosts-file` reloads its pins file on SIGHUP): each check reads its
/// host's pins as it starts; a replacement reaches the checks that start after it, never one in flight.
@Suite(.timeLimit(.minutes(3))) struct ReplaceablePinsTests {
    static let matching = ["leaf-localhost-ecdsa", "backup-intermediate"].map(TestCertificates.pin)
    static let mismatching = ["other-root", "other-intermediate"].map(TestCertificates.pin)

    /// A hosts' pins file giving every port of 127.0.0.1 `pins`.
    static func file(_ pins: [SPKIPin]) throws -> HostPinsFile {
        try HostPinsFile(parsing: "[127.0.0.1]\n" + pins.map(\.description).joined(separator: "\n"))
    }

    static func server() async throws -> LoopbackTLSServer {
        try await LoopbackTLSServer.start(chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
    }

    @Test func oneInspectorUsesThePinsInForceWhenEachCheckStarts() async throws {
        let server = try await Self.server()
        let pins = ReplaceablePins(try Self.file(Self.matching))
        let inspector = ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port),
            trustAnchorsPEM: TestCertificates.certificate("root"), timeout: .seconds(60), replaceablePins: pins)

        let before = try await inspector.inspect()
        pins.replace(with: try Self.file(Self.mismatching))
        let after = try await inspector.inspect()
        try await server.shutdown()

        #expect(before.verdict == .ok)
        #expect(before.configuredPins == Self.matching.map(\.description))
        #expect(after.verdict == .pinMismatch)
        #expect(after.configuredPins == Self.mismatching.map(\.description))
    }

    @Test func aFleetCheckInFlightKeepsItsPinsAndTheNextOneUsesTheNewOnes() async throws {
        let server = try await Self.server()
        // The first host is the server behind a relay that holds its answer: that check is in flight while the
        // pins are replaced. With one check at a time, the second starts only after the first ends.
        let relay = try await HoldingRelay.start(to: server.port)
        let pins = ReplaceablePins(try Self.file(Self.matching))
        let fleet = FleetInspector(
            addresses: [ServerAddress(host: "127.0.0.1", port: relay.port), ServerAddress(host: "127.0.0.1", port: server.port)],
            pins: pins, trustAnchorsPEM: TestCertificates.certificate("root"), timeout: .seconds(150), concurrency: 1)
        let run = Task { () throws -> [Int: ServerReport] in
            var reports: [Int: ServerReport] = [:]
            try await fleet.run { index, report in reports[index] = report }
            return reports
        }
        try await relay.waitUntilHolding(1)
        pins.replace(with: try Self.file(Self.mismatching))
        relay.release(1)
        let reports = try await run.value
        await relay.stop()
        try await server.shutdown()

        #expect(reports[0]?.verdict == .ok)
        #expect(reports[0]?.configuredPins == Self.matching.map(\.description))
        #expect(reports[1]?.verdict == .pinMismatch)
        #expect(reports[1]?.configuredPins == Self.mismatching.map(\.description))
    }

    @Test func aReloadThatDoesNotParseKeepsThePinsAndNamesTheFileAndLine() throws {
        let pins = ReplaceablePins(try Self.file(Self.matching))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pins-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: url) }
        try "[127.0.0.1]\n\(Self.mismatching[0])\nnot-a-pin\n".write(to: url, atomically: true, encoding: .utf8)

        #expect {
            try pins.reload(fromFile: url.path)
        } throws: { error in
            guard case .malformed(let path, _)? = error as? PinsReloadError else { return false }
            return path == url.path && "\(error)".hasPrefix("\(url.path): line 3")
        }
        #expect(pins.current == (try Self.file(Self.matching)))
        #expect(throws: PinsReloadError.unreadable(path: url.path + ".missing")) { try pins.reload(fromFile: url.path + ".missing") }

        try "[127.0.0.1]\n\(Self.mismatching[0])\n\(Self.mismatching[1])\n".write(to: url, atomically: true, encoding: .utf8)
        #expect(try pins.reload(fromFile: url.path).sections.count == 1)
        #expect(pins.pins(for: ServerAddress(host: "127.0.0.1", port: 443)) == Self.mismatching)
    }
}

import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import TestSupport
import Testing
@testable import ShopKit

/// A local pin-set document file, applied again when it changes: real files, an injected clock and sleeper.
@Suite(.timeLimit(.minutes(3))) struct PinsFileWatcherTests {
    let clock = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
    let events = NIOLockedValueBox<[String]>([])
    let directory: String
    let signer = try! DocumentSigner()

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pins-watch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    var path: String { directory + "/pins.json" }

    func write(version: Int, expiresIn: TimeInterval = 86_400) throws {
        let now = clock.withLockedValue { $0 }
        let pins = ["leaf-localhost-ecdsa", "intermediate-\(version % 2 + 1)"].map { TestCertificates.pin($0).description }
        let json = signer.document(version: version, now: now, expiresAt: now + expiresIn, pinSets: [["host": "127.0.0.1", "pins": pins]])
        try TokenFileIO.atomicReplace(path, with: Array(json.utf8))
    }

    func transport() throws -> HTTPSTransport {
        let baseline = PinningPolicy(pinSets: [
            try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: ["leaf-localhost-ecdsa", "backup-intermediate"].map(TestCertificates.pin))
        ])
        return try HTTPSTransport(configuration: .init(tls: TLSClientConfiguration(pinning: baseline), timeouts: .wide()))
    }

    func watcher(_ transport: HTTPSTransport, sleep: @escaping @Sendable (Duration) async throws -> Void) -> PinsFileWatcher {
        let (events, clock) = (self.events, self.clock)
        return PinsFileWatcher(
            transport: transport, path: path, interval: .seconds(5),
            onEvent: { event in events.withLockedValue { $0.append("\(event)") } }, now: { clock.withLockedValue { $0 } }, sleep: sleep)
    }

    @Test func aChangedFileIsAppliedAgainAndARefusedOneChangesNothing() async throws {
        try write(version: 2)
        let transport = try transport()
        let versions = NIOLockedValueBox<[Int]>([])
        let sleeps = NIOLockedValueBox(0)
        let (write, path) = (self.writer, self.path)
        let watcher = watcher(transport) { _ in
            let count = sleeps.withLockedValue { $0 += 1; return $0 }
            versions.withLockedValue { $0.append(transport.pinning.version) }
            switch count {
            case 1: try write(3, 86_400)
            case 2: break  // unchanged: not read again
            case 3: try "{\"version\": 4}".write(toFile: path, atomically: true, encoding: .utf8)
            default: throw CancellationError()
            }
        }
        await watcher.run()
        #expect(versions.withLockedValue { $0 } == [2, 3, 3, 3])
        #expect(transport.pinning.version == 3)
        let reported = events.withLockedValue { $0 }
        #expect(reported.count == 3)
        #expect(reported.prefix(2) == ["pin-set document version 2 applied", "pin-set document version 3 applied"])
        // A file written with the default mode (0644) breaks the token store's file rules: refused, pins unchanged.
        #expect(reported.last?.hasPrefix("stored pin-set document ignored") == true)
        await transport.shutdown()
    }

    @Test func anExpiredFileFallsBackToTheBaselineAndAnOlderOneIsRefused() async throws {
        try write(version: 5, expiresIn: 60)
        let transport = try transport()
        let watcher = watcher(transport) { _ in }
        #expect(try await watcher.reload() == 5)
        clock.withLockedValue { $0 += 120 }
        try write(version: 4)
        await #expect(throws: PinSetDocumentError.notNewer(version: 4, current: 5)) { try await watcher.reload() }
        #expect(transport.pinning.version == 0)
        #expect(events.withLockedValue { $0 }.contains("pin-set document version 5 expired with no newer one: the baseline pins apply again"))
        await transport.shutdown()
    }
}

extension PinsFileWatcherTests {
    /// `write(version:expiresIn:)` as a sendable function for the sleeper.
    var writer: @Sendable (Int, TimeInterval) throws -> Void {
        let (clock, signer, path) = (self.clock, self.signer, self.path)
        return { version, expiresIn in
            let now = clock.withLockedValue { $0 }
            let pins = ["leaf-localhost-ecdsa", "intermediate-\(version % 2 + 1)"].map { TestCertificates.pin($0).description }
            let json = signer.document(version: version, now: now, expiresAt: now + expiresIn, pinSets: [["host": "127.0.0.1", "pins": pins]])
            try TokenFileIO.atomicReplace(path, with: Array(json.utf8))
        }
    }
}

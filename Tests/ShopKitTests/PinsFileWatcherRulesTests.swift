import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// Issue 38, defect 8: the watcher's fingerprint comes from the very file it read, and a refused file is tried
/// again when it may have become valid (its time came, or it was made safe), never every interval for nothing.
extension PinsFileWatcherTests {
    func watcher(
        _ transport: HTTPSTransport, sleep: @escaping @Sendable (Duration) async throws -> Void,
        afterRead: @escaping @Sendable () -> Void
    ) -> PinsFileWatcher {
        let (events, clock) = (self.events, self.clock)
        return PinsFileWatcher(
            transport: transport, path: path, interval: .seconds(5),
            onEvent: { event in events.withLockedValue { $0.append("\(event)") } }, now: { clock.withLockedValue { $0 } },
            sleep: sleep, afterRead: afterRead)
    }

    @Test func aFileSwappedWhileItIsReadIsReloaded() async throws {
        try write(version: 2)
        let transport = try transport()
        let (write, swapped, sleeps) = (writer, NIOLockedValueBox(false), NIOLockedValueBox(0))
        let watcher = watcher(transport) { _ in
            if sleeps.withLockedValue({ $0 += 1; return $0 }) >= 2 { throw CancellationError() }
        } afterRead: {
            // Right after the first read, version 3 replaces the file (an atomic rename, as deployments do).
            let first = swapped.withLockedValue { done in
                let first = !done
                done = true
                return first
            }
            if first { try? write(3, 86_400) }
        }
        await watcher.run()
        #expect(transport.pinning.version == 3)
        #expect(events.withLockedValue { $0 } == ["pin-set document version 2 applied", "pin-set document version 3 applied"])
        await transport.shutdown()
    }

    @Test func aFileIssuedInTheFutureIsAppliedOnceItsTimeComes() async throws {
        let now = clock.withLockedValue { $0 }
        let pins = ["leaf-localhost-ecdsa", "intermediate-1"].map { TestCertificates.pin($0).description }
        let json = signer.document(version: 2, now: now, issuedAt: now + 3600, expiresAt: now + 86_400, pinSets: [["host": "127.0.0.1", "pins": pins]])
        try TokenFileIO.atomicReplace(path, with: Array(json.utf8))
        let transport = try transport()
        let (clock, sleeps) = (self.clock, NIOLockedValueBox(0))
        let watcher = watcher(transport) { _ in
            switch sleeps.withLockedValue({ $0 += 1; return $0 }) {
            case 1: clock.withLockedValue { $0 += 3600 }
            default: throw CancellationError()
            }
        } afterRead: {}
        await watcher.run()
        #expect(transport.pinning.version == 2)
        let reported = events.withLockedValue { $0 }
        #expect(reported.count == 2)
        #expect(reported.first?.contains("in the future") == true)
        #expect(reported.last == "pin-set document version 2 applied")
        await transport.shutdown()
    }

    @Test func anUnsafeFileIsReportedOnceAndReadAgainWhenMadeSafe() async throws {
        try write(version: 2)
        #expect(chmod(path, 0o644) == 0)
        let transport = try transport()
        let (path, sleeps) = (self.path, NIOLockedValueBox(0))
        let watcher = watcher(transport) { _ in
            switch sleeps.withLockedValue({ $0 += 1; return $0 }) {
            case 1: break  // unchanged: not read again, not reported again
            case 2: _ = chmod(path, 0o600)  // made safe: only its ctime changes
            default: throw CancellationError()
            }
        } afterRead: {}
        await watcher.run()
        #expect(transport.pinning.version == 2)
        let reported = events.withLockedValue { $0 }
        #expect(reported.count == 2)
        #expect(reported.first?.hasPrefix("stored pin-set document ignored") == true)
        #expect(reported.last == "pin-set document version 2 applied")
        await transport.shutdown()
    }
}

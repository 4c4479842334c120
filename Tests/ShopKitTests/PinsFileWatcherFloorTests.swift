import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// The watcher as `PinUpdates` is: the document in force ends at its expiry by a timer of its own, and the
/// rollback floor is kept in a file that outlives the process.
extension PinsFileWatcherTests {
    /// A watcher whose expiry timer records the instant it waits for, then returns once `released` is true.
    func timedWatcher(
        _ transport: HTTPSTransport, requested: WaitableState<[Date]>, released: WaitableState<Bool>,
        seen: WaitableState<[String]>
    ) -> PinsFileWatcher {
        let (events, clock) = (self.events, self.clock)
        return PinsFileWatcher(
            transport: transport, path: path, interval: .seconds(5),
            onEvent: { event in
                events.withLockedValue { $0.append("\(event)") }
                seen.withLockedValue { $0.append("\(event)") }
            },
            now: { clock.withLockedValue { $0 } }, sleep: { _ in throw CancellationError() },
            sleepUntil: { date in
                requested.withLockedValue { $0.append(date) }
                try await released.wait(until: { $0 }, for: "the test to move the clock past the expiry")
            })
    }

    @Test func theDocumentInForceEndsAtItsExpiryWithoutAnotherCall() async throws {
        try write(version: 2, expiresIn: 60)
        let transport = try transport()
        let (requested, released, seen) = (WaitableState<[Date]>([]), WaitableState(false), WaitableState<[String]>([]))
        let watcher = timedWatcher(transport, requested: requested, released: released, seen: seen)
        #expect(try await watcher.reload() == 2)
        try await requested.wait(until: { !$0.isEmpty }, for: "the expiry timer to start")
        #expect(requested.withLockedValue { $0 } == [clock.withLockedValue { $0 } + 60])
        // Nobody calls reload() or run(): the timer alone puts the baseline back.
        clock.withLockedValue { $0 += 120 }
        released.withLockedValue { $0 = true }
        try await seen.wait(until: { $0.contains { $0.contains("version 2 expired") } }, for: "the expiry event")
        #expect(transport.pinning.version == 0)
        await transport.shutdown()
    }

    @Test func theRollbackFloorOutlivesTheProcess() async throws {
        try write(version: 5)
        let first = try transport()
        #expect(try await watcher(first) { _ in }.reload() == 5)
        await first.shutdown()
        #expect(try String(contentsOfFile: path + ".floor", encoding: .utf8) == "5\n")

        // A new process: the same document applies again, an older one (still valid) never does.
        let restarted = try transport()
        let watcher = watcher(restarted) { _ in }
        #expect(try await watcher.reload() == 5)
        let second = try transport()
        let again = self.watcher(second) { _ in }
        try write(version: 4)
        await #expect(throws: PinSetDocumentError.notNewer(version: 4, current: 5)) { try await again.reload() }
        #expect(second.pinning.version == 0)
        await restarted.shutdown()
        await second.shutdown()
    }

    @Test func aDocumentWhoseVersionCannotBeRecordedIsNotApplied() async throws {
        try write(version: 5)
        // A floor that is not the watcher's to trust: the file rules refuse it, and nothing is applied.
        try "5\n".write(toFile: path + ".floor", atomically: true, encoding: .utf8)
        #expect(chmod(path + ".floor", 0o644) == 0)
        let transport = try transport()
        await #expect(throws: CredentialError.self) { try await watcher(transport) { _ in }.reload() }
        #expect(transport.pinning.version == 0)
        await transport.shutdown()
    }
}

import NIOConcurrencyHelpers
import Foundation
import ShopKitAPI
import Testing
import TestSupport
@testable import ShopKitCredentials

/// A keyring write or delete that its timeout interrupts is reported as `.outcomeUnknown`, never `.unavailable`
/// (issue 16, item 13): the call may have been carried out, or may have completed just as the timer fired.
@Suite(.timeLimit(.minutes(3))) struct JobRaceTests {
    @Test func theJobAnswersWhenItFinishesFirst() {
        var race = JobRace()
        let started = race.start(), finished = race.finish(), timedOut = race.timeout()
        #expect(started && finished && timedOut == nil)
    }

    @Test func aTimeoutBeforeTheStartMeansNothingWasDone() {
        var race = JobRace()
        let timedOut = race.timeout(), started = race.start()
        #expect(timedOut == .neverStarted)
        #expect(!started)  // the job is skipped
    }

    @Test func aTimeoutWhileRunningInterruptsAndDropsTheLateResult() {
        var race = JobRace()
        let started = race.start(), timedOut = race.timeout(), finished = race.finish()
        #expect(started && timedOut == .interrupted)
        #expect(!finished)
    }

    @Test func onlyAnInterruptedChangeIsOfUnknownOutcome() {
        let write = JobEffect.changes("storing the item for s/a")
        guard let why = failureReason(of: LibSecretThread.timeoutError(.interrupted, effect: write, timeout: .seconds(5)), ifIs: .outcomeUnknown)
        else { Issue.record("an interrupted write must be outcomeUnknown"); return }
        #expect(why.contains("storing the item for s/a") && why.contains("may or may not have been made"))
        guard failureCode(of: LibSecretThread.timeoutError(.neverStarted, effect: write, timeout: .seconds(5))) == .unavailable else {
            Issue.record("a write that never started is unavailable"); return
        }
        guard failureCode(of: LibSecretThread.timeoutError(.interrupted, effect: .readOnly, timeout: .seconds(5))) == .unavailable else {
            Issue.record("an interrupted read is unavailable"); return
        }
    }
}

/// A timer the test fires by hand.
final class ManualJobTimer: JobTimer, Sendable {
    private let pending = NIOLockedValueBox<[@Sendable () -> Void]>([])
    private let scheduled = DispatchSemaphore(value: 0)

    func schedule(after timeout: Duration, _ fire: @escaping @Sendable () -> Void) {
        pending.withLockedValue { $0.append(fire) }
        scheduled.signal()
    }

    /// Blocks (call it off the cooperative pool) until a timeout has been scheduled.
    func waitUntilScheduled() { scheduled.wait() }

    /// Fires every scheduled timeout now.
    func fire() {
        for fire in pending.withLockedValue({ pending -> [@Sendable () -> Void] in defer { pending = [] }; return pending }) { fire() }
    }
}

@Suite(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason), .timeLimit(.minutes(3)))
struct KeyringTimeoutTests {
    /// A real write through the real job runner, whose injected timeout fires just after the Secret Service
    /// stored the item and before the job could answer: the caller hears "outcome unknown", and the item is there.
    @Test func writeThatSucceededAsItsTimeoutFiredIsOutcomeUnknown() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        let timer = ManualJobTimer()
        let body = KeyringItemBody(StoredCredential(tokens: AuthTokens(accessToken: "raced"), policy: .afterFirstUnlock), device: nil)
        let error = await credentialError { () throws(CredentialError) in
            try await LibSecretThread.shared.run(
                timeout: .seconds(60), effect: .changes("storing the item for \(key)"), timer: timer
            ) { session, cancellable throws(CredentialError) in
                try session.withReconnect { () throws(CredentialError) in
                    try KeyringStore.write(body, for: key, device: nil, unlock: false, session: session, cancellable: cancellable)
                }
                timer.fire()  // the deadline passes right as the write completes
            }
        }
        guard let why = failureReason(of: error, ifIs: .outcomeUnknown) else {
            Issue.record("expected outcomeUnknown, got \(String(describing: error))")
            return
        }
        #expect(why.contains("may or may not have been made"))
        let store = KeyringStore(timeout: .seconds(60))
        #expect(try await store.read(key)?.tokens == AuthTokens(accessToken: "raced"))
        try await store.delete(key)
    }

    /// Through the store's own write and delete: a timeout while the libsecret thread is busy with an earlier job
    /// (so the write never started) is `.unavailable`, and the write is skipped.
    @Test func writeTimedOutWhileQueuedIsUnavailableAndSkipped() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        let timer = ManualJobTimer()
        let store = KeyringStore(timeout: .seconds(60), allowUnlockPrompt: false, deviceID: nil, timer: timer)
        let blocker = DispatchSemaphore(value: 0)
        let busy = DispatchSemaphore(value: 0)
        // Occupy the libsecret thread until the test lets go.
        async let held: Void? = try? await LibSecretThread.shared.run(timeout: .seconds(600)) { _, _ in
            busy.signal()
            blocker.wait()
        }
        try await offPool("the keyring thread to be busy") { busy.wait() }
        async let write = credentialError { () throws(CredentialError) in
            try await store.write(StoredCredential(tokens: AuthTokens(accessToken: "late"), policy: .afterFirstUnlock), for: key)
        }
        try await offPool("the keyring timeout to be scheduled") { timer.waitUntilScheduled() }
        timer.fire()
        let error = await write
        blocker.signal()
        _ = await held
        guard failureCode(of: error) == .unavailable else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(try await KeyringStore(timeout: .seconds(60)).read(key) == nil)
    }

}

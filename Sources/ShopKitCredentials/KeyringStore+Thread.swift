import CLibSecret
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import ShopKitCore

/// Runs every libsecret call of the process on one dedicated serial thread.
///
/// libsecret's `_sync` calls block, and gnome-keyring misbehaves when sessions are opened concurrently, so all
/// ``KeyringStore``s share one `Thread` (never the cooperative pool) that takes jobs one at a time from a FIFO and
/// holds the one `SecretService` proxy. Each job gets a `GCancellable` that a Dispatch timer cancels after its
/// store's timeout; the caller's continuation is resumed by whichever comes first, the job or the timer, so a stuck
/// D-Bus call cannot hang the caller (jobs queued behind it time out the same way and are skipped). A write or
/// delete interrupted by its timer is reported as ``CredentialError/outcomeUnknown(_:)``, never as "unavailable".
final class LibSecretThread: Sendable {
    typealias Job = @Sendable (LibSecretSession) -> Void

    // Safe to share: `jobs` is read and written only while `condition` is locked.
    private nonisolated(unsafe) var jobs: [Job] = []
    private let condition = NSCondition()

    /// The process's libsecret thread, started on first use; it lives as long as the process.
    static let shared = LibSecretThread()

    private init() {
        let thread = Thread { [self] in self.loop(session: LibSecretSession()) }
        thread.name = "ShopKit.libsecret"
        thread.start()
    }

    private func enqueue(_ job: @escaping Job) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop(session: LibSecretSession) -> Never {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job(session)
        }
    }

    /// Runs `operation` on the thread with a cancellable that fires after `timeout`, suspending (not blocking)
    /// the caller.
    ///
    /// The caller is answered once, by the job or by the timer (``JobRace``). A timeout before the job started is
    /// ``CredentialError/unavailable(_:)`` (nothing was done). A timeout while a job that changes the keyring
    /// (`effect`) runs is ``CredentialError/outcomeUnknown(_:)``: its D-Bus call may have been carried out (or may
    /// have completed just as the timer fired), so "unavailable" would be a lie. `timer` is injectable for tests.
    func run<T: Sendable>(
        timeout: Duration,
        effect: JobEffect = .readOnly,
        timer: any JobTimer = DispatchJobTimer(),
        _ operation: @escaping @Sendable (LibSecretSession, Cancellable) throws(CredentialError) -> T
    ) async throws(CredentialError) -> T {
        let result: Result<T, CredentialError> = await withCheckedContinuation { continuation in
            let answer = JobAnswer(continuation)
            let cancellable = Cancellable()
            enqueue { session in
                guard answer.start() else { return }  // timed out while queued: the caller has moved on
                answer.finish(Result { () throws(CredentialError) in try operation(session, cancellable) })
            }
            timer.schedule(after: timeout) {
                // Answer first, then cancel: the cancelled call's own failure must not answer in the timer's place.
                answer.timeout { verdict in Self.timeoutError(verdict, effect: effect, timeout: timeout) }
                cancellable.cancel()
            }
        }
        return try result.get()
    }

    /// The error for a job its timer interrupted (or never let start).
    static func timeoutError(_ verdict: JobRace.Timeout, effect: JobEffect, timeout: Duration) -> CredentialError {
        let advice = "check that gnome-keyring-daemon or another Secret Service is running and responsive"
        switch (verdict, effect) {
        case (.neverStarted, _), (.interrupted, .readOnly):
            return .unavailable("the Secret Service did not answer within \(timeout) (D-Bus call cancelled); \(advice)")
        case (.interrupted, .changes(let what)):
            return .outcomeUnknown(
                "the Secret Service did not answer within \(timeout) while \(what) (D-Bus call cancelled); the change "
                    + "may or may not have been made: read the item back, or repeat the operation (it is idempotent), "
                    + "before relying on either; \(advice)")
        }
    }
}

/// Whether a job changes the keyring, which decides what a timeout means.
enum JobEffect: Sendable {
    /// Reads only (a read, a probe): a timeout leaves the keyring as it was.
    case readOnly
    /// Changes the keyring (a write, a delete), described for messages ("storing the item for s/a"): once it has
    /// started, a timeout leaves the outcome unknown.
    case changes(String)
}

/// Schedules the timeout of one libsecret job; injectable so tests can fire it at a chosen moment.
protocol JobTimer: Sendable {
    /// Calls `fire` once, after `timeout`.
    func schedule(after timeout: Duration, _ fire: @escaping @Sendable () -> Void)
}

/// The production timer: a Dispatch deadline on a global queue.
struct DispatchJobTimer: JobTimer {
    func schedule(after timeout: Duration, _ fire: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds, execute: fire)
    }
}

/// Who answers the caller of one job, the job or its timer: decided exactly once.
///
///     queued --start--> running --finish--> answered (the job's result)
///     queued --timeout--> answered (never started; the job is skipped)
///     running --timeout--> answered (interrupted; the job's later result is dropped)
struct JobRace {
    enum Phase: Equatable { case queued, running, answered }
    /// What the timer found when it fired.
    enum Timeout: Equatable {
        /// The job had not started: nothing was done.
        case neverStarted
        /// The job was running: it may have done its work.
        case interrupted
    }

    private(set) var phase = Phase.queued

    /// The job is about to run: `true` to run it, `false` when the timer already answered (skip it).
    mutating func start() -> Bool {
        guard phase == .queued else { return false }
        phase = .running
        return true
    }

    /// The job finished: whether its result answers the caller.
    mutating func finish() -> Bool {
        guard phase == .running else { return false }
        phase = .answered
        return true
    }

    /// The timer fired: what it interrupted, or `nil` when the job already answered.
    mutating func timeout() -> Timeout? {
        switch phase {
        case .queued:
            phase = .answered
            return .neverStarted
        case .running:
            phase = .answered
            return .interrupted
        case .answered:
            return nil
        }
    }
}

/// One job's ``JobRace`` and the caller's continuation, resumed exactly once.
private final class JobAnswer<T: Sendable>: Sendable {
    private struct State {
        var race = JobRace()
        var continuation: CheckedContinuation<Result<T, CredentialError>, Never>?
    }

    private let state: NIOLockedValueBox<State>

    init(_ continuation: CheckedContinuation<Result<T, CredentialError>, Never>) {
        state = NIOLockedValueBox(State(continuation: continuation))
    }

    func start() -> Bool { state.withLockedValue { $0.race.start() } }

    func finish(_ result: Result<T, CredentialError>) {
        let pending = state.withLockedValue { state -> CheckedContinuation<Result<T, CredentialError>, Never>? in
            guard state.race.finish() else { return nil }
            defer { state.continuation = nil }
            return state.continuation
        }
        pending?.resume(returning: result)
    }

    func timeout(_ error: (JobRace.Timeout) -> CredentialError) {
        let answered = state.withLockedValue { state -> (CheckedContinuation<Result<T, CredentialError>, Never>, JobRace.Timeout)? in
            guard let verdict = state.race.timeout(), let pending = state.continuation else { return nil }
            state.continuation = nil
            return (pending, verdict)
        }
        if let (pending, verdict) = answered { pending.resume(returning: .failure(error(verdict))) }
    }
}

/// Owns one `GCancellable`.
final class Cancellable: Sendable {
    // Safe to share: GLib documents g_cancellable_cancel and g_cancellable_is_cancelled as thread-safe, and the
    // pointer itself never changes; the reference is dropped once, in deinit.
    nonisolated(unsafe) let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = g_cancellable_new() }

    /// Cancels the libsecret call using it, if any.
    func cancel() { g_cancellable_cancel(pointer) }

    /// Whether the timer has fired.
    var isCancelled: Bool { g_cancellable_is_cancelled(pointer) != 0 }

    deinit { g_object_unref(pointer) }
}

extension Duration {
    /// The duration in seconds, for Dispatch.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

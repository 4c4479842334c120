import NIOConcurrencyHelpers

/// A value behind a lock that tasks can wait on, without polling or sleeping, until a predicate holds for it.
///
/// The test-support servers keep their counts and logs in one: their event-loop handlers or reader threads
/// change the value with ``withLockedValue(_:)``, and a test waits with ``wait(until:)``. After every
/// ``withLockedValue(_:)`` the waiters whose predicate now holds are removed under the lock and resumed after it
/// is released, so no continuation is resumed while the lock is held.
///
/// Every wait has a deadline (``TestDeadline/wait`` unless the test gives one) and hears cancellation (a test's
/// `.timeLimit`): either ends it with a ``WaitEnded`` that says what the test waited for and what it saw.
package final class WaitableState<State: Sendable>: Sendable {
    private struct Waiter: Sendable {
        let id: Int
        let predicate: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<WaitEnded.Reason?, Never>
    }

    private struct Storage: Sendable {
        var state: State
        var waiters: [Waiter] = []
        var lastWaiterID = 0

        /// Removes and returns the waiters whose predicate holds for the current state.
        mutating func takeSatisfied() -> [CheckedContinuation<WaitEnded.Reason?, Never>] {
            guard !waiters.isEmpty else { return [] }
            let state = self.state
            var ready: [CheckedContinuation<WaitEnded.Reason?, Never>] = []
            waiters.removeAll { waiter in
                guard waiter.predicate(state) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
    }

    private let box: NIOLockedValueBox<Storage>

    /// A value that nobody waits on yet.
    package init(_ state: State) {
        box = NIOLockedValueBox(Storage(state: state))
    }

    /// Reads or changes the value under the lock; then resumes, outside the lock, the waiters whose predicate
    /// holds for the value as `body` left it.
    ///
    /// `body` must not call back into this object (the lock is not reentrant).
    @discardableResult
    package func withLockedValue<Value>(_ body: (inout State) -> Value) -> Value {
        let (result, ready) = box.withLockedValue { storage in
            let result = body(&storage.state)
            return (result, storage.takeSatisfied())
        }
        for continuation in ready { continuation.resume(returning: nil) }
        return result
    }

    /// Returns once `predicate` holds for the value (at once when it already does). Throws ``WaitEnded`` when
    /// `timeout` passes first, or when the calling task is cancelled (already before the call or while waiting, as
    /// a test's `.timeLimit` does): the error names `what` the test waited for and the value it saw last (as
    /// `describe` writes it), so a test
    /// whose event never comes fails there, saying why, instead of hanging or going on with a stale value.
    ///
    /// `predicate` runs under the lock, on whichever thread changes the value: it must be quick and must not call
    /// back into this object.
    package func wait(
        until predicate: @escaping @Sendable (State) -> Bool, for what: String = "a condition on the state",
        timeout: Duration = TestDeadline.wait, describe: (State) -> String = { String(describing: $0) }
    ) async throws {
        let id: Int? = box.withLockedValue { storage in
            if predicate(storage.state) { return nil }
            storage.lastWaiterID += 1
            return storage.lastWaiterID
        }
        guard let id else { return }
        // The deadline: a task that removes the waiter and fails it, unless it was resumed first.
        let deadline = Task { [self] in
            try await Task.sleep(for: timeout)
            end(id, .timedOut(after: timeout))
        }
        defer { deadline.cancel() }
        let outcome: WaitEnded.Reason? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WaitEnded.Reason?, Never>) in
                // Task cancellation sets the flag before it runs `onCancel`, and both sides hold the lock: either
                // the flag is seen here, or `onCancel` finds the waiter added here.
                let ready: WaitEnded.Reason?? = box.withLockedValue { storage in
                    if predicate(storage.state) { return .some(nil) }
                    if Task.isCancelled { return .some(.cancelled) }
                    storage.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            end(id, .cancelled)
        }
        if let outcome {
            throw WaitEnded(reason: outcome, what: what, saw: describe(box.withLockedValue { $0.state }))
        }
    }

    /// Removes waiter `id`, if it still waits, and resumes it with `reason`.
    private func end(_ id: Int, _ reason: WaitEnded.Reason) {
        let waiter = box.withLockedValue { storage in
            storage.waiters.firstIndex { $0.id == id }.map { storage.waiters.remove(at: $0) }
        }
        waiter?.continuation.resume(returning: reason)
    }

    /// The tasks waiting now (for tests of this type).
    package var waiterCount: Int {
        box.withLockedValue { $0.waiters.count }
    }
}

/// How long tests wait for things that are not what they test.
///
/// The suites' time limits are 3 minutes, above every default here, so a wait that never ends fails with its own
/// message (what it waited for, what it saw) before the time limit cancels the test.
///
/// Wide on purpose: a test about pins, framing or proxies must not fail because a loaded machine took seconds to
/// do what an idle one does in milliseconds. A wait that reaches its deadline means the event never came.
package enum TestDeadline {
    /// The default deadline of every wait in TestSupport (server counts, gates, counters, child processes).
    package static let wait: Duration = .seconds(90)
    /// The default deadline of a child process (``BuiltBinary``), after which it is killed.
    package static let child: Duration = .seconds(120)
    /// How long a stopped server (``TiedChild``) may take to end on its stop signal before it is killed.
    package static let stopGrace: Duration = .seconds(10)
}

/// A wait that ended before its event came: what the test waited for, and the value it saw last.
package struct WaitEnded: Error, CustomStringConvertible {
    /// Why the wait ended.
    package enum Reason: Sendable, Equatable {
        /// Its deadline passed.
        case timedOut(after: Duration)
        /// The waiting task was cancelled (a test's time limit).
        case cancelled
    }

    /// Why the wait ended.
    package let reason: Reason
    /// What the test waited for.
    package let what: String
    /// The value it saw last.
    package let saw: String

    package var description: String {
        switch reason {
        case .timedOut(let after): "waited \(after) for \(what), and it never came; the last state seen: \(saw)"
        case .cancelled: "cancelled (the test's time limit?) while waiting for \(what); the last state seen: \(saw)"
        }
    }
}

import NIOConcurrencyHelpers

/// A value behind a lock that tasks can wait on, without polling or sleeping, until a predicate holds for it.
///
/// The test-support servers keep their counts and logs in one: their event-loop handlers or reader threads
/// change the value with ``withLockedValue(_:)``, and a test waits with ``wait(until:)``. After every
/// ``withLockedValue(_:)`` the waiters whose predicate now holds are removed under the lock and resumed after it
/// is released, so no continuation is resumed while the lock is held.
///
/// A wait returns, without throwing, when the waiting task is cancelled (a test's `.timeLimit`), so a test
/// whose event never comes fails on its next expectation instead of hanging.
package final class WaitableState<State: Sendable>: Sendable {
    private struct Waiter: Sendable {
        let id: Int
        let predicate: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct Storage: Sendable {
        var state: State
        var waiters: [Waiter] = []
        var lastWaiterID = 0

        /// Removes and returns the waiters whose predicate holds for the current state.
        mutating func takeSatisfied() -> [CheckedContinuation<Void, Never>] {
            guard !waiters.isEmpty else { return [] }
            let state = self.state
            var ready: [CheckedContinuation<Void, Never>] = []
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
        for continuation in ready { continuation.resume() }
        return result
    }

    /// Returns once `predicate` holds for the value (at once when it already does), or when the calling task is
    /// cancelled, already before the call or while waiting: then the waiter is removed and the wait returns
    /// without throwing, so a test whose event never comes fails on its next expectation instead of hanging.
    ///
    /// `predicate` runs under the lock, on whichever thread changes the value: it must be quick and must not call
    /// back into this object.
    package func wait(until predicate: @escaping @Sendable (State) -> Bool) async {
        let id: Int? = box.withLockedValue { storage in
            if predicate(storage.state) { return nil }
            storage.lastWaiterID += 1
            return storage.lastWaiterID
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Task cancellation sets the flag before it runs `onCancel`, and both sides hold the lock: either
                // the flag is seen here, or `onCancel` finds the waiter added here.
                let ready: Bool = box.withLockedValue { storage in
                    if Task.isCancelled || predicate(storage.state) { return true }
                    storage.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = box.withLockedValue { storage in
                storage.waiters.firstIndex { $0.id == id }.map { storage.waiters.remove(at: $0) }
            }
            waiter?.continuation.resume()
        }
    }

    /// The tasks waiting now (for tests of this type).
    package var waiterCount: Int {
        box.withLockedValue { $0.waiters.count }
    }
}

/// A one-shot latch: tasks wait until it is opened. Lets tests hold a stub response until they say so.
///
/// Waiting is cancellable: a cancelled waiter throws `CancellationError` at once, so a test can observe that a
/// decorator cancelled the request it was holding.
package actor Gate {
    private var isOpen = false
    private var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    private var nextID = 0

    /// Creates a closed gate.
    package init() {}

    /// Suspends until ``open()``; returns at once when already open. Throws `CancellationError` when the task
    /// is cancelled, and ``WaitEnded`` when the gate stays closed past `timeout`.
    package func wait(timeout: Duration = TestDeadline.wait) async throws {
        if isOpen { return }
        nextID += 1
        let id = nextID
        let deadline = Task {
            try await Task.sleep(for: timeout)
            self.expire(id, after: timeout)
        }
        defer { deadline.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters[id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancel(id) }
        }
    }

    /// Opens the gate and releases every waiter.
    package func open() {
        isOpen = true
        let released = waiters.values
        waiters.removeAll()
        for continuation in released { continuation.resume() }
    }

    private func expire(_ id: Int, after timeout: Duration) {
        waiters.removeValue(forKey: id)?.resume(
            throwing: WaitEnded(reason: .timedOut(after: timeout), what: "the gate to open", saw: "closed"))
    }

    private func cancel(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }
}

/// Counts events and lets a test wait until a number of them happened, without polling or sleeping.
package actor EventCounter {
    private nonisolated let events = WaitableState(0)

    /// Creates a counter at zero.
    package init() {}

    /// Events so far.
    package var count: Int { events.withLockedValue { $0 } }

    /// Records one event and wakes the waiters whose target is reached.
    package func increment() {
        events.withLockedValue { $0 += 1 }
    }

    /// Returns once at least `target` events happened; throws ``WaitEnded`` past `timeout` or when the waiting
    /// task is cancelled (a test's time limit).
    package nonisolated func wait(until target: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await events.wait(until: { $0 >= target }, for: "\(target) events", timeout: timeout)
    }
}

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

    /// Suspends until ``open()``; returns at once when already open.
    package func wait() async throws {
        if isOpen { return }
        nextID += 1
        let id = nextID
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

    private func cancel(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }
}

/// Counts events and lets a test wait until a number of them happened, without polling or sleeping.
package actor EventCounter {
    private let events = WaitableState(0)

    /// Creates a counter at zero.
    package init() {}

    /// Events so far.
    package var count: Int { events.withLockedValue { $0 } }

    /// Records one event and wakes the waiters whose target is reached.
    package func increment() {
        events.withLockedValue { $0 += 1 }
    }

    /// Returns once at least `target` events happened, or when the waiting task is cancelled (a test's time
    /// limit), so a test whose event never comes fails on its next expectation instead of hanging.
    package func wait(until target: Int) async {
        await events.wait { $0 >= target }
    }
}

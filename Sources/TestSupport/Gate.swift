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
    /// Events so far.
    package private(set) var count = 0
    private var waiters: [(id: Int, target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var lastID = 0

    /// Creates a counter at zero.
    package init() {}

    /// Records one event and wakes the waiters whose target is reached.
    package func increment() {
        count += 1
        let ready = waiters.filter { $0.target <= count }
        waiters.removeAll { $0.target <= count }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Returns once at least `target` events happened, or when the waiting task is cancelled (a test's time
    /// limit), so a test whose event never comes fails on its next expectation instead of hanging.
    package func wait(until target: Int) async {
        if count >= target { return }
        lastID += 1
        let id = lastID
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                } else {
                    waiters.append((id, target, continuation))
                }
            }
        } onCancel: {
            Task { await self.stopWaiting(id) }
        }
    }

    private func stopWaiting(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume()
    }
}

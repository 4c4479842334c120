/// Waits between retries. Injected so tests record the waits instead of sleeping (package access: a test seam;
/// an app's retries always wait with `Task.sleep`).
package protocol Sleeper: Sendable {
    /// Suspends for `duration`; throws `CancellationError` when the task is cancelled meanwhile.
    func sleep(for duration: Duration) async throws
}

/// The real ``Sleeper``: `Task.sleep`, which ends early with `CancellationError` on cancellation.
package struct TaskSleeper: Sleeper {
    /// Creates the sleeper.
    package init() {}

    /// `Task.sleep(for:)`.
    package func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

/// Draws the retry jitter factor. Injected so tests are deterministic (package access: a test seam).
package protocol RandomSource: Sendable {
    /// A value in `range`.
    func jitterFactor(in range: ClosedRange<Double>) -> Double
}

/// The real ``RandomSource``: the system random number generator.
package struct SystemRandomSource: RandomSource {
    /// Creates the source.
    package init() {}

    /// `Double.random(in:)`.
    package func jitterFactor(in range: ClosedRange<Double>) -> Double {
        Double.random(in: range)
    }
}

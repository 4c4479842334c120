/// Waits between retries. Injected so tests record the waits instead of sleeping.
public protocol Sleeper: Sendable {
    /// Suspends for `duration`; throws `CancellationError` when the task is cancelled meanwhile.
    func sleep(for duration: Duration) async throws
}

/// The real ``Sleeper``: `Task.sleep`, which ends early with `CancellationError` on cancellation.
public struct TaskSleeper: Sleeper {
    /// Creates the sleeper.
    public init() {}

    /// `Task.sleep(for:)`.
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

/// Draws the retry jitter factor. Injected so tests are deterministic.
public protocol RandomSource: Sendable {
    /// A value in `range`.
    func jitterFactor(in range: ClosedRange<Double>) -> Double
}

/// The real ``RandomSource``: the system random number generator.
public struct SystemRandomSource: RandomSource {
    /// Creates the source.
    public init() {}

    /// `Double.random(in:)`.
    public func jitterFactor(in range: ClosedRange<Double>) -> Double {
        Double.random(in: range)
    }
}

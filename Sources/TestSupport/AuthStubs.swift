import Foundation
import ShopKitAPI

/// A ``TokenStore`` in memory, counting saves and clears (ShopKitAPI's `InMemoryTokenStore` with counters).
public actor CountingTokenStore: TokenStore {
    /// The stored tokens.
    public private(set) var tokens: AuthTokens?
    /// How many times tokens were saved.
    public private(set) var saveCount = 0
    /// How many times tokens were cleared.
    public private(set) var clearCount = 0

    /// A store holding `tokens`.
    public init(_ tokens: AuthTokens? = nil) { self.tokens = tokens }

    /// The stored tokens.
    public func loadTokens() async throws -> AuthTokens? { tokens }

    /// Stores `tokens` and counts the save.
    public func saveTokens(_ tokens: AuthTokens) async throws {
        saveCount += 1
        self.tokens = tokens
    }

    /// Removes the tokens and counts the clear.
    public func clearTokens() async throws {
        clearCount += 1
        tokens = nil
    }
}

/// A ``TokenRefresher`` that counts calls and answers from a closure, optionally after a ``Gate`` opens.
public actor CountingRefresher: TokenRefresher {
    /// How many refreshes were requested.
    public private(set) var count = 0
    /// Counts refreshes as they start (before the gate), so a test can wait for one without polling.
    public nonisolated let started = EventCounter()
    private let gate: Gate?
    private let answer: @Sendable (AuthTokens) throws -> AuthTokens

    /// A refresher that returns `answer(tokens)`, waiting for `gate` first when given.
    public init(gate: Gate? = nil, answer: @escaping @Sendable (AuthTokens) throws -> AuthTokens) {
        self.gate = gate
        self.answer = answer
    }

    /// A refresher that always returns `tokens`.
    public init(returning tokens: AuthTokens, gate: Gate? = nil) {
        self.init(gate: gate) { _ in tokens }
    }

    /// Counts the call, waits for the gate if any, then answers.
    public func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        count += 1
        await started.increment()
        try await gate?.wait()
        return try answer(tokens)
    }
}

/// A ``SignOutObserver`` that records every sign-out.
public actor RecordingSignOutObserver: SignOutObserver {
    /// The reasons, in order.
    public private(set) var reasons: [SignOutReason] = []

    /// Creates an empty recorder.
    public init() {}

    /// Records `reason`.
    public func didSignOut(reason: SignOutReason) async { reasons.append(reason) }
}

/// A ``Sleeper`` that records the requested waits and returns at once (or throws if the task is cancelled).
public actor RecordingSleeper: Sleeper {
    /// The waits, in order.
    public private(set) var durations: [Duration] = []

    /// Creates an empty recorder.
    public init() {}

    /// Records `duration`; throws `CancellationError` if the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        durations.append(duration)
        try Task.checkCancellation()
    }
}

/// A ``RandomSource`` that always returns the same jitter factor (clamped into the range).
public struct FixedRandomSource: RandomSource {
    /// The factor returned.
    public let factor: Double

    /// A source returning `factor`.
    public init(_ factor: Double = 1) { self.factor = factor }

    /// The fixed factor, clamped into `range`.
    public func jitterFactor(in range: ClosedRange<Double>) -> Double {
        min(max(factor, range.lowerBound), range.upperBound)
    }
}

import Foundation
import ShopKitAPI

/// A ``TokenStore`` in memory, counting saves and clears (ShopKitAPI's `InMemoryTokenStore` with counters).
package actor CountingTokenStore: TokenStore {
    /// The stored tokens.
    package private(set) var tokens: AuthTokens?
    /// How many times tokens were saved.
    package private(set) var saveCount = 0
    /// How many times tokens were cleared.
    package private(set) var clearCount = 0

    /// A store holding `tokens`.
    package init(_ tokens: AuthTokens? = nil) { self.tokens = tokens }

    /// The stored tokens.
    package func loadTokens() async throws -> AuthTokens? { tokens }

    /// Stores `tokens` and counts the save.
    package func saveTokens(_ tokens: AuthTokens) async throws {
        saveCount += 1
        self.tokens = tokens
    }

    /// Removes the tokens and counts the clear.
    package func clearTokens() async throws {
        clearCount += 1
        tokens = nil
    }
}

/// A ``TokenRefresher`` that counts calls and answers from a closure, optionally after a ``Gate`` opens.
package actor CountingRefresher: TokenRefresher {
    /// How many refreshes were requested.
    package private(set) var count = 0
    /// Counts refreshes as they start (before the gate), so a test can wait for one without polling.
    package nonisolated let started = EventCounter()
    private let gate: Gate?
    private let answer: @Sendable (AuthTokens) throws -> AuthTokens

    /// A refresher that returns `answer(tokens)`, waiting for `gate` first when given.
    package init(gate: Gate? = nil, answer: @escaping @Sendable (AuthTokens) throws -> AuthTokens) {
        self.gate = gate
        self.answer = answer
    }

    /// A refresher that always returns `tokens`.
    package init(returning tokens: AuthTokens, gate: Gate? = nil) {
        self.init(gate: gate) { _ in tokens }
    }

    /// Counts the call, waits for the gate if any, then answers.
    package func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        count += 1
        await started.increment()
        try await gate?.wait()
        return try answer(tokens)
    }
}

/// A ``SignOutObserver`` that records every sign-out.
package actor RecordingSignOutObserver: SignOutObserver {
    /// The reasons, in order.
    package private(set) var reasons: [SignOutReason] = []

    /// Creates an empty recorder.
    package init() {}

    /// Records `reason`.
    package func didSignOut(reason: SignOutReason) async { reasons.append(reason) }
}

/// A ``Sleeper`` that records the requested waits and returns at once (or throws if the task is cancelled).
package actor RecordingSleeper: Sleeper {
    /// The waits, in order.
    package private(set) var durations: [Duration] = []

    /// Creates an empty recorder.
    package init() {}

    /// Records `duration`; throws `CancellationError` if the task is cancelled.
    package func sleep(for duration: Duration) async throws {
        durations.append(duration)
        try Task.checkCancellation()
    }
}

/// A ``RandomSource`` that always returns the same jitter factor (clamped into the range).
package struct FixedRandomSource: RandomSource {
    /// The factor returned.
    package let factor: Double

    /// A source returning `factor`.
    package init(_ factor: Double = 1) { self.factor = factor }

    /// The fixed factor, clamped into `range`.
    package func jitterFactor(in range: ClosedRange<Double>) -> Double {
        min(max(factor, range.lowerBound), range.upperBound)
    }
}

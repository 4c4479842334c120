/// When and how often ``RetryMiddleware`` retries, and how long it waits in between.
///
/// The wait before retry *n* (n = 1 for the second attempt) is a pure function of *n* and the jitter factor:
/// first the backoff `backoff(n) = min(maxDelay, baseDelay × 2^(n−1))` (`backoff(beforeRetry:)`), then the
/// wait `min(maxDelay, backoff(n) × jitter)` (`delay(beforeRetry:jitterFactor:)`), with `jitter` drawn from
/// ``jitter``. With the defaults (base 200 ms, max 10 s, jitter 0.8…1.2):
///
/// | retry n | attempt | backoff (before jitter) | wait (after jitter) |
/// |---------|---------|-------------------------|---------------------|
/// | 1       | 2nd     | 0.2 s                   | 0.16–0.24 s         |
/// | 2       | 3rd     | 0.4 s                   | 0.32–0.48 s         |
/// | 3       | 4th     | 0.8 s                   | 0.64–0.96 s         |
/// | 4       | 5th     | 1.6 s                   | 1.28–1.92 s         |
/// | 5       | 6th     | 3.2 s                   | 2.56–3.84 s         |
/// | 6       | 7th     | 6.4 s                   | 5.12–7.68 s         |
/// | 7+      | 8th+    | 10 s (capped)           | 8–10 s              |
///
/// The backoff is capped before jitter, so from retry 7 on jitter can only shorten the wait. The default
/// ``maxAttempts`` of 3 uses retries 1 and 2 only. A `Retry-After` header replaces the backoff and jitter for
/// that wait, still capped by ``maxDelay``.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in total, including the first; `1` disables retries.
    public var maxAttempts: Int
    /// The wait before the first retry, before jitter.
    public var baseDelay: Duration
    /// The longest wait: caps the backoff before jitter, the wait after jitter, and `Retry-After`.
    public var maxDelay: Duration
    /// Response statuses that are retried (for idempotent requests).
    public var retryableStatuses: Set<Int>
    /// The multiplicative jitter range; `1...1` disables jitter.
    public var jitter: ClosedRange<Double>

    /// The statuses retried by default: 408, 429, 500, 502, 503, 504 (package access: `RetryPolicy()
    /// .retryableStatuses` is the same set).
    package static let defaultRetryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// The default policy, `RetryPolicy()` (package access: the tests' shorthand).
    package static let `default` = RetryPolicy()

    /// A policy that never retries: `RetryPolicy(maxAttempts: 1)` (package access: the tests' shorthand).
    package static let never = RetryPolicy(maxAttempts: 1)

    /// Creates a policy; out-of-range values are clamped (at least one attempt, non-negative delays and jitter).
    /// `RetryPolicy()` is the default: 3 attempts, 200 ms base, 10 s max, statuses 408, 429, 500, 502, 503 and
    /// 504, jitter 0.8…1.2.
    public init(
        maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10),
        retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504], jitter: ClosedRange<Double> = 0.8...1.2
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = max(.zero, baseDelay)
        self.maxDelay = max(.zero, maxDelay)
        self.retryableStatuses = retryableStatuses
        self.jitter = max(0, jitter.lowerBound)...max(0, jitter.upperBound)
    }

    /// The backoff before retry `retry` (1-based) before jitter: `min(maxDelay, baseDelay × 2^(retry−1))`.
    ///
    /// Exact `Duration` arithmetic: doubling stops at the cap, so huge attempt numbers neither overflow nor loop.
    package func backoff(beforeRetry retry: Int) -> Duration {
        guard baseDelay > .zero else { return .zero }
        var delay = baseDelay
        var doublings = max(0, retry - 1)
        while doublings > 0, delay < maxDelay {
            delay *= 2
            doublings -= 1
        }
        return min(delay, maxDelay)
    }

    /// The wait before retry `retry` with the jitter factor `factor` applied, capped by ``maxDelay``.
    package func delay(beforeRetry retry: Int, jitterFactor factor: Double) -> Duration {
        let backoff = backoff(beforeRetry: retry)
        guard factor.isFinite, factor > 0 else { return .zero }
        // Multiply in seconds, then cap before converting back, so a large factor cannot overflow Duration.
        let seconds = backoff.inSeconds * factor
        guard seconds < maxDelay.inSeconds else { return maxDelay }
        return min(maxDelay, backoff * factor)
    }

    /// `Retry-After`'s delay capped by ``maxDelay``.
    package func delay(retryAfter: Duration) -> Duration {
        min(maxDelay, max(.zero, retryAfter))
    }
}

extension Duration {
    /// The duration in seconds as a `Double`.
    var inSeconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}

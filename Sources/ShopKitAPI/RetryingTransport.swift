import Foundation
import HTTPTypes
import OpenAPIRuntime
@_exported import ShopKitCore

extension APIError: RetryClassifiableError {
    /// Always `false`: an ``APIError`` from below (e.g. the auth decorator's `unauthorized`) is a final answer.
    public var isRetryable: Bool { false }
}

extension ResponseBodyTooLargeError: RetryClassifiableError {
    /// Always `false`: the same response would be just as large.
    public var isRetryable: Bool { false }
}

/// Retries failed requests that are safe to send again, with exponential backoff and jitter.
///
/// A request is retried only when all of these hold:
/// - its method is idempotent (GET, HEAD, PUT, DELETE, OPTIONS) or it carries an `Idempotency-Key` header;
/// - its body is absent or can be iterated more than once (`HTTPBody.iterationBehavior == .multiple`);
/// - the attempt failed with a transport error that is not ``RetryClassifiableError`` saying no (and not
///   cancellation), or with a status in ``RetryPolicy/retryableStatuses``; other 4xx are never retried, and
///   decoding errors never reach this layer;
/// - attempts remain.
///
/// The wait is ``RetryPolicy``'s backoff, or the response's `Retry-After` (seconds or HTTP-date, resolved with
/// the injected clock), both capped by ``RetryPolicy/maxDelay``. Cancellation is checked before every attempt and
/// every sleep. Sits on top of the chain so a retry goes through auth again.
public struct RetryingTransport: ClientTransport {
    /// The transport that carries each attempt.
    public let upstream: any ClientTransport
    /// When and how long to retry.
    public let policy: RetryPolicy
    /// Waits between attempts.
    public let sleeper: any Sleeper
    /// Draws the jitter factor.
    public let random: any RandomSource
    /// The current time, for `Retry-After` HTTP-dates.
    public let now: @Sendable () -> Date

    /// Creates the decorator.
    public init(
        wrapping upstream: any ClientTransport, policy: RetryPolicy = .default, sleeper: any Sleeper = TaskSleeper(),
        random: any RandomSource = SystemRandomSource(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.upstream = upstream
        self.policy = policy
        self.sleeper = sleeper
        self.random = random
        self.now = now
    }

    /// Sends `request`, retrying as described on the type; returns the last response or throws the last error.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let retriable = Self.mayRetry(request, body: body)
        var attempt = 1
        while true {
            try Task.checkCancellation()
            let wait: Duration
            do {
                let (response, responseBody) = try await upstream.send(
                    request, body: body, baseURL: baseURL, operationID: operationID)
                guard retriable, attempt < policy.maxAttempts,
                    policy.retryableStatuses.contains(response.status.code)
                else { return (response, responseBody) }
                wait = delay(beforeRetry: attempt, response: response)
                // The body of a response we are not going to return is dropped unread.
            } catch {
                guard retriable, attempt < policy.maxAttempts, Self.isRetryable(error) else { throw error }
                wait = policy.delay(beforeRetry: attempt, jitterFactor: random.jitterFactor(in: policy.jitter))
            }
            try Task.checkCancellation()
            try await sleeper.sleep(for: wait)
            attempt += 1
        }
    }

    /// Whether `request` may be sent more than once at all (method or `Idempotency-Key`, replayable body).
    static func mayRetry(_ request: HTTPRequest, body: HTTPBody?) -> Bool {
        guard body.isReplayable else { return false }
        let idempotent: Set<HTTPRequest.Method> = [.get, .head, .put, .delete, .options]
        return idempotent.contains(request.method) || request.headerFields[.idempotencyKey] != nil
    }

    /// Whether a thrown error is worth another attempt.
    static func isRetryable(_ error: any Error) -> Bool {
        if error is CancellationError || Task.isCancelled { return false }
        if let classified = error as? any RetryClassifiableError { return classified.isRetryable }
        return true
    }

    /// `Retry-After` (capped) when the response has a valid one, else the jittered backoff.
    func delay(beforeRetry retry: Int, response: HTTPResponse) -> Duration {
        if let value = response.headerFields[.retryAfter], let requested = RetryAfter.delay(from: value, now: now()) {
            return policy.delay(retryAfter: requested)
        }
        return policy.delay(beforeRetry: retry, jitterFactor: random.jitterFactor(in: policy.jitter))
    }
}

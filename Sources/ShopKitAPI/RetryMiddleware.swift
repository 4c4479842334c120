import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime
import ShopKitCore

/// Retries failed requests that are safe to send again, with exponential backoff and jitter.
///
/// This is the retry logic itself, as a swift-openapi-runtime `ClientMiddleware`: give it to a generated
/// client's `Client(serverURL:transport:middlewares:)` or ``APIClient``'s `middlewares`, first in the array
/// (outermost).
///
/// A request is retried only when all of these hold:
/// - its method is idempotent (GET, HEAD, PUT, DELETE, OPTIONS, TRACE: RFC 9110 §9.2.2, the one list the
///   transport's stale-connection resend uses too) or it carries an `Idempotency-Key` header;
/// - its body is absent or can be iterated more than once (`HTTPBody.iterationBehavior == .multiple`);
/// - the attempt failed with an error that is not `RetryClassifiableError` saying no (and not cancellation),
///   or with a status in ``RetryPolicy/retryableStatuses``; other 4xx are never retried, and decoding errors
///   never reach this layer. An error that a generated client wrapped in OpenAPIRuntime's `ClientError` (as it
///   wraps whatever an inner middleware or the transport throws) is judged by its `underlyingError`;
/// - attempts remain.
///
/// The wait is ``RetryPolicy``'s backoff, or the response's `Retry-After` (seconds or HTTP-date, resolved with
/// the injected clock), both capped by ``RetryPolicy/maxDelay``. Cancellation is checked before every attempt and
/// every sleep. Sits on top of the chain so a retry goes through auth again.
public struct RetryMiddleware: ClientMiddleware {
    /// When and how long to retry.
    package let policy: RetryPolicy
    /// Waits between attempts.
    package let sleeper: any Sleeper
    /// Draws the jitter factor.
    package let random: any RandomSource
    /// The current time, for `Retry-After` HTTP-dates.
    package let now: @Sendable () -> Date
    /// Where each decision goes, at `debug` (a retry, its cause and wait; giving up): nothing at the default
    /// level. Never a header value, a token or a body; an error only by its type.
    package let logger: Logger

    /// Creates the middleware: it waits with `Task.sleep` and draws jitter from the system generator.
    public init(policy: RetryPolicy = RetryPolicy(), logger: Logger = Logger(label: "ShopKit.RetryMiddleware")) {
        self.init(policy: policy, sleeper: TaskSleeper(), logger: logger)
    }

    /// The same with the waits, the jitter and the clock injected (tests).
    package init(
        policy: RetryPolicy = RetryPolicy(), sleeper: any Sleeper, random: any RandomSource = SystemRandomSource(),
        now: @escaping @Sendable () -> Date = { Date() }, logger: Logger = Logger(label: "ShopKit.RetryMiddleware")
    ) {
        self.logger = logger
        self.policy = policy
        self.sleeper = sleeper
        self.random = random
        self.now = now
    }

    /// Sends `request` through `next`, retrying as described on the type; returns the last response or throws
    /// the last error.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let retriable = Self.mayRetry(request, body: body)
        var attempt = 1
        while true {
            try Task.checkCancellation()
            let wait: Duration
            do {
                let (response, responseBody) = try await next(request, body, baseURL)
                guard policy.retryableStatuses.contains(response.status.code) else { return (response, responseBody) }
                guard retriable, attempt < policy.maxAttempts else {
                    log("not retrying", operationID, attempt, cause: "status \(response.status.code)", retriable)
                    return (response, responseBody)
                }
                wait = delay(beforeRetry: attempt, response: response)
                log("retrying", operationID, attempt, cause: "status \(response.status.code)", retriable, wait: wait)
                // The body of a response we are not going to return is dropped unread.
            } catch {
                let cause = String(describing: type(of: (error as? ClientError)?.underlyingError ?? error))
                guard retriable, attempt < policy.maxAttempts, Self.isRetryable(error) else {
                    log("not retrying", operationID, attempt, cause: cause, retriable)
                    throw error
                }
                wait = policy.delay(beforeRetry: attempt, jitterFactor: random.jitterFactor(in: policy.jitter))
                log("retrying", operationID, attempt, cause: cause, retriable, wait: wait)
            }
            try Task.checkCancellation()
            try await sleeper.sleep(for: wait)
            attempt += 1
        }
    }

    /// One decision at debug: the operation, the attempt that failed, why, and the wait before the next one.
    private func log(
        _ decision: String, _ operationID: String, _ attempt: Int, cause: String, _ retriable: Bool, wait: Duration? = nil
    ) {
        var metadata: Logger.Metadata = [
            "operation": "\(operationID)", "attempt": "\(attempt)/\(policy.maxAttempts)", "cause": "\(cause)",
        ]
        if !retriable { metadata["reason"] = "not idempotent, or its body cannot be sent again" }
        if let wait { metadata["wait"] = "\(wait)" }
        logger.debug("\(decision)", metadata: metadata)
    }

    /// Whether `request` may be sent more than once at all (method or `Idempotency-Key`, replayable body).
    static func mayRetry(_ request: HTTPRequest, body: HTTPBody?) -> Bool {
        guard body.isReplayable else { return false }
        return request.method.isIdempotent || request.headerFields[.idempotencyKey] != nil
    }

    /// Whether a thrown error is worth another attempt; a `ClientError` is judged by its `underlyingError`.
    static func isRetryable(_ error: any Error) -> Bool {
        let cause = (error as? ClientError)?.underlyingError ?? error
        if cause is CancellationError || Task.isCancelled { return false }
        if let classified = cause as? any RetryClassifiableError { return classified.isRetryable }
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

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

/// Retries failed requests that are safe to send again: ``RetryMiddleware`` over a fixed upstream transport.
///
/// Which requests are retried, and how long it waits, is described on ``RetryMiddleware``, whose logic this
/// runs. Sits on top of the chain so a retry goes through auth again.
public struct RetryingTransport: ClientTransport {
    /// The transport that carries each attempt.
    public let upstream: any ClientTransport
    /// The retry logic.
    public let middleware: RetryMiddleware

    /// When and how long to retry.
    public var policy: RetryPolicy { middleware.policy }
    /// Waits between attempts.
    public var sleeper: any Sleeper { middleware.sleeper }
    /// Draws the jitter factor.
    public var random: any RandomSource { middleware.random }
    /// The current time, for `Retry-After` HTTP-dates.
    public var now: @Sendable () -> Date { middleware.now }

    /// Creates the decorator.
    public init(
        wrapping upstream: any ClientTransport, policy: RetryPolicy = .default, sleeper: any Sleeper = TaskSleeper(),
        random: any RandomSource = SystemRandomSource(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.upstream = upstream
        self.middleware = RetryMiddleware(policy: policy, sleeper: sleeper, random: random, now: now)
    }

    /// Sends `request`, retrying as described on ``RetryMiddleware``; returns the last response or throws the
    /// last error.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await middleware.intercept(request, body: body, baseURL: baseURL, operationID: operationID) {
            try await upstream.send($0, body: $1, baseURL: $2, operationID: operationID)
        }
    }
}

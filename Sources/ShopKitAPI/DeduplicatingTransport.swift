import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Coalesces identical in-flight GET and HEAD requests into one upstream request: ``DeduplicationMiddleware``'s
/// logic over a fixed upstream transport.
///
/// Which requests are identical, how the shared body is buffered (a large or broken error body never hides the
/// status) and what cancellation does is described on ``DeduplicationMiddleware``: a cancelled caller gets
/// `CancellationError`; when it was the one sending, the oldest caller still waiting sends the request again.
///
/// - Warning: Place it *under* ``AuthenticatingTransport``. Above auth, requests carry no `Authorization` yet and
///   the responses of two users could be merged.
public struct DeduplicatingTransport: ClientTransport {
    /// The transport below (normally the HTTPS transport).
    public let upstream: any ClientTransport
    /// The dedup logic and its state (the requests in flight).
    public let middleware: DeduplicationMiddleware

    /// The largest shared 2xx response body buffered; bigger ones fail every waiter with
    /// ``ResponseBodyTooLargeError``.
    public var maxResponseBodyBytes: Int { middleware.maxResponseBodyBytes }

    /// Header fields that never change a response and so do not separate requests (lowercased).
    public static var ignoredHeaderNames: Set<String> { DeduplicationMiddleware.ignoredHeaderNames }

    /// Creates the decorator.
    public init(wrapping upstream: any ClientTransport, maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes) {
        self.upstream = upstream
        self.middleware = DeduplicationMiddleware(maxResponseBodyBytes: maxResponseBodyBytes)
    }

    /// Joins an identical in-flight GET/HEAD or starts one; everything else passes straight through.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard DeduplicationMiddleware.isShared(request, body: body) else {
            return try await upstream.send(request, body: body, baseURL: baseURL, operationID: operationID)
        }
        let upstream = self.upstream
        return try await middleware.share(request, baseURL: baseURL) {
            try await upstream.send($0, body: $1, baseURL: $2, operationID: operationID)
        }
    }

    /// The dedup key of `request`.
    static func key(for request: HTTPRequest, baseURL: URL) -> DeduplicationMiddleware.Key {
        DeduplicationMiddleware.key(for: request, baseURL: baseURL)
    }

    /// The number of requests in flight upstream (for tests and diagnostics).
    public var inFlightCount: Int { get async { await middleware.inFlightCount } }

    /// The number of callers waiting on in-flight requests (for tests).
    var waiterCount: Int { get async { await middleware.waiterCount } }
}

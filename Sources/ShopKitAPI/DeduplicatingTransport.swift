import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Coalesces identical in-flight GET and HEAD requests into one upstream request.
///
/// Two requests are identical when method, full URL (base URL + path with query) and every header field match,
/// except the tracing headers in ``ignoredHeaderNames``. Keying on all headers rather than a list of "relevant"
/// ones means `Authorization`, `Accept`, `Accept-Language`, `Accept-Encoding`, `Cookie`, `Range`, conditional
/// headers and any custom header (a tenant, an API version) always separate requests. The decorator sits under
/// auth, so `Authorization` is already set and two users' requests never merge.
///
/// The shared response body is read into memory up to ``maxBodyBytes`` and every waiter gets its own `HTTPBody`
/// over the bytes. The entry is evicted as soon as the request ends (the next identical request goes upstream
/// again: this is not a cache). A waiter that is cancelled gets `CancellationError` at once while the others keep
/// waiting; when the last waiter leaves, the upstream request is cancelled.
///
/// Requests with a body, and all other methods, pass straight through.
///
/// - Warning: Place it *under* ``AuthenticatingTransport``. Above auth, requests carry no `Authorization` yet and
///   the responses of two users could be merged.
public actor DeduplicatingTransport: ClientTransport {
    /// The transport below (normally the HTTPS transport).
    public nonisolated let upstream: any ClientTransport
    /// The largest shared response body buffered; bigger ones fail every waiter with ``ResponseBodyTooLargeError``.
    public nonisolated let maxBodyBytes: Int

    /// Header fields that never change a response and so do not separate requests (lowercased).
    public static let ignoredHeaderNames: Set<String> = ["traceparent", "tracestate", "x-request-id", "x-correlation-id"]

    /// What identifies identical requests.
    struct Key: Hashable, Sendable {
        let method: String
        /// Base URL and path; plus the request's own scheme and authority when it carries them (absolute form).
        let url: String
        let scheme: String?
        let authority: String?
        let headers: [String]
    }

    /// A shared response: the head, and the whole body (or `nil` when there was none).
    struct Buffered: Sendable {
        let response: HTTPResponse
        let body: [UInt8]?
    }

    /// Who waits for which upstream request (pure bookkeeping; this actor carries out its actions).
    private var state = SingleFlight<Key, CheckedContinuation<Buffered, any Error>>()
    /// The running upstream requests, by flight ID, so the last waiter to leave can cancel its request.
    private var tasks: [UInt64: Task<Void, Never>] = [:]

    /// Creates the decorator.
    public init(wrapping upstream: any ClientTransport, maxBodyBytes: Int = 10 * 1024 * 1024) {
        self.upstream = upstream
        self.maxBodyBytes = max(0, maxBodyBytes)
    }

    /// Joins an identical in-flight GET/HEAD or starts one; everything else passes straight through.
    public nonisolated func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard body == nil, request.method == .get || request.method == .head else {
            return try await upstream.send(request, body: body, baseURL: baseURL, operationID: operationID)
        }
        let key = Self.key(for: request, baseURL: baseURL)
        let shared = try await wait(for: key, request: request, baseURL: baseURL, operationID: operationID)
        return (shared.response, shared.body.map { HTTPBody($0) })
    }

    /// The dedup key of `request`.
    static func key(for request: HTTPRequest, baseURL: URL) -> Key {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        // Stable sort by name keeps the order of repeated fields, which can matter.
        let fields = request.headerFields
            .filter { !ignoredHeaderNames.contains($0.name.canonicalName) }
            .enumerated()
            .sorted { ($0.element.name.canonicalName, $0.offset) < ($1.element.name.canonicalName, $1.offset) }
            .map { "\($0.element.name.canonicalName): \($0.element.value)" }
        return Key(
            method: request.method.rawValue, url: base + (request.path ?? ""), scheme: request.scheme,
            authority: request.authority, headers: fields)
    }

    /// Joins the flight for `key`, starting it when there is none, and waits for its result or cancellation.
    private func wait(
        for key: Key, request: HTTPRequest, baseURL: URL, operationID: String
    ) async throws -> Buffered {
        let waiterID = state.makeWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Runs on this actor before the first suspension, so no cancellation can slip in between.
                guard !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                guard case .start(let flightID) = state.join(key, waiterID: waiterID, waiter: continuation) else { return }
                tasks[flightID] = Task {
                    let result = await self.fetch(request, baseURL: baseURL, operationID: operationID)
                    self.finish(key: key, flightID: flightID, result: result)
                }
            }
        } onCancel: {
            Task { await self.leave(key: key, waiterID: waiterID) }
        }
    }

    /// Sends upstream and buffers the body (bounded). Runs outside the actor's state; only its result comes back.
    private nonisolated func fetch(
        _ request: HTTPRequest, baseURL: URL, operationID: String
    ) async -> Result<Buffered, any Error> {
        do {
            let (response, body) = try await upstream.send(request, body: nil, baseURL: baseURL, operationID: operationID)
            let bytes = try await body?.collectBounded(limit: maxBodyBytes)
            return .success(Buffered(response: response, body: bytes))
        } catch {
            return .failure(error)
        }
    }

    /// Evicts the flight and hands its result to every remaining waiter.
    private func finish(key: Key, flightID: UInt64, result: Result<Buffered, any Error>) {
        tasks[flightID] = nil
        for continuation in state.finish(key, flightID: flightID) { continuation.resume(with: result) }
    }

    /// A waiter was cancelled: it stops waiting; the last one to leave cancels the upstream request.
    private func leave(key: Key, waiterID: UInt64) {
        switch state.leave(key, waiterID: waiterID, cancelWhenEmpty: true) {
        case .none:
            break
        case .resume(let continuation):
            continuation.resume(throwing: CancellationError())
        case .resumeAndCancel(let continuation, let flightID):
            continuation.resume(throwing: CancellationError())
            tasks.removeValue(forKey: flightID)?.cancel()
        }
    }

    /// The number of requests in flight upstream (for tests and diagnostics).
    public var inFlightCount: Int { state.flightCount }

    /// The number of callers waiting on in-flight requests (for tests).
    var waiterCount: Int { state.waiterCount }
}

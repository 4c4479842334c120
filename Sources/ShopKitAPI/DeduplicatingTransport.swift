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
        let url: String
        let headers: [String]
    }

    /// A shared response: the head, and the whole body (or `nil` when there was none).
    struct Buffered: Sendable {
        let response: HTTPResponse
        let body: [UInt8]?
    }

    /// One upstream request and the callers waiting for it.
    struct Flight {
        let id: UInt64
        var task: Task<Void, Never>?
        var waiters: [UInt64: CheckedContinuation<Buffered, any Error>]
    }

    private var flights: [Key: Flight] = [:]
    private var nextID: UInt64 = 0

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
        return Key(method: request.method.rawValue, url: base + (request.path ?? ""), headers: fields)
    }

    /// Joins the flight for `key`, starting it when there is none, and waits for its result or cancellation.
    private func wait(
        for key: Key, request: HTTPRequest, baseURL: URL, operationID: String
    ) async throws -> Buffered {
        nextID &+= 1
        let waiterID = nextID
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Runs on this actor before the first suspension, so no cancellation can slip in between.
                guard !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                if flights[key] != nil {
                    flights[key]?.waiters[waiterID] = continuation
                } else {
                    nextID &+= 1
                    let flightID = nextID
                    flights[key] = Flight(id: flightID, task: nil, waiters: [waiterID: continuation])
                    flights[key]?.task = Task {
                        let result = await self.fetch(request, baseURL: baseURL, operationID: operationID)
                        self.finish(key: key, flightID: flightID, result: result)
                    }
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
        guard let flight = flights[key], flight.id == flightID else { return }  // every waiter left already
        flights[key] = nil
        for continuation in flight.waiters.values { continuation.resume(with: result) }
    }

    /// A waiter was cancelled: it stops waiting; the last one to leave cancels the upstream request.
    private func leave(key: Key, waiterID: UInt64) {
        guard let continuation = flights[key]?.waiters.removeValue(forKey: waiterID) else { return }
        continuation.resume(throwing: CancellationError())
        if let flight = flights[key], flight.waiters.isEmpty {
            flights[key] = nil
            flight.task?.cancel()
        }
    }

    /// The number of requests in flight upstream (for tests and diagnostics).
    public var inFlightCount: Int { flights.count }

    /// The number of callers waiting on in-flight requests (for tests).
    var waiterCount: Int { flights.values.reduce(0) { $0 + $1.waiters.count } }
}

import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Coalesces identical in-flight GET and HEAD requests into one upstream request.
///
/// This is the dedup logic itself, as a swift-openapi-runtime `ClientMiddleware`: give it to a generated
/// client's `Client(serverURL:transport:middlewares:)` or ``APIClient``'s `middlewares`, last in the array
/// (innermost, after auth).
///
/// Two requests are identical when method, full URL (base URL + path with query) and every header field match,
/// except the tracing headers `traceparent`, `tracestate`, `x-request-id` and `x-correlation-id`. Keying on all headers rather than a list of "relevant"
/// ones means `Authorization`, `Accept`, `Accept-Language`, `Accept-Encoding`, `Cookie`, `Range`, conditional
/// headers and any custom header (a tenant, an API version) always separate requests. The middleware sits under
/// auth, so `Authorization` is already set and two users' requests never merge.
///
/// The shared response body is read into memory and every waiter gets its own `HTTPBody` over the same bytes:
/// a 2xx body up to `maxResponseBodyBytes` (a bigger one fails every waiter with ``ResponseBodyTooLargeError``); any
/// other status with at most its first 64 KiB, as ``APIClient`` reads an error body, and a body that breaks off
/// delivers the status with no body. So a large or broken error page never hides a 401, a 404 or a 503 from the
/// layers above. The entry is evicted as soon as the request ends (the next identical request goes upstream
/// again: this is not a cache).
///
/// The first caller sends the request in its own task (it *leads*); identical callers that come while it runs
/// wait for its response. So a request that nobody shares costs no task and no hand-off between threads. A
/// waiting caller that is cancelled gets `CancellationError` at once and the request goes on for the others.
/// When the leading caller is cancelled, its request is cancelled with it and it gets `CancellationError`; if
/// others still wait, the oldest of them sends the same request again, through its own `next`, for itself and
/// the rest (GET and HEAD are safe to repeat), so they still get a response. No caller's `next` is called after
/// its call returns.
///
/// Requests with a body, and all other methods, pass straight through.
///
/// - Warning: Place it *under* the auth middleware or transport. Above auth, requests carry no `Authorization`
///   yet and the responses of two users could be merged.
public actor DeduplicationMiddleware: ClientMiddleware {
    /// The rest of the chain below.
    typealias Next = @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

    /// The largest shared 2xx response body buffered; bigger ones fail every waiter with
    /// ``ResponseBodyTooLargeError``.
    package nonisolated let maxResponseBodyBytes: Int

    /// Header fields that never change a response and so do not separate requests (lowercased). Package access:
    /// the list is documented on the type and not configurable.
    package static let ignoredHeaderNames: Set<String> = ["traceparent", "tracestate", "x-request-id", "x-correlation-id"]

    /// What identifies identical requests.
    struct Key: Hashable, Sendable {
        let method: String
        /// Base URL and path; plus the request's own scheme and authority when it carries them (absolute form).
        let url: String
        let scheme: String?
        let authority: String?
        /// The header fields that count, name then value, in a canonical order.
        let headers: [String]
        /// The hash of all of the above, computed once: a key is looked up when its flight starts and again when
        /// it ends, and its header list holds the whole `Authorization` value.
        private let fieldsHash: Int

        init(method: String, url: String, scheme: String?, authority: String?, headers: [String]) {
            (self.method, self.url, self.scheme, self.authority, self.headers) = (method, url, scheme, authority, headers)
            var hasher = Hasher()
            hasher.combine(method)
            hasher.combine(url)
            hasher.combine(scheme)
            hasher.combine(authority)
            hasher.combine(headers)
            fieldsHash = hasher.finalize()
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.fieldsHash == rhs.fieldsHash && lhs.method == rhs.method && lhs.url == rhs.url
                && lhs.scheme == rhs.scheme && lhs.authority == rhs.authority && lhs.headers == rhs.headers
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(fieldsHash)
        }
    }

    /// A shared response: the head, and the buffered body (or `nil` when there was none).
    struct Buffered: Sendable {
        let response: HTTPResponse
        let body: [UInt8]?
    }

    /// Who leads and who follows which upstream request (pure bookkeeping; this actor carries out its actions).
    private var flights = SingleFlight<Key, CheckedContinuation<Turn, any Error>>()

    /// What a follower is resumed with: the shared response, or the flight itself when its leader was cancelled.
    enum Turn: Sendable {
        case lead(flightID: UInt64)
        case result(Buffered)
    }

    /// Where each decision goes, at `debug` (a request joining an identical one in flight, or leading one):
    /// nothing at the default level. Never a header value, a token or a body.
    package nonisolated let logger: Logger

    /// Creates the middleware.
    public init(
        maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes,
        logger: Logger = Logger(label: "ShopKit.DeduplicationMiddleware")
    ) {
        self.maxResponseBodyBytes = max(0, maxResponseBodyBytes)
        self.logger = logger
    }

    /// Joins an identical in-flight GET/HEAD or starts one through `next`; everything else goes straight to `next`.
    public nonisolated func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard Self.isShared(request, body: body) else { return try await next(request, body, baseURL) }
        return try await share(request, baseURL: baseURL, operationID: operationID, next: next)
    }

    /// Whether `request` can share a response: a GET or HEAD without a body.
    nonisolated static func isShared(_ request: HTTPRequest, body: HTTPBody?) -> Bool {
        body == nil && (request.method == .get || request.method == .head)
    }

    /// Joins the flight for `request` or leads one through `next`, and returns this caller's copy of the response.
    ///
    /// A leader sends in its own task and returns once its request has ended, so `next` is never called after
    /// this returns.
    nonisolated func share(
        _ request: HTTPRequest, baseURL: URL, operationID: String = "", next: Next
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try Task.checkCancellation()
        let key = Self.key(for: request, baseURL: baseURL)
        let flightID: UInt64
        if let started = await lead(key) {
            flightID = started
        } else {
            logger.debug("joining an identical request in flight", metadata: ["operation": "\(operationID)"])
            switch try await follow(key) {
            case .result(let shared):
                return (shared.response, shared.body.map { HTTPBody($0) })
            case .lead(let handedOver):
                logger.debug("leading the flight its cancelled leader handed over", metadata: ["operation": "\(operationID)"])
                flightID = handedOver
            }
        }
        let shared = try await run(key: key, flightID: flightID) { try await next(request, nil, baseURL) }
        return (shared.response, shared.body.map { HTTPBody($0) })
    }

    /// The dedup key of `request`.
    ///
    /// Header fields are compared by canonical name and value; they are sorted by name (stably, so repeated
    /// fields keep their order, which can matter) unless they already are, the common case.
    static func key(for request: HTTPRequest, baseURL: URL) -> Key {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(request.headerFields.count)
        for field in request.headerFields {
            let name = field.name.canonicalName
            if !ignoredHeaderNames.contains(name) { fields.append((name, field.value)) }
        }
        if zip(fields, fields.dropFirst()).contains(where: { $0.name > $1.name }) {
            fields = fields.enumerated()
                .sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }
                .map(\.element)
        }
        var headers: [String] = []
        headers.reserveCapacity(fields.count * 2)
        for field in fields { headers += [field.name, field.value] }
        return Key(
            method: request.method.rawValue, url: base + (request.path ?? ""), scheme: request.scheme,
            authority: request.authority, headers: headers)
    }

    /// Starts a flight for `key` led by the caller, unless one is running (`nil`: follow it).
    private func lead(_ key: Key) -> UInt64? {
        flights.lead(key)
    }

    /// Waits for the running flight for `key`: its result, or the flight itself when its leader was cancelled (or
    /// when it ended before this caller got here).
    private func follow(_ key: Key) async throws -> Turn {
        let waiterID = flights.makeWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Runs on this actor before the first suspension, so no cancellation can slip in between.
                guard !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                if case .lead(let flightID) = flights.follow(key, waiterID: waiterID, follower: continuation) {
                    continuation.resume(returning: .lead(flightID: flightID))
                }
            }
        } onCancel: {
            Task { await self.leave(key: key, waiterID: waiterID) }
        }
    }

    /// Leads flight `flightID`: sends in the caller's task, then hands the result to the followers, or, when the
    /// caller was cancelled before it had a result, the flight to the oldest follower.
    private nonisolated func run(
        key: Key, flightID: UInt64, send: () async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> Buffered {
        // A follower handed a flight after it was cancelled does not send: it passes the flight on.
        let result = Task.isCancelled ? .failure(CancellationError()) : await fetch(send)
        if case .failure = result, Task.isCancelled {
            await finish(key: key, flightID: flightID, result: result, handOver: true)
            throw CancellationError()
        }
        await finish(key: key, flightID: flightID, result: result, handOver: false)
        return try result.get()
    }

    /// Sends upstream and buffers the body as described on the type. Runs outside the actor's state; only its
    /// result comes back.
    private nonisolated func fetch(
        _ send: () async throws -> (HTTPResponse, HTTPBody?)
    ) async -> Result<Buffered, any Error> {
        do {
            let (response, body) = try await send()
            guard let body else { return .success(Buffered(response: response, body: nil)) }
            if response.status.kind == .successful {
                return .success(Buffered(response: response, body: try await body.collectBounded(limit: maxResponseBodyBytes)))
            }
            // The status is the answer; the body only adds a message. A large or broken error body must not
            // turn a 401, 404 or 503 into a size-limit or transport error.
            let prefix = (try? await body.collectPrefix(limit: APIClient.errorBodyPrefixBytes)) ?? []
            return .success(Buffered(response: response, body: prefix))
        } catch {
            return .failure(error)
        }
    }

    /// The leader of flight `flightID` ended: hands its result to every follower, or with `handOver` the flight to
    /// the oldest one.
    private func finish(key: Key, flightID: UInt64, result: Result<Buffered, any Error>, handOver: Bool) {
        switch flights.finish(key, flightID: flightID, handOver: handOver) {
        case .resume(let followers):
            for follower in followers { follower.resume(with: result.map(Turn.result)) }
        case .handOver(let follower, let flightID):
            follower.resume(returning: .lead(flightID: flightID))
        }
    }

    /// A follower was cancelled: it stops waiting. The flight runs on for its leader.
    private func leave(key: Key, waiterID: UInt64) {
        flights.leave(key, waiterID: waiterID)?.resume(throwing: CancellationError())
    }

    /// The number of requests in flight upstream (for tests and diagnostics).
    package var inFlightCount: Int { flights.flightCount }

    /// The number of callers waiting on in-flight requests (for tests).
    var waiterCount: Int { flights.waiterCount }
}

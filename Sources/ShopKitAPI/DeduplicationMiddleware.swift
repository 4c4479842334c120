import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitCore

/// Coalesces identical in-flight GET and HEAD requests into one upstream request.
///
/// This is the dedup logic itself, as a swift-openapi-runtime `ClientMiddleware`: give it to a generated
/// client's `Client(serverURL:transport:middlewares:)` last in the array (innermost, after auth), or use it
/// through ``DeduplicatingTransport``, which runs this same logic over a fixed upstream transport.
///
/// Two requests are identical when method, full URL (base URL + path with query) and every header field match,
/// except the tracing headers in ``ignoredHeaderNames``. Keying on all headers rather than a list of "relevant"
/// ones means `Authorization`, `Accept`, `Accept-Language`, `Accept-Encoding`, `Cookie`, `Range`, conditional
/// headers and any custom header (a tenant, an API version) always separate requests. The middleware sits under
/// auth, so `Authorization` is already set and two users' requests never merge.
///
/// The shared response body is read into memory and every waiter gets its own `HTTPBody` over the same bytes:
/// a 2xx body up to ``maxBodyBytes`` (a bigger one fails every waiter with ``ResponseBodyTooLargeError``); any
/// other status with at most its first 64 KiB, as ``APIClient`` reads an error body, and a body that breaks off
/// delivers the status with no body. So a large or broken error page never hides a 401, a 404 or a 503 from the
/// layers above. The entry is evicted as soon as the request ends (the next identical request goes upstream
/// again: this is not a cache). A waiter that is cancelled gets `CancellationError` while the others keep
/// waiting; when the last waiter leaves, the upstream request is cancelled.
///
/// Requests with a body, and all other methods, pass straight through.
///
/// As a middleware, the `next` closure it is given may not outlive the call, so the caller whose request
/// started a shared upstream request returns only once that request has ended (when it is cancelled while others
/// still wait, it gets `CancellationError` then). ``DeduplicatingTransport`` has no such wait.
///
/// - Warning: Place it *under* the auth middleware or transport. Above auth, requests carry no `Authorization`
///   yet and the responses of two users could be merged.
public actor DeduplicationMiddleware: ClientMiddleware {
    /// The rest of the chain below.
    typealias Next = @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

    /// The largest shared 2xx response body buffered; bigger ones fail every waiter with
    /// ``ResponseBodyTooLargeError``.
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
        /// The header fields that count, name then value, in a canonical order.
        let headers: [String]
    }

    /// A shared response: the head, and the buffered body (or `nil` when there was none).
    struct Buffered: Sendable {
        let response: HTTPResponse
        let body: [UInt8]?
    }

    /// Who waits for which upstream request (pure bookkeeping; this actor carries out its actions).
    private var state = SingleFlight<Key, CheckedContinuation<Buffered, any Error>>()
    /// The running upstream requests, by flight ID, so the last waiter to leave can cancel its request.
    private var tasks: [UInt64: Task<Void, Never>] = [:]
    /// The upstream requests started by callers that must wait for them to end, by waiter ID.
    private var startedBy: [UInt64: Task<Void, Never>] = [:]
    /// The last waiter ID handed out: taken under a lock, so a caller gets its ID without a hop to this actor.
    private nonisolated let lastWaiterID = LockedBox<UInt64>(0)

    /// Creates the middleware.
    public init(maxBodyBytes: Int = 10 * 1024 * 1024) {
        self.maxBodyBytes = max(0, maxBodyBytes)
    }

    /// Joins an identical in-flight GET/HEAD or starts one through `next`; everything else goes straight to `next`.
    public nonisolated func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard Self.isShared(request, body: body) else { return try await next(request, body, baseURL) }
        // Safe: `share(outlivesCall: false)` returns only after the upstream request it started (the only thing
        // that keeps `next`) has ended.
        return try await withoutActuallyEscaping(next) { next in
            try await share(request, baseURL: baseURL, outlivesCall: false, next: next)
        }
    }

    /// Whether `request` can share a response: a GET or HEAD without a body.
    nonisolated static func isShared(_ request: HTTPRequest, body: HTTPBody?) -> Bool {
        body == nil && (request.method == .get || request.method == .head)
    }

    /// Joins the flight for `request` or starts one through `next`, and returns this caller's copy of the response.
    ///
    /// `outlivesCall` says whether `next` may still be called after this returns; when it is `false`, a caller
    /// that started the upstream request waits for it to end before returning, even when cancelled.
    nonisolated func share(
        _ request: HTTPRequest, baseURL: URL, outlivesCall: Bool, next: @escaping Next
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let key = Self.key(for: request, baseURL: baseURL)
        let waiterID = lastWaiterID.withLock { last in
            last &+= 1
            return last
        }
        let result: Result<Buffered, any Error>
        do {
            result = .success(try await wait(for: key, waiterID: waiterID, recordsStart: !outlivesCall) {
                try await next(request, nil, baseURL)
            })
        } catch {
            result = .failure(error)
        }
        if !outlivesCall { await takeStartedFlight(waiterID: waiterID)?.value }
        let shared = try result.get()
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

    private func takeStartedFlight(waiterID: UInt64) -> Task<Void, Never>? {
        startedBy.removeValue(forKey: waiterID)
    }

    /// Joins the flight for `key`, starting it with `send` when there is none, and waits for its result or
    /// cancellation. With `recordsStart`, a flight this waiter starts is kept in ``startedBy``.
    private func wait(
        for key: Key, waiterID: UInt64, recordsStart: Bool,
        send: @escaping @Sendable () async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> Buffered {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Runs on this actor before the first suspension, so no cancellation can slip in between.
                guard !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                guard case .start(let flightID) = state.join(key, waiterID: waiterID, waiter: continuation) else { return }
                let task = startFlight(key: key, flightID: flightID, send: send)
                tasks[flightID] = task
                if recordsStart { startedBy[waiterID] = task }
            }
        } onCancel: {
            Task { await self.leave(key: key, waiterID: waiterID) }
        }
    }

    /// Starts the upstream request of a new flight in its own task, so no waiter's cancellation cancels it.
    ///
    /// Where the runtime has `Task.immediate`, the task runs on the calling thread up to its first suspension
    /// (the transport waiting for the network) instead of waiting for a thread of the pool: one hand-off between
    /// threads less per request. It cannot finish the flight before this actor has recorded it, because `finish`
    /// runs on this actor, which is busy with the caller until then.
    private nonisolated func startFlight(
        key: Key, flightID: UInt64, send: @escaping @Sendable () async throws -> (HTTPResponse, HTTPBody?)
    ) -> Task<Void, Never> {
        if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
            return Task.immediate {
                let result = await self.fetch(send)
                await self.finish(key: key, flightID: flightID, result: result)
            }
        }
        return Task {
            let result = await self.fetch(send)
            await self.finish(key: key, flightID: flightID, result: result)
        }
    }

    /// Sends upstream and buffers the body as described on the type. Runs outside the actor's state; only its
    /// result comes back.
    private nonisolated func fetch(
        _ send: @Sendable () async throws -> (HTTPResponse, HTTPBody?)
    ) async -> Result<Buffered, any Error> {
        do {
            let (response, body) = try await send()
            guard let body else { return .success(Buffered(response: response, body: nil)) }
            if response.status.kind == .successful {
                return .success(Buffered(response: response, body: try await body.collectBounded(limit: maxBodyBytes)))
            }
            // The status is the answer; the body only adds a message. A large or broken error body must not
            // turn a 401, 404 or 503 into a size-limit or transport error.
            let prefix = (try? await body.collectPrefix(limit: APIClient.errorBodyPrefixBytes)) ?? []
            return .success(Buffered(response: response, body: prefix))
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

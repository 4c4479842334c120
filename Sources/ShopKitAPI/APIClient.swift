import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Sends typed ``APIRequest``s through a `ClientTransport` and returns decoded responses or an ``APIError``.
///
/// Requests go through `middlewares` (normally ShopKit's retry → auth → dedup, from ``ShopKitFactory``), run the
/// way a generated client runs them, then `transport` (normally the pinned HTTPS transport). Any
/// `ClientTransport` works, which is what makes the client testable with a stub.
///
/// ```swift
/// let client = APIClient(
///     baseURL: URL(string: "https://shop.example")!, transport: https,
///     middlewares: ShopKitFactory.makeMiddlewares(configuration))
/// let product = try await client.send(GetProduct(id: "42"))
/// ```
public struct APIClient: Sendable {
    /// Where every request's path is resolved.
    package let baseURL: URL
    /// The transport that carries requests once the middlewares have passed them on.
    package let transport: any ClientTransport
    /// The middlewares every request goes through, outermost first.
    package let middlewares: [any ClientMiddleware]
    /// `middlewares` over `transport`.
    private let chain: MiddlewareChain
    /// Decodes 2xx bodies.
    package let decoder: JSONDecoder
    /// The largest response body read into memory; bigger bodies fail with ``ResponseBodyTooLargeError``.
    package let maxResponseBodyBytes: Int
    /// Logs method, path (without query) and status at debug level; never headers or bodies.
    package let logger: Logger
    /// The current time, for turning an HTTP-date `Retry-After` into a delay (injected in tests).
    let now: @Sendable () -> Date

    /// 64 KiB: how much of a non-2xx body is read, enough for its error message whatever the size limit.
    static let errorBodyPrefixBytes = 64 * 1024


    /// Creates a client.
    ///
    /// - Parameters:
    ///   - baseURL: The backend's base URL, e.g. `https://shop.example/api`.
    ///   - transport: The transport (normally the pinned HTTPS transport).
    ///   - middlewares: The middlewares, outermost first (normally `ShopKitFactory.makeMiddlewares(_:)`'s).
    ///   - decoder: The JSON decoder for response bodies.
    ///   - maxResponseBodyBytes: The largest response body read into memory (default 16 MiB, `ResponseBodyLimit.defaultBytes`).
    ///   - logger: Where debug lines go; the default logs nowhere unless a logging backend is bootstrapped.
    public init(
        baseURL: URL, transport: any ClientTransport, middlewares: [any ClientMiddleware] = [],
        decoder: JSONDecoder = JSONDecoder(),
        maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes,
        logger: Logger = Logger(label: "ShopKit.APIClient")
    ) {
        self.init(
            baseURL: baseURL, transport: transport, middlewares: middlewares, decoder: decoder,
            maxResponseBodyBytes: maxResponseBodyBytes, logger: logger, now: { Date() })
    }

    /// The same with the clock for an HTTP-date `Retry-After` on a 429 injected (tests).
    package init(
        baseURL: URL, transport: any ClientTransport, middlewares: [any ClientMiddleware] = [],
        decoder: JSONDecoder = JSONDecoder(),
        maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes,
        logger: Logger = Logger(label: "ShopKit.APIClient"),
        now: @escaping @Sendable () -> Date
    ) {
        self.baseURL = baseURL
        self.transport = transport
        self.middlewares = middlewares
        self.chain = MiddlewareChain(transport, middlewares)
        self.decoder = decoder
        self.maxResponseBodyBytes = max(0, maxResponseBodyBytes)
        self.logger = logger
        self.now = now
    }

    /// Sends `request` and decodes its response.
    ///
    /// Statuses map to ``APIError``: 401 → `unauthorized`, 403 → `forbidden`, 404 → `notFound`, 429 →
    /// `rateLimited`, any other non-2xx → `server`. A cancelled task gets `cancelled`, whatever the transport threw.
    ///
    /// - Throws: Only ``APIError``.
    public func send<Request: APIRequest>(_ request: Request) async throws(APIError) -> Request.Response {
        if Task.isCancelled { throw .cancelled }
        let httpRequest = makeHTTPRequest(for: request)
        let body = request.body.map { HTTPBody($0) }
        let logPath = request.path
        logger.debug("request", metadata: ["method": "\(httpRequest.method)", "path": "\(logPath)"])

        let response: HTTPResponse
        let bytes: [UInt8]
        do {
            // `requiresAuth` reaches the auth middleware as a task-local value, never as a header.
            let (received, responseBody) = try await AuthenticationRequirement.$skipsCurrentRequest.withValue(
                !request.requiresAuth
            ) {
                try await chain.send(
                    httpRequest, body: body, baseURL: baseURL, operationID: String(describing: Request.self))
            }
            response = received
            if received.status.kind == .successful {
                bytes = try await responseBody?.collectBounded(limit: maxResponseBodyBytes) ?? []
            } else {
                // The status decides the error; the body only adds a message. A large or broken error body
                // must not hide a 401 or a 503 behind a size-limit or transport error.
                bytes = (try? await responseBody?.collectPrefix(limit: Self.errorBodyPrefixBytes)) ?? []
            }
        } catch {
            throw Self.map(transportError: error)
        }
        if Task.isCancelled { throw .cancelled }
        logger.debug(
            "response", metadata: ["method": "\(httpRequest.method)", "path": "\(logPath)", "status": "\(response.status.code)"])

        guard response.status.kind == .successful else {
            throw Self.map(status: response, body: bytes, now: now())
        }
        return try decode(Request.Response.self, from: bytes)
    }

    /// Builds the `HTTPRequest` for `request`: path with encoded query, `Accept`, `Content-Type`.
    func makeHTTPRequest<Request: APIRequest>(for request: Request) -> HTTPRequest {
        var path = Self.encodePath(request.path)
        if !request.queryItems.isEmpty {
            var components = URLComponents()
            components.queryItems = request.queryItems
            // URLComponents leaves "+" alone, which many servers read as a space.
            if let query = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") {
                path += "?" + query
            }
        }
        var fields = request.headerFields
        if fields[.accept] == nil { fields[.accept] = "application/json" }
        if request.body != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        return HTTPRequest(method: request.method, scheme: nil, authority: nil, path: path, headerFields: fields)
    }

    /// Adds the leading `/` and percent-encodes every UTF-8 byte outside RFC 3986's path characters (unreserved,
    /// sub-delims but `;`, `:`, `@` and `/`), so spaces, `?`, `#`, `;`, `%` and non-ASCII text cannot change the
    /// request's meaning. (Exactly Foundation's `urlPathAllowed` minus `?` and `#`, which a test checks, without
    /// building a `CharacterSet` per request.) A path that needs no encoding is returned as it is.
    static func encodePath(_ path: String) -> String {
        let rooted = path.utf8.first == UInt8(ascii: "/") ? path : "/" + path
        guard rooted.utf8.contains(where: { !pathAllowed(byte: $0) }) else { return rooted }
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(rooted.utf8.count * 3)
        for byte in rooted.utf8 {
            if pathAllowed(byte: byte) {
                encoded.append(byte)
            } else {
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Whether `byte` may stand for itself in a path: ALPHA, DIGIT, `-._~`, `!$&'()*+,=`, `:`, `@`, `/`.
    @inline(__always)
    static func pathAllowed(byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
            UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    /// Decodes `type` from `bytes`; ``NoContent`` ignores the body, whatever it holds.
    ///
    /// The decoder reads `bytes` in place (a `Data` that borrows them for the call), so a body is not copied
    /// again on its way from the transport (or the dedup decorator's shared buffer) to the decoder.
    func decode<Response: Decodable>(_ type: Response.Type, from bytes: [UInt8]) throws(APIError) -> Response {
        if let empty = NoContent() as? Response { return empty }
        do {
            return try bytes.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, raw.count > 0 else { return try decoder.decode(Response.self, from: Data()) }
                // Borrowed, never written or freed: `deallocator: .none`, and the Data does not outlive this closure.
                let borrowed = Data(
                    bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: raw.count, deallocator: .none)
                return try decoder.decode(Response.self, from: borrowed)
            }
        } catch {
            throw .decoding(DecodingFailure(decoding: Response.self, error: error))
        }
    }

    /// Maps what a transport threw: APIErrors pass through, cancellation becomes `.cancelled`.
    static func map(transportError error: any Error) -> APIError {
        if let apiError = error as? APIError { return apiError }
        if error is CancellationError || Task.isCancelled { return .cancelled }
        return .transport(error)
    }

    /// Maps a non-2xx response to its ``APIError``; `now` turns an HTTP-date `Retry-After` into a delay.
    static func map(status response: HTTPResponse, body: [UInt8], now: Date) -> APIError {
        switch response.status.code {
        case 401: return .unauthorized
        case 403: return .forbidden
        case 404: return .notFound
        case 429:
            let retryAfter = response.headerFields[.retryAfter].flatMap { RetryAfter.delay(from: $0, now: now) }
            return .rateLimited(retryAfter: retryAfter)
        default:
            return .server(status: response.status.code, message: serverMessage(in: body))
        }
    }

    /// The `message` (or `error`) string of a JSON error body, trimmed to 200 characters; `nil` otherwise.
    ///
    /// Only a named string field is taken, never the raw body, so an HTML error page does not end up in the UI.
    static func serverMessage(in body: [UInt8]) -> String? {
        guard !body.isEmpty, body.count <= 64 * 1024,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { return nil }
        let message = (object["message"] as? String) ?? (object["error"] as? String)
        return message.map { String($0.prefix(200)) }
    }
}

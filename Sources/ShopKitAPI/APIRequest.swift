import Foundation
import HTTPTypes

/// One typed call to the backend: where it goes, what it sends, and what it decodes to.
///
/// Conform a small struct per endpoint; ``APIClient/send(_:)`` builds the `HTTPRequest`, sends it through the
/// decorator chain and decodes ``Response`` from the JSON body.
///
/// ```swift
/// struct GetProduct: APIRequest {
///     typealias Response = Product
///     let id: String
///     var path: String { "/products/\(id)" }
/// }
/// ```
public protocol APIRequest: Sendable {
    /// The type decoded from a successful (2xx) response's JSON body. Use ``NoContent`` for empty bodies.
    associatedtype Response: Decodable & Sendable

    /// The HTTP method. Defaults to GET.
    var method: HTTPRequest.Method { get }
    /// The path below the client's base URL, unencoded (the client percent-encodes it), starting with `/` (added
    /// when missing). Put the query in ``queryItems``, not here.
    var path: String { get }
    /// Query items, percent-encoded by the client. Defaults to none.
    var queryItems: [URLQueryItem] { get }
    /// Extra request headers. Defaults to none; the client adds `Accept` and, with a body, `Content-Type`.
    var headerFields: HTTPFields { get }
    /// The request body, sent as is (typically JSON). Defaults to none.
    ///
    /// A `Data` body can be sent more than once, so retries and auth replays can resend it.
    var body: Data? { get }
    /// Whether the auth decorator attaches the user's bearer token. Defaults to `true`.
    ///
    /// Set `false` for endpoints that must work signed out (sign-in, public catalog). The flag reaches the auth
    /// middleware as a task-local value set by ``APIClient`` for the duration of the call, never as a header, so
    /// nothing of it reaches the wire and no header can switch auth off.
    var requiresAuth: Bool { get }
}

extension APIRequest {
    /// GET.
    public var method: HTTPRequest.Method { .get }
    /// No query items.
    public var queryItems: [URLQueryItem] { [] }
    /// No extra headers.
    public var headerFields: HTTPFields { [:] }
    /// No body.
    public var body: Data? { nil }
    /// Authenticated.
    public var requiresAuth: Bool { true }
}

/// The response type of endpoints whose 2xx body does not matter (204 No Content, or an ignored acknowledgement).
///
/// The client does not read it as JSON: any 2xx body, empty or not, decodes to `NoContent()`.
public struct NoContent: Decodable, Sendable, Equatable {
    /// Creates the empty value.
    package init() {}
}

extension HTTPField.Name {
    /// `Idempotency-Key`: a request carrying it may be retried even when its method is not idempotent. Package
    /// access: a public static on swift-http-types' type would clash with one that package (or an app) adds;
    /// apps write `HTTPField.Name("Idempotency-Key")!`.
    package static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

import Foundation
import HTTPTypes
import OpenAPIRuntime
@testable import ShopKitAPI

let baseURL = URL(string: "https://shop.example/api")!

struct Product: Codable, Equatable, Sendable {
    let id: String
    let name: String
    let price: Double
}

struct ProductList: Codable, Equatable, Sendable {
    let items: [Product]
}

struct GetProduct: APIRequest {
    typealias Response = Product
    let id: String
    var path: String { "/products/\(id)" }
}

struct ListProducts: APIRequest {
    typealias Response = ProductList
    var path: String { "/products" }
    var queryItems: [URLQueryItem] { [URLQueryItem(name: "q", value: "red shoes+socks"), URLQueryItem(name: "page", value: "2")] }
}

struct CreateOrder: APIRequest {
    typealias Response = NoContent
    var method: HTTPRequest.Method { .post }
    var path: String { "orders" }
    var body: Data? { Data(#"{"sku":"42"}"#.utf8) }
}

struct PublicCatalog: APIRequest {
    typealias Response = ProductList
    var path: String { "/catalog" }
    var requiresAuth: Bool { false }
}

let productJSON = #"{"id":"42","name":"Shoe","price":59.5}"#
let shoe = Product(id: "42", name: "Shoe", price: 59.5)

/// A transport error with no Equatable conformance.
struct OpaqueFailure: Error, CustomStringConvertible {
    let detail: String
    var description: String { "opaque: \(detail)" }
}

/// An Equatable transport error.
struct EquatableFailure: Error, Equatable {
    let code: Int
}

/// A transport error that says retrying cannot help.
struct PermanentFailure: Error, RetryClassifiableError {
    var isRetryable: Bool { false }
}

/// A transport error that says retrying may help.
struct TransientFailure: Error, RetryClassifiableError, Equatable {
    var isRetryable: Bool { true }
}

/// One decorator over `upstream` as ``APIClient`` runs it: the middleware alone in a ``MiddlewareChain``, with the
/// middleware at hand for what a test inspects.
struct Decorated<Middleware: ClientMiddleware>: ClientTransport {
    let middleware: Middleware
    let chain: MiddlewareChain

    init(_ upstream: any ClientTransport, _ middleware: Middleware) {
        self.middleware = middleware
        self.chain = MiddlewareChain(upstream, [middleware])
    }

    func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await chain.send(request, body: body, baseURL: baseURL, operationID: operationID)
    }
}

extension Decorated where Middleware == DeduplicationMiddleware {
    /// Callers parked on the middleware's flights.
    var waiterCount: Int { get async { await middleware.waiterCount } }
    /// Requests in flight.
    var inFlightCount: Int { get async { await middleware.inFlightCount } }
}

/// The retry middleware over `upstream`.
func retrying(
    _ upstream: any ClientTransport, policy: RetryPolicy = .default, sleeper: any Sleeper = TaskSleeper(),
    random: any RandomSource = SystemRandomSource(), now: @escaping @Sendable () -> Date = { Date() }
) -> Decorated<RetryMiddleware> {
    Decorated(upstream, RetryMiddleware(policy: policy, sleeper: sleeper, random: random, now: now))
}

/// The auth middleware over `upstream`.
func authenticating(
    _ upstream: any ClientTransport, store: any TokenStore, refresher: any TokenRefresher,
    observer: (any SignOutObserver)? = nil, requirement: AuthenticationRequirement = .everyOperation
) -> Decorated<AuthenticationMiddleware> {
    Decorated(
        upstream,
        AuthenticationMiddleware(store: store, refresher: refresher, observer: observer, requirement: requirement))
}

/// The dedup middleware over `upstream`.
func deduplicating(
    _ upstream: any ClientTransport, maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes
) -> Decorated<DeduplicationMiddleware> {
    Decorated(upstream, DeduplicationMiddleware(maxResponseBodyBytes: maxResponseBodyBytes))
}

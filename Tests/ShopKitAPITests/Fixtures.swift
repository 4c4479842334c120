import Foundation
import HTTPTypes
import ShopKitAPI

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

import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Attaches the user's bearer token and recovers from a 401 with one shared refresh and one replay:
/// ``AuthenticationMiddleware`` over a fixed upstream transport.
///
/// What it does on a 401, when it signs the user out and which requests go out without a token is described on
/// ``AuthenticationMiddleware``, whose logic this runs.
///
/// - Warning: Tokens are held in memory only while a call needs them, and never logged or put in an error.
public struct AuthenticatingTransport: ClientTransport {
    /// The transport below (normally the dedup decorator).
    public let upstream: any ClientTransport
    /// The auth logic and its state (the single-flight refreshes).
    public let middleware: AuthenticationMiddleware

    /// Creates the decorator.
    ///
    /// - Parameters:
    ///   - upstream: The transport below.
    ///   - store: Where tokens are read, saved after a refresh, and cleared on sign-out.
    ///   - refresher: Trades rejected tokens for new ones.
    ///   - observer: Told after every sign-out.
    ///   - requirement: Which operations need the token (default: all of them).
    ///   - logger: Gets one notice per sign-out (the reason only).
    public init(
        wrapping upstream: any ClientTransport, store: any TokenStore, refresher: any TokenRefresher,
        observer: (any SignOutObserver)? = nil, requirement: AuthenticationRequirement = .everyOperation,
        logger: Logger = Logger(label: "ShopKit.AuthenticatingTransport")
    ) {
        self.upstream = upstream
        self.middleware = AuthenticationMiddleware(
            store: store, refresher: refresher, observer: observer, requirement: requirement, logger: logger)
    }

    /// Sends `request` with the bearer token, recovering from one 401 as described on ``AuthenticationMiddleware``.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await middleware.intercept(request, body: body, baseURL: baseURL, operationID: operationID) {
            try await upstream.send($0, body: $1, baseURL: $2, operationID: operationID)
        }
    }
}

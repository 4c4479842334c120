import OpenAPIRuntime
import ShopKitCore

/// A ``TokenRefresher`` from a closure: give it the call to your token endpoint, and it does the rest.
///
/// ```swift
/// let refresher = ClosureTokenRefresher { refreshToken in
///     let fresh = try await myBackend.refresh(refreshToken)    // your call to the token endpoint
///     return AuthTokens(accessToken: fresh.access, refreshToken: fresh.refresh)
/// }
/// ```
///
/// It plugs into ``AuthenticationMiddleware`` (or ``ShopKitConfiguration/Auth``) like any refresher: called once
/// per rejected access token however many requests were rejected with it, its result saved and replayed. What the
/// closure throws decides the session, as for every refresher (a transient failure keeps it, a definite
/// rejection signs the user out); the errors of an ``APIClient`` or a generated client calling the token endpoint
/// are sorted first:
/// - ``APIError/transport(_:)`` and OpenAPIRuntime's `ClientError` are judged by their cause: a transport error
///   that says it is retryable (a timeout, a refused connection) keeps the session, and the callers get it;
/// - ``APIError/server(status:message:)`` with a 5xx status and ``APIError/rateLimited(retryAfter:)`` (the endpoint
///   is failing or busy) keep the session: the callers get ``TokenEndpointUnavailable``, which is retryable;
/// - ``APIError/cancelled`` keeps the session;
/// - ``APIError/unauthorized`` (the backend refused the refresh token), any other ``APIError`` (a 4xx such as
///   OAuth's `400 invalid_grant`, a decoding error), and any error that
///   is not a retryable `RetryClassifiableError` sign the user out; the callers get ``APIError/unauthorized``.
///
/// Tokens without a refresh token cannot be refreshed: the closure is not called, and the user is signed out.
///
/// - Warning: Call the token endpoint with a client *without* the auth middleware (a refresh that went through it
///   again could recurse), and never put a token in an error or a log line.
public struct ClosureTokenRefresher: TokenRefresher {
    private let exchange: @Sendable (_ refreshToken: String) async throws -> AuthTokens

    /// A refresher that trades the refresh token for new tokens with `exchange`.
    public init(_ exchange: @escaping @Sendable (_ refreshToken: String) async throws -> AuthTokens) {
        self.exchange = exchange
    }

    /// The closure's tokens for `tokens.refreshToken`; ``APIError/unauthorized`` when there is none.
    public func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        guard let refreshToken = tokens.refreshToken else { throw APIError.unauthorized }
        do {
            return try await exchange(refreshToken)
        } catch {
            throw Self.sorted(error)
        }
    }

    /// What the auth middleware should see for `error`: the cause of a wrapped transport error, a retryable error
    /// for a failing or busy endpoint, the error itself otherwise (see the type's rules).
    static func sorted(_ error: any Error) -> any Error {
        switch (error as? ClientError)?.underlyingError ?? error {
        case APIError.transport(let cause): return cause
        case let failure as APIError:
            switch failure {
            case .server(let status, _) where status >= 500: return TokenEndpointUnavailable(error: failure)
            case .rateLimited, .cancelled: return TokenEndpointUnavailable(error: failure)
            default: return failure  // 401, 403, 404, another 4xx (OAuth's 400 invalid_grant), a decoding error
            }
        case let cause: return cause
        }
    }
}

/// The token endpoint failed or was busy (a 5xx or 429), or the refresh was cancelled: a transient failure, so the
/// auth middleware keeps the session and throws this to the callers. Retryable.
public struct TokenEndpointUnavailable: Error, Sendable, RetryClassifiableError, CustomStringConvertible {
    /// What the endpoint's client threw.
    public let error: APIError

    /// Always `true`: the session is kept, and a later request may refresh.
    public var isRetryable: Bool { true }

    /// What happened and what to do.
    public var description: String {
        "the token endpoint could not refresh the session now (\(error)); the session is kept, try again later"
    }
}

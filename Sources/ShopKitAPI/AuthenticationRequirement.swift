import HTTPTypes

/// Which operations the auth middleware signs with the user's bearer token.
///
/// The default, ``everyOperation``, sends no request without a token: a signed-out user's call fails with
/// ``APIError/unauthorized`` before anything is sent. A generated client's public operations (sign-in,
/// registration, a public catalog) must go out without a token, so name them:
///
/// ```swift
/// AuthenticationMiddleware(store: store, refresher: refresher, requirement: .publicOperations(["login"]))
/// ```
///
/// or decide per request with ``custom(_:)``. A request that needs no token passes straight through: no
/// `Authorization` is added, the store is not read and a 401 is returned as is (no refresh).
///
/// ``APIClient`` requests say it themselves with ``APIRequest/requiresAuth``; that flag reaches the auth
/// middleware as a task-local value of this module, never as a header, so it cannot be forged by a header and
/// never reaches the wire.
///
/// - Warning: A request that needs no token is sent as it is: a rule that marks a private operation public
///   sends it anonymously, and the server answers 401.
public struct AuthenticationRequirement: Sendable {
    private let rule: @Sendable (_ operationID: String, _ request: HTTPRequest) -> Bool

    /// A requirement decided by `requiresAuthentication`, which gets the operation ID (a generated client's
    /// `operationId`; for ``APIClient`` the request type's name) and the request head, and returns `true` when
    /// the request must carry the bearer token.
    public static func custom(
        _ requiresAuthentication: @escaping @Sendable (_ operationID: String, _ request: HTTPRequest) -> Bool
    ) -> AuthenticationRequirement {
        AuthenticationRequirement(rule: requiresAuthentication)
    }

    /// Every operation needs the token (the default).
    public static let everyOperation = AuthenticationRequirement { _, _ in true }

    /// Every operation needs the token except those whose operation ID is in `operationIDs`
    /// (exact, case-sensitive match with the spec's `operationId`).
    public static func publicOperations(_ operationIDs: Set<String>) -> AuthenticationRequirement {
        AuthenticationRequirement { operationID, _ in !operationIDs.contains(operationID) }
    }

    /// Whether `request` (of operation `operationID`) must carry the bearer token.
    public func requiresAuthentication(operationID: String, request: HTTPRequest) -> Bool {
        rule(operationID, request)
    }

    /// `true` while ``APIClient`` sends a request whose ``APIRequest/requiresAuth`` is `false`.
    ///
    /// Task-local and internal: only this module's client sets it, it cannot be set from a header, and the auth
    /// middleware resets it for the layers below, so nothing of it reaches the wire.
    @TaskLocal static var skipsCurrentRequest = false
}

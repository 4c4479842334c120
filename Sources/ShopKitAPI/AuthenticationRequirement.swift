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
    /// The public operation IDs of ``publicOperations(_:)`` (nil for the other kinds), for the typo hint.
    private var publicOperationIDs: Set<String>? = nil

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
    ///
    /// Prefer the generated ids (`Operations.login.id`) to strings: a typo then does not compile. A string that
    /// differs from a request's operation ID only in case, `-` or `_` is logged once by the auth middleware when
    /// that request is refused for want of a token.
    public static func publicOperations(_ operationIDs: Set<String>) -> AuthenticationRequirement {
        var requirement = AuthenticationRequirement { operationID, _ in !operationIDs.contains(operationID) }
        requirement.publicOperationIDs = operationIDs
        return requirement
    }

    /// A public operation ID that `operationID` resembles but does not equal (the same letters and digits, ignoring
    /// case, `-` and `_`): most likely a typo in the configuration.
    func publicOperation(resembling operationID: String) -> String? {
        guard let publicOperationIDs, !publicOperationIDs.isEmpty else { return nil }
        func folded(_ text: String) -> String { text.lowercased().filter { $0 != "-" && $0 != "_" } }
        let target = folded(operationID)
        return publicOperationIDs.first { $0 != operationID && folded($0) == target }
    }

    /// Whether `request` (of operation `operationID`) must carry the bearer token.
    package func requiresAuthentication(operationID: String, request: HTTPRequest) -> Bool {
        rule(operationID, request)
    }

    /// `true` while ``APIClient`` sends a request whose ``APIRequest/requiresAuth`` is `false`.
    ///
    /// Task-local and internal: only this module's client sets it, it cannot be set from a header, and the auth
    /// middleware resets it for the layers below, so nothing of it reaches the wire.
    @TaskLocal static var skipsCurrentRequest = false
}

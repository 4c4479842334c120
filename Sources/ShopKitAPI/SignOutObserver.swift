/// Why the auth decorator signed the user out.
public enum SignOutReason: Sendable, Equatable, CustomStringConvertible {
    /// The refresher could not trade the tokens for new ones (rejected refresh token, or no refresh token).
    case refreshFailed
    /// The server answered 401 again to the one replay made with fresh tokens.
    case rejectedAfterReplay

    /// The reason in words, for logs.
    public var description: String {
        switch self {
        case .refreshFailed: return "the session could not be refreshed"
        case .rejectedAfterReplay: return "the server rejected the refreshed credentials"
        }
    }
}

/// Told when ``AuthenticationMiddleware`` signs the user out, so the app can show its sign-in screen.
///
/// Called once per sign-out, however many requests failed with it, after the tokens were cleared.
public protocol SignOutObserver: Sendable {
    /// The stored tokens were cleared for `reason`.
    func didSignOut(reason: SignOutReason) async
}

/// A ``SignOutObserver`` made from a closure.
public struct SignOutHandler: SignOutObserver {
    private let handler: @Sendable (SignOutReason) async -> Void

    /// Calls `handler` on every sign-out.
    public init(_ handler: @escaping @Sendable (SignOutReason) async -> Void) {
        self.handler = handler
    }

    /// Calls the handler.
    public func didSignOut(reason: SignOutReason) async {
        await handler(reason)
    }
}

/// A ``TokenStore`` that keeps the tokens in this process's memory only.
///
/// For tests, demos, and short-lived processes (a script that signs in, does its work and exits). Tokens are
/// lost when the process exits, so the user signs in again on the next run; an app that should stay signed in
/// uses ShopKitCredentials's keyring or encrypted-file store instead.
///
/// - Warning: The tokens are held in ordinary memory for the store's lifetime (not wiped on release).
public actor InMemoryTokenStore: TokenStore {
    /// The stored tokens, or `nil` when signed out (package access: callers read them with ``loadTokens()``).
    package private(set) var tokens: AuthTokens?

    /// A store holding `tokens` (signed out by default).
    public init(_ tokens: AuthTokens? = nil) { self.tokens = tokens }

    /// The stored tokens.
    public func loadTokens() async throws -> AuthTokens? { tokens }

    /// Replaces the stored tokens.
    public func saveTokens(_ tokens: AuthTokens) async throws { self.tokens = tokens }

    /// Removes the tokens.
    public func clearTokens() async throws { tokens = nil }
}

import Foundation

/// The tokens a signed-in user holds.
///
/// Its descriptions and reflection never show a token, so it is safe to log or `dump`: `String(reflecting:)` and
/// `debugPrint` fall back to the redacted ``description`` (there is no separate `debugDescription` to forget).
public struct AuthTokens: Sendable, Equatable, Codable, CustomStringConvertible, CustomReflectable {
    /// The bearer token sent in `Authorization`.
    public var accessToken: String
    /// The token the refresher trades for a new access token, if the backend issues one.
    public var refreshToken: String?
    /// When the access token expires, if known.
    public var expiresAt: Date?

    /// Creates a token set; only the access token is required.
    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Date? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    /// A description with both tokens redacted; the expiry is shown.
    public var description: String {
        "AuthTokens(accessToken: <redacted>, refreshToken: \(refreshToken == nil ? "nil" : "<redacted>"), "
            + "expiresAt: \(expiresAt.map { "\($0)" } ?? "nil"))"
    }

    /// A mirror with one redacted child, so `dump` and reflection never show a token.
    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description], displayStyle: .struct)
    }
}

/// Where the auth decorator reads and writes the user's tokens.
///
/// ShopKitCredentials's keyring and encrypted-file stores conform; tests inject an in-memory one.
///
/// - Warning: A conforming store holds bearer credentials. Its errors and log lines must never contain a token
///   (the auth decorator passes store errors on to callers, who may log them), and it should keep tokens at rest
///   only where the platform protects them (a keyring or an encrypted file, never plain `UserDefaults`-like files).
public protocol TokenStore: Sendable {
    /// The stored tokens, or `nil` when the user is signed out.
    func loadTokens() async throws -> AuthTokens?
    /// Replaces the stored tokens.
    func saveTokens(_ tokens: AuthTokens) async throws
    /// Removes the stored tokens (sign-out).
    func clearTokens() async throws
}

/// Trades the current tokens for fresh ones (typically a call to the backend's token endpoint).
public protocol TokenRefresher: Sendable {
    /// Returns new tokens, or throws when the session cannot be refreshed.
    func refresh(_ tokens: AuthTokens) async throws -> AuthTokens
}

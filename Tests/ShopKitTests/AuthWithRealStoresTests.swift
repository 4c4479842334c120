import Foundation
import ShopKit
import TestSupport
import Testing

/// The API client's auth decorator with a refresher and each real credential store: the keyring (inside
/// scripts/with-keyring only) and the encrypted file.
@Suite(.timeLimit(.minutes(3))) struct AuthWithRealStoresTests {
    struct Profile: Decodable, Sendable, Equatable { let name: String }

    struct GetProfile: APIRequest {
        typealias Response = Profile
        var path: String { "/me" }
    }

    /// Whether the private keyring session of scripts/with-keyring is there (it sets SHOPKIT_REAL_HOME), so the
    /// keyring cases never touch the developer's own keyring.
    static let insidePrivateKeyring = ProcessInfo.processInfo.environment["SHOPKIT_REAL_HOME"] != nil
    static let keyringOnly: Comment = "keyring tests run only inside scripts/with-keyring (SHOPKIT_REAL_HOME is unset)"

    /// A backend that accepts only `Bearer fresh` and answers 401 to anything else.
    private static let backend = StubTransport { request in
        request.authorization == "Bearer fresh" ? .json(#"{"name":"Ada"}"#) : .status(401)
    }

    private static func client(store: any TokenStore, refresher: any TokenRefresher, observer: RecordingSignOutObserver)
        -> APIClient
    {
        ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://shop.test")!,
            configuration: ShopKitConfiguration(
                auth: .init(tokenStore: store, tokenRefresher: refresher, signOutObserver: observer)),
            transport: backend)
    }

    private static func refreshedTokensAreSaved(to backend: any CredentialBackend) async throws {
        let key = CredentialKey(service: "dev.shopkit.auth-test", account: "refresh-\(UUID())")
        let vault = CredentialVault(backend: backend)
        let store = VaultTokenStore(vault: vault, key: key)
        try await store.saveTokens(AuthTokens(accessToken: "stale", refreshToken: "r1"))
        let observer = RecordingSignOutObserver()
        let client = client(
            store: store, refresher: CountingRefresher(returning: AuthTokens(accessToken: "fresh", refreshToken: "r2")),
            observer: observer)

        #expect(try await client.send(GetProfile()) == Profile(name: "Ada"))
        #expect(try await vault.read(key) == AuthTokens(accessToken: "fresh", refreshToken: "r2"))
        try await vault.delete(key)
    }

    private static func failedRefreshSignsOut(from backend: any CredentialBackend) async throws {
        let key = CredentialKey(service: "dev.shopkit.auth-test", account: "signout-\(UUID())")
        let vault = CredentialVault(backend: backend)
        let store = VaultTokenStore(vault: vault, key: key)
        try await store.saveTokens(AuthTokens(accessToken: "stale", refreshToken: "revoked"))
        let observer = RecordingSignOutObserver()
        struct Revoked: Error {}
        let client = client(store: store, refresher: CountingRefresher { _ in throw Revoked() }, observer: observer)

        await #expect(throws: APIError.unauthorized) { try await client.send(GetProfile()) }
        #expect(try await vault.read(key) == nil)
        #expect(await observer.reasons.count == 1)
    }

    @Test(.enabled(if: insidePrivateKeyring, keyringOnly))
    func refreshedTokensAreSavedToTheKeyring() async throws {
        try await Self.refreshedTokensAreSaved(to: KeyringStore(timeout: .seconds(60)))
    }

    @Test func refreshedTokensAreSavedToTheFile() async throws {
        try await withTemporaryFileBackend("auth") { try await Self.refreshedTokensAreSaved(to: $0) }
    }

    @Test(.enabled(if: insidePrivateKeyring, keyringOnly))
    func failedRefreshSignsOutAndClearsTheKeyring() async throws {
        try await Self.failedRefreshSignsOut(from: KeyringStore(timeout: .seconds(60)))
    }

    @Test func failedRefreshSignsOutAndClearsTheFile() async throws {
        try await withTemporaryFileBackend("auth") { try await Self.failedRefreshSignsOut(from: $0) }
    }
}

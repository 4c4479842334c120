import Foundation
import ShopKit
import TestSupport
import Testing

/// The API client's auth decorator with a refresher and each real credential store: the keyring (inside
/// scripts/with-keyring only) and the encrypted file.
@Suite struct AuthWithRealStoresTests {
    struct Profile: Decodable, Sendable, Equatable { let name: String }

    struct GetProfile: APIRequest {
        typealias Response = Profile
        var path: String { "/me" }
    }

    enum Backend: String, CaseIterable, Sendable { case keyring, file }

    private static var insidePrivateKeyring: Bool { ProcessInfo.processInfo.environment["SHOPKIT_REAL_HOME"] != nil }

    private static func makeBackend(_ kind: Backend) throws -> any CredentialBackend {
        switch kind {
        case .keyring:
            return KeyringStore()
        case .file:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-auth-\(UUID())")
            return EncryptedFileStore(
                configuration: .init(
                    url: directory.appendingPathComponent("tokens.skt"), kdf: .init(logN: 10, r: 8, p: 1),
                    deviceID: "test-device"),
                passphrase: Passphrase(bytes: Array("auth-test-passphrase".utf8)))
        }
    }

    /// A backend that accepts only `Bearer fresh` and answers 401 to anything else.
    private static let backend = StubTransport { request in
        request.authorization == "Bearer fresh" ? .json(#"{"name":"Ada"}"#) : .status(401)
    }

    private static func client(store: any TokenStore, refresher: any TokenRefresher, observer: RecordingSignOutObserver)
        -> APIClient
    {
        ShopKitFactory.makeAPIClient(
            ShopKitConfiguration(
                baseURL: URL(string: "https://shop.test")!, tokenStore: store, tokenRefresher: refresher,
                signOutObserver: observer),
            transport: backend)
    }

    @Test(arguments: Backend.allCases)
    func refreshedTokensAreSavedToTheStore(_ kind: Backend) async throws {
        if kind == .keyring && !Self.insidePrivateKeyring { return }
        let key = CredentialKey(service: "dev.shopkit.auth-test", account: "refresh-\(UUID())")
        let vault = CredentialVault(backend: try Self.makeBackend(kind))
        let store = VaultTokenStore(vault: vault, key: key)
        try await store.saveTokens(AuthTokens(accessToken: "stale", refreshToken: "r1"))
        let observer = RecordingSignOutObserver()
        let client = Self.client(
            store: store, refresher: CountingRefresher(returning: AuthTokens(accessToken: "fresh", refreshToken: "r2")),
            observer: observer)

        #expect(try await client.send(GetProfile()) == Profile(name: "Ada"))
        #expect(try await vault.read(key) == AuthTokens(accessToken: "fresh", refreshToken: "r2"))
        try await vault.delete(key)
    }

    @Test(arguments: Backend.allCases)
    func failedRefreshSignsOutAndClearsTheStore(_ kind: Backend) async throws {
        if kind == .keyring && !Self.insidePrivateKeyring { return }
        let key = CredentialKey(service: "dev.shopkit.auth-test", account: "signout-\(UUID())")
        let vault = CredentialVault(backend: try Self.makeBackend(kind))
        let store = VaultTokenStore(vault: vault, key: key)
        try await store.saveTokens(AuthTokens(accessToken: "stale", refreshToken: "revoked"))
        let observer = RecordingSignOutObserver()
        struct Revoked: Error {}
        let client = Self.client(store: store, refresher: CountingRefresher { _ in throw Revoked() }, observer: observer)

        await #expect(throws: APIError.unauthorized) { try await client.send(GetProfile()) }
        #expect(try await vault.read(key) == nil)
        #expect(await observer.reasons.count == 1)
    }
}

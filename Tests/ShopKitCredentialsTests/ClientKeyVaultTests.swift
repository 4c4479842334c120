import Foundation
import ShopKitAPI
import TestSupport
import Testing

@testable import ShopKitCredentials

/// The vault stores client keys as their own kind, under `userPresence` unless told otherwise, and never hands one
/// out as tokens (issue 26, "client-certificate keys").
@Suite(.timeLimit(.minutes(3))) struct ClientKeyVaultTests {
    static let chainPEM = TestCertificates.chain(["client-ecdsa", "client-intermediate"])
    static let keyPEM = Array(TestCertificates.privateKey("client-ecdsa").utf8)
    static let item = CredentialKey(service: "dev.shopkit.kinds", account: "client")

    @Test func aStoredKeyIsItsOwnKindAndAsksForPresence() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            let asked = Counter()
            let vault = CredentialVault(
                backend: store, presenceVerifier: ClosurePresenceVerifier { _ in
                    asked.increment()
                    return true
                })
            try await vault.storeClientIdentity(certificateChainPEM: Self.chainPEM, privateKeyPEM: Self.keyPEM, as: Self.item)
            let stored = try #require(try await store.read(Self.item.of(.clientKey)), "no client key item")
            #expect(stored.policy == AccessPolicy(access: .userPresence(reuseSeconds: 0)))
            #expect(try await store.read(Self.item) == nil, "the key must not be a token item")

            // A token of the same name is another item: it leaves the key, and the key never comes out as tokens.
            let tokens = VaultTokenStore(vault: vault, key: Self.item)
            #expect(try await tokens.loadTokens() == nil)
            try await tokens.saveTokens(AuthTokens(accessToken: "bearer"))
            #expect(try await tokens.loadTokens() == AuthTokens(accessToken: "bearer"))
            await #expect(throws: CredentialError.self) { _ = try await vault.read(Self.item.of(.clientKey)) }
            await #expect(throws: CredentialError.self) {
                try await vault.write(AuthTokens(accessToken: "x"), for: Self.item.of(.clientKey))
            }

            let identity = try await vault.clientIdentity(certificateChainPEM: Self.chainPEM, keyItem: Self.item)
            #expect(identity?.subject == "O=ShopKit Test,CN=shopkit-client-ecdsa")
            #expect(asked.value == 1)

            // Signing out (deleting the token) leaves the key; deleting the identity leaves the token.
            try await tokens.clearTokens()
            #expect(try await store.read(Self.item.of(.clientKey)) != nil)
            try await tokens.saveTokens(AuthTokens(accessToken: "bearer"))
            try await vault.deleteClientIdentity(keyItem: Self.item)
            #expect(try await store.read(Self.item.of(.clientKey)) == nil)
            #expect(try await tokens.loadTokens() == AuthTokens(accessToken: "bearer"))
        }
    }

    /// Without a verifier that can run, the default policy cannot be honoured: nothing is stored.
    @Test func theDefaultPolicyNeedsAVerifier() async throws {
        try await withTempDirectory { dir in
            let vault = CredentialVault(backend: makeStore(dir.storeURL))
            await #expect(throws: CredentialError.self) {
                try await vault.storeClientIdentity(
                    certificateChainPEM: Self.chainPEM, privateKeyPEM: Self.keyPEM, as: Self.item)
            }
            #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
        }
    }

    /// A key stored by an earlier ShopKit, as a token item, still loads.
    @Test func aKeyStoredAsATokenByAnEarlierVersionStillLoads() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(
                StoredCredential(
                    tokens: AuthTokens(accessToken: String(decoding: Self.keyPEM, as: UTF8.self)), policy: .afterFirstUnlock),
                for: Self.item)
            let identity = try await CredentialVault(backend: store)
                .clientIdentity(certificateChainPEM: Self.chainPEM, keyItem: Self.item)
            #expect(identity?.subject == "O=ShopKit Test,CN=shopkit-client-ecdsa")
        }
    }
}

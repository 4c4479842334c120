import ShopKitAPI

/// Any backend, through a vault, as ShopKitAPI's `TokenStore`: the auth decorator's view of one key.
///
/// Sign-out (`clearTokens`) deletes the item.
public struct VaultTokenStore: TokenStore {
    /// The vault enforcing the policy.
    package let vault: CredentialVault
    /// The item this store reads and writes.
    package let key: CredentialKey
    /// The policy new tokens are saved under.
    package let policy: AccessPolicy

    /// A token store for `key` in `vault`, saving under `policy`.
    public init(vault: CredentialVault, key: CredentialKey, policy: AccessPolicy = AccessPolicy()) {
        self.vault = vault
        self.key = key
        self.policy = policy
    }

    /// The stored tokens, or `nil` when signed out; throws `CredentialError`.
    public func loadTokens() async throws -> AuthTokens? { try await vault.read(key) }

    /// Replaces the stored tokens; throws `CredentialError`.
    public func saveTokens(_ tokens: AuthTokens) async throws { try await vault.write(tokens, for: key, policy: policy) }

    /// Deletes the item (sign-out); throws `CredentialError`.
    public func clearTokens() async throws { try await vault.delete(key) }
}

import Foundation
import Logging
import ShopKitAPI

/// A presence verifier backed by a closure: for GUI prompts, hardware keys, or tests.
public struct ClosurePresenceVerifier: PresenceVerifier {
    /// Whether the closure can be asked (e.g. a prompt can be shown).
    public let canVerify: Bool
    private let verify: @Sendable (_ reason: String) async -> Bool

    /// `verify` returns `true` when the user proved presence for `reason`, `false` when they refused.
    public init(canVerify: Bool = true, verify: @escaping @Sendable (_ reason: String) async -> Bool) {
        self.canVerify = canVerify
        self.verify = verify
    }

    /// Calls the closure; `false` becomes `.accessDenied`.
    public func verifyPresence(reason: String) async throws(CredentialError) {
        guard await verify(reason) else { throw .accessDenied("the user did not confirm presence") }
    }
}

/// Stores for every backend through a vault, as ShopKitAPI's `TokenStore`: the auth decorator's view of one key.
///
/// Sign-out (`clearTokens`) deletes the item.
public struct VaultTokenStore: TokenStore {
    /// The vault enforcing the policy.
    public let vault: CredentialVault
    /// The item this store reads and writes.
    public let key: CredentialKey
    /// The policy new tokens are saved under.
    public let policy: AccessPolicy

    /// A token store for `key` in `vault`, saving under `policy`.
    public init(vault: CredentialVault, key: CredentialKey, policy: AccessPolicy = .afterFirstUnlock) {
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

/// Moves the item for `key` from `source` to `destination`, keeping its policy; returns `false` when `source`
/// has no such item. Moving is always this explicit call, never a side effect of a read or of backend selection.
///
/// The destination is written and read back before the source item is deleted, so a failure leaves the item in
/// the source. A `thisDeviceOnly` item is refused (`.policyUnsupported`) by a destination that cannot bind.
///
/// - Warning: This reads the backends directly and so does not ask for presence; callers moving `userPresence`
///   items should read them through a ``CredentialVault`` first if the move itself must be confirmed.
@discardableResult
public func migrate(
    _ key: CredentialKey, from source: any CredentialBackend, to destination: any CredentialBackend,
    logger: Logger = Logger(label: "ShopKitAuth")
) async throws(CredentialError) -> Bool {
    guard let credential = try await source.read(key) else {
        logger.info("nothing to migrate", metadata: ["key": "\(key)", "from": "\(source.name)"])
        return false
    }
    if credential.policy.thisDeviceOnly && !destination.canBindToDevice {
        throw .policyUnsupported("the \(destination.name) store cannot bind \(key) to this device")
    }
    try await destination.write(credential, for: key)
    guard try await destination.read(key) == credential else {
        throw .io("\(key) did not read back from the \(destination.name) store; the source item was kept")
    }
    try await source.delete(key)
    logger.info("credential migrated", metadata: ["key": "\(key)", "from": "\(source.name)", "to": "\(destination.name)"])
    return true
}

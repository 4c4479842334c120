import Foundation
import Logging
import ShopKitAPI

// Placeholder API of the policy-enforcing front; the real implementation replaces this file.

/// Proves that the user is present (typed a passphrase, touched a key) before a protected read.
public protocol PresenceVerifier: Sendable {
    /// Whether a proof can be asked for here (a terminal is attached, a prompt is possible).
    var canVerify: Bool { get }
    /// Asks for a proof; returns normally when the user is present, throws `CredentialError.accessDenied` when not.
    func verifyPresence(reason: String) async throws(CredentialError)
}

/// The front door to stored credentials: a backend plus the access policy's presence check.
///
/// Reads of `userPresence` items need a proof from the verifier no older than the item's reuse window;
/// with no verifier able to run, the read fails closed.
public actor CredentialVault {
    /// The backend holding the items.
    public nonisolated let backend: any CredentialBackend

    public init(
        backend: any CredentialBackend,
        presenceVerifier: (any PresenceVerifier)? = nil,
        clock: @escaping @Sendable () -> Date = Date.init,
        logger: Logger = Logger(label: "ShopKitAuth")
    ) {
        self.backend = backend
    }

    /// Reads the tokens for `key`, enforcing the item's policy; `nil` when there is no item.
    public func read(_ key: CredentialKey) async throws(CredentialError) -> AuthTokens? {
        try await backend.read(key)?.tokens
    }

    /// Stores `tokens` for `key` under `policy`; refuses a policy this machine cannot honour.
    public func write(_ tokens: AuthTokens, for key: CredentialKey, policy: AccessPolicy = .afterFirstUnlock)
        async throws(CredentialError)
    {
        try await backend.write(StoredCredential(tokens: tokens, policy: policy), for: key)
    }

    /// Deletes the item for `key`.
    public func delete(_ key: CredentialKey) async throws(CredentialError) {
        try await backend.delete(key)
    }
}

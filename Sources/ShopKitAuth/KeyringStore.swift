import ShopKitAPI

// Placeholder API of the Secret Service backend; the real implementation replaces this file.

/// What a non-prompting probe of the Secret Service found.
public enum KeyringProbe: Sendable, Equatable {
    /// A Secret Service answered; `locked` says whether the default collection is locked.
    case available(locked: Bool)
    /// No Secret Service answered, with the reason (no session bus, no daemon, timeout).
    case unavailable(String)
}

/// Tokens in the Secret Service keyring (gnome-keyring, KWallet, KeePassXC) through libsecret.
public final class KeyringStore: CredentialBackend {
    public let name = "keyring"
    public let canBindToDevice = true

    public init(timeout: Duration = .seconds(5), allowUnlockPrompt: Bool = false) {}

    /// Asks whether a Secret Service answers, never prompting.
    public func probe() async -> KeyringProbe { .unavailable("not implemented") }

    public func read(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential? {
        throw .unavailable("not implemented")
    }

    public func write(_ credential: StoredCredential, for key: CredentialKey) async throws(CredentialError) {
        throw .unavailable("not implemented")
    }

    public func delete(_ key: CredentialKey) async throws(CredentialError) {
        throw .unavailable("not implemented")
    }
}

import CLibSecret
import Foundation
import ShopKitOpenSSL
import ShopKitAPI

/// What a non-prompting probe of the Secret Service found.
///
/// Only "there is nothing to talk to" is ``unavailable(_:)``; a Secret Service that is there but does not work is
/// ``failing(_:)``, which backend selection treats as an error rather than a reason to use the file.
public enum KeyringProbe: Sendable, Equatable {
    /// A Secret Service answered; `locked` says whether the default collection is locked.
    case available(locked: Bool)
    /// There is no Secret Service: no session bus, or nothing owns `org.freedesktop.secrets` on it; the reason.
    case unavailable(String)
    /// Something is there but failing: a D-Bus error from the service or the bus, or no answer within the
    /// timeout (a frozen daemon); the reason.
    case failing(String)
}

/// Tokens in the Secret Service keyring (gnome-keyring, KWallet, KeePassXC) through libsecret.
///
/// Each item is stored under the schema `dev.shopkit.Token` with the attributes `service` and `account` (and
/// `device`, this machine's id, for `thisDeviceOnly` items); the secret is a compact JSON body holding the tokens,
/// their expiry and the access policy (see `KeyringItemBody`). Client key items (``CredentialKind/clientKey``) have
/// a schema of their own, `dev.shopkit.ClientKey`, and the attribute `kind` = `client-key`: libsecret matches the
/// schema name, so a token lookup or store never finds or replaces a key. Every libsecret call of the process runs on one
/// dedicated serial thread with a timeout, so a stuck D-Bus call never hangs the caller or the cooperative pool.
///
/// A read tells apart an absent item (`nil`), a locked one (``CredentialError/locked(_:)``) and a keyring that
/// does not answer (``CredentialError/unavailable(_:)``). Without `allowUnlockPrompt` nothing ever prompts.
///
/// - Warning: Any process of the same user on the session bus can ask the Secret Service for these items; the
///   keyring protects them at rest and while locked, not from the user's other programs. Presence checks
///   (`userPresence`) are enforced by ``CredentialVault``, not here.
public final class KeyringStore: CredentialBackend {
    /// `keyring`, for logs.
    public let name = "keyring"

    /// How long one libsecret call may take before it is cancelled and reported as unavailable.
    package let timeout: Duration
    /// Whether a read or write may ask the Secret Service to unlock a locked collection (which may prompt).
    package let allowUnlockPrompt: Bool

    let worker: LibSecretThread
    let deviceID: String?
    /// Fires each call's timeout (injectable for tests).
    let timer: any JobTimer

    /// Creates a store on the process's D-Bus session bus.
    ///
    /// - Parameters:
    ///   - timeout: the longest one call may take; past it the D-Bus call is cancelled and the operation fails with
    ///     ``CredentialError/unavailable(_:)`` (``CredentialError/outcomeUnknown(_:)`` for a write or delete that
    ///     had started).
    ///   - allowUnlockPrompt: when false (the default) a locked collection is reported as
    ///     ``CredentialError/locked(_:)`` without prompting.
    public convenience init(timeout: Duration = .seconds(5), allowUnlockPrompt: Bool = false) {
        self.init(timeout: timeout, allowUnlockPrompt: allowUnlockPrompt, deviceID: currentMachineID())
    }

    /// Creates a store with an explicit device id (tests use it to play another machine) and timer.
    init(timeout: Duration, allowUnlockPrompt: Bool, deviceID: String?, timer: any JobTimer = DispatchJobTimer()) {
        self.timeout = timeout
        self.allowUnlockPrompt = allowUnlockPrompt
        self.deviceID = deviceID
        self.timer = timer
        self.worker = LibSecretThread.shared
    }

    /// Whether this machine has an id to bind `thisDeviceOnly` items to (`/etc/machine-id`).
    public var canBindToDevice: Bool { deviceID != nil }

    /// Asks whether a Secret Service answers and whether its default collection is locked, never prompting.
    ///
    /// A service without a default collection is reported as `available(locked: false)`. No session bus, or no
    /// owner of the Secret Service name, is ``KeyringProbe/unavailable(_:)``; an error from a service or bus that
    /// is there, or no answer within `timeout`, is ``KeyringProbe/failing(_:)``.
    public func probe() async -> KeyringProbe {
        do throws(CredentialError) {
            return try await worker.run(timeout: timeout, timer: timer) { session, cancellable in
                Self.probe(session: session, cancellable: cancellable)
            }
        } catch {
            // Only the timer throws here: something holds the bus (or the name) but did not answer in time.
            return .failing(error.reason ?? error.description)
        }
    }

    /// Whether the D-Bus connection under the store's Secret Service proxy would end the process when the bus
    /// goes away (it must never: a vanished bus is reported as unavailable). For tests and diagnostics.
    func connectionExitsOnClose() async throws(CredentialError) -> Bool {
        try await worker.run(timeout: timeout, timer: timer) { session, cancellable throws(CredentialError) in
            try session.withReconnect { () throws(CredentialError) in
                try session.serviceConnectionExitsOnClose(cancellable)
            }
        }
    }

    /// Reads the item for `key`; `nil` when there is none.
    ///
    /// Throws ``CredentialError/locked(_:)`` when the item (or, with no item visible, the default collection) is
    /// locked and unlocking is not allowed or was dismissed, ``CredentialError/wrongDevice`` for a
    /// `thisDeviceOnly` item bound to another machine, and ``CredentialError/unavailable(_:)`` when no Secret
    /// Service answers in time.
    public func read(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential? {
        if key.kind == .clientKey {
            // The generic read of a client key item (migrate, a backend read) makes a String of it, as tokens are:
            // the vault's clientIdentity reads it with readClientKey instead.
            guard let (pem, policy) = try await readClientKey(key) else { return nil }
            return StoredCredential(
                tokens: AuthTokens(accessToken: pem.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }),
                policy: policy)
        }
        let unlock = allowUnlockPrompt
        let device = deviceID
        return try await worker.run(timeout: timeout, timer: timer) { session, cancellable throws(CredentialError) in
            try session.withReconnect { () throws(CredentialError) in
                try Self.read(key, unlock: unlock, device: device, session: session, cancellable: cancellable)
            }
        }
    }

    /// Stores `credential` for `key`, replacing any earlier item for the same service and account.
    ///
    /// A write that times out before it starts is ``CredentialError/unavailable(_:)``; one that times out while it
    /// runs is ``CredentialError/outcomeUnknown(_:)`` (the item may or may not have been stored).
    ///
    /// A `thisDeviceOnly` credential is bound to this machine's id; with no machine id it is refused
    /// (``CredentialError/policyUnsupported(_:)``).
    public func write(_ credential: StoredCredential, for key: CredentialKey) async throws(CredentialError) {
        if key.kind == .clientKey {
            return try await writeClientKey(
                SecureBytes(copying: credential.tokens.accessToken.utf8), policy: credential.policy, for: key)
        }
        var device: String?
        if credential.policy.thisDeviceOnly {
            guard let deviceID else {
                throw .policyUnsupported("this machine has no /etc/machine-id to bind a this-device-only item to")
            }
            device = deviceID
        }
        let body = KeyringItemBody(credential, device: device, kind: key.kind)
        let unlock = allowUnlockPrompt
        let effect = JobEffect.changes("storing the item for \(key)")
        try await worker.run(timeout: timeout, effect: effect, timer: timer) {
            [device] session, cancellable throws(CredentialError) in
            try session.withReconnect { () throws(CredentialError) in
                try Self.write(body, for: key, device: device, unlock: unlock, session: session, cancellable: cancellable)
            }
        }
    }

    /// Deletes every item for `key` (on any device); deleting a missing item succeeds.
    ///
    /// Like a write, a delete interrupted by its timeout is ``CredentialError/outcomeUnknown(_:)``.
    ///
    /// Never reports success while the item stays: a matching item that is locked (and, with `allowUnlockPrompt`,
    /// was not unlocked), or a locked default collection that may hide one, is ``CredentialError/locked(_:)``, and
    /// nothing is deleted.
    public func delete(_ key: CredentialKey) async throws(CredentialError) {
        let unlock = allowUnlockPrompt
        let effect = JobEffect.changes("deleting the items for \(key)")
        try await worker.run(timeout: timeout, effect: effect, timer: timer) {
            session, cancellable throws(CredentialError) in
            try session.withReconnect { () throws(CredentialError) in
                try Self.delete(key, unlock: unlock, session: session, cancellable: cancellable)
            }
        }
    }
}

import Foundation
import ShopKitAPI

/// What kind of secret an item holds. Each kind has names of its own: an item of one kind is never read, replaced
/// or deleted through a key of another, even with the same service and account.
public enum CredentialKind: String, Sendable, Hashable, CaseIterable {
    /// API tokens (ShopKitAPI's `AuthTokens`): the default.
    case tokens
    /// A client certificate's private key (``CredentialVault/storeClientIdentity(certificateChainPEM:privateKeyPEM:as:policy:)``).
    case clientKey
}

/// Names one stored credential: the service it belongs to, the account within it, and the kind of secret.
///
/// Two keys are equal when their kinds are and their UTF-8 bytes are, not when Swift's `String ==` says so: `"é"` in
/// NFC and in NFD are two keys, as they are to the Secret Service (which compares attribute bytes), so both
/// backends agree.
public struct CredentialKey: Hashable, Sendable, CustomStringConvertible {
    /// The service, e.g. `com.example.shop`.
    public let service: String
    /// The account within the service, e.g. a user id.
    public let account: String
    /// The kind of secret (tokens unless said otherwise); part of the item's name.
    public let kind: CredentialKind

    public init(service: String, account: String, kind: CredentialKind = .tokens) {
        self.service = service
        self.account = account
        self.kind = kind
    }

    /// `service/account`, or `client key service/account`.
    public var description: String { kind == .tokens ? "\(service)/\(account)" : "client key \(service)/\(account)" }

    /// The same service and account, of `kind`.
    package func of(_ kind: CredentialKind) -> CredentialKey {
        CredentialKey(service: service, account: account, kind: kind)
    }

    /// Byte-wise equality of the UTF-8 forms (no Unicode normalisation), and the same kind.
    public static func == (lhs: CredentialKey, rhs: CredentialKey) -> Bool {
        lhs.kind == rhs.kind && lhs.service.utf8.elementsEqual(rhs.service.utf8)
            && lhs.account.utf8.elementsEqual(rhs.account.utf8)
    }

    /// Hashes the kind and the UTF-8 bytes, consistently with ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(service.utf8.count)
        for byte in service.utf8 { hasher.combine(byte) }
        for byte in account.utf8 { hasher.combine(byte) }
    }

    /// Byte-wise order of the UTF-8 forms (service, then account, then kind), for a stable listing.
    func precedes(_ other: CredentialKey) -> Bool {
        if !service.utf8.elementsEqual(other.service.utf8) {
            return service.utf8.lexicographicallyPrecedes(other.service.utf8)
        }
        if !account.utf8.elementsEqual(other.account.utf8) {
            return account.utf8.lexicographicallyPrecedes(other.account.utf8)
        }
        return kind.rawValue < other.kind.rawValue
    }
}

/// Who may read a stored credential, in the spirit of the Keychain's access control.
public struct AccessPolicy: Sendable, Hashable, Codable {
    /// When a read is allowed.
    public enum Access: Sendable, Hashable, Codable {
        /// Whenever the keyring or the file is unlocked.
        case afterFirstUnlock
        /// Only with a proof of presence no older than `reuseSeconds`.
        case userPresence(reuseSeconds: Int)
    }

    /// When a read is allowed.
    public var access: Access
    /// Bound to this machine: a copy elsewhere does not open.
    public var thisDeviceOnly: Bool

    public init(access: Access = .afterFirstUnlock, thisDeviceOnly: Bool = false) {
        self.access = access
        self.thisDeviceOnly = thisDeviceOnly
    }

    /// Readable whenever unlocked, on any device: `AccessPolicy()` (package access: the tests' shorthand).
    package static let afterFirstUnlock = AccessPolicy()
}

/// What a backend holds for one key: the tokens and the policy they were stored under.
public struct StoredCredential: Sendable, Equatable {
    /// The tokens.
    public var tokens: AuthTokens
    /// The access policy the item was stored with.
    public var policy: AccessPolicy

    public init(tokens: AuthTokens, policy: AccessPolicy) {
        self.tokens = tokens
        self.policy = policy
    }
}

/// A backend that stores credentials: the Secret Service keyring or the encrypted file.
///
/// - Warning: A backend's `read` does not check the access policy's presence requirement: go through
///   ``CredentialVault``, which does. Device binding is enforced by the backend itself.
public protocol CredentialBackend: Sendable {
    /// A short name for logs: `keyring` or `file`.
    var name: String { get }
    /// Reads the item for `key`; `nil` when there is no such item.
    func read(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential?
    /// Stores `credential` for `key`, replacing any earlier item.
    func write(_ credential: StoredCredential, for key: CredentialKey) async throws(CredentialError)
    /// Deletes the item for `key`; deleting a missing item succeeds.
    func delete(_ key: CredentialKey) async throws(CredentialError)
    /// Whether this backend can bind an item to this device (and so store `thisDeviceOnly` items).
    var canBindToDevice: Bool { get }
}

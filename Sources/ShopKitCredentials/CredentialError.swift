/// A credential-store failure, typed so callers can tell a locked keyring from a missing one.
/// Messages never contain a secret.
///
/// A struct, not an enum, so that a new kind of failure is not a breaking change (as ShopKitTLS's `TLSError`).
/// Compare with `==` (`error == .wrongPassphrase`), throw the static members (`throw .unavailable("no bus")`), or
/// switch on ``code``, which says what kind of failure it is without its reason:
///
/// ```swift
/// switch error.code {
/// case .locked: askToUnlock()
/// case .wrongPassphrase, .passphraseRejected: askForPassphraseAgain()
/// case .unavailable: useFileStore()
/// default: show(error.description)
/// }
/// ```
///
/// The reason a kind carries is ``reason``, nil for the kinds that carry none.
public struct CredentialError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Today's kinds and their reasons; not public, so that adding one breaks no caller.
    enum Storage: Hashable, Sendable {
        case locked(String)
        case unavailable(String)
        case wrongPassphrase
        case corrupt(String)
        case insecurePermissions(String)
        case wrongDevice
        case accessDenied(String)
        case policyUnsupported(String)
        case io(String)
        case tooLarge(String)
        case unsafeFile(String)
        case invalidConfiguration(String)
        case outcomeUnknown(String)
        case passphraseRejected(String)
        case passphraseProviderFailed(String)
    }

    let storage: Storage

    private init(_ storage: Storage) {
        self.storage = storage
    }

    /// The keyring collection is locked and unlocking was refused or not allowed.
    public static func locked(_ why: String) -> Self { Self(.locked(why)) }
    /// No Secret Service answered (no session bus, no daemon, timeout), with the reason.
    public static func unavailable(_ why: String) -> Self { Self(.unavailable(why)) }
    /// The passphrase does not open the file.
    public static let wrongPassphrase = Self(.wrongPassphrase)
    /// The file is truncated, tampered with or not a ShopKit store.
    public static func corrupt(_ why: String) -> Self { Self(.corrupt(why)) }
    /// The file or its directory is readable by others; the message says how to fix it.
    public static func insecurePermissions(_ fix: String) -> Self { Self(.insecurePermissions(fix)) }
    /// The item is bound to another machine.
    public static let wrongDevice = Self(.wrongDevice)
    /// The access policy refused the read (no recent presence, the verifier refused, or none can run).
    public static func accessDenied(_ why: String) -> Self { Self(.accessDenied(why)) }
    /// The policy cannot be honoured by this store on this machine.
    public static func policyUnsupported(_ why: String) -> Self { Self(.policyUnsupported(why)) }
    /// A file-system or system-call failure.
    public static func io(_ why: String) -> Self { Self(.io(why)) }
    /// The write would make the store larger than its format allows; nothing was changed.
    public static func tooLarge(_ why: String) -> Self { Self(.tooLarge(why)) }
    /// The store path is not a plain file with one name (a symbolic link, a FIFO, device or other special file, or
    /// a file with a second name: a hard link). A security refusal: someone may be redirecting the store.
    public static func unsafeFile(_ why: String) -> Self { Self(.unsafeFile(why)) }
    /// The configuration cannot work (e.g. scrypt parameters outside RFC 7914 or ShopKit's limits); nothing was done.
    public static func invalidConfiguration(_ why: String) -> Self { Self(.invalidConfiguration(why)) }
    /// A write or delete timed out after it had started: it may or may not have taken effect. Read the item back
    /// (or repeat the idempotent write or delete) before relying on either outcome.
    public static func outcomeUnknown(_ why: String) -> Self { Self(.outcomeUnknown(why)) }
    /// A passphrase was refused before use: too short for a new file, over-long, or its confirmation differed.
    public static func passphraseRejected(_ why: String) -> Self { Self(.passphraseRejected(why)) }
    /// The app's passphrase provider (the closure given to ``BackendSelection``) threw an error that is not a
    /// `CredentialError` or a `CancellationError`: the fault is in the provider, not in the store. The message
    /// names the error's type only, never its description (which could hold anything the provider read).
    public static func passphraseProviderFailed(_ why: String) -> Self { Self(.passphraseProviderFailed(why)) }

    /// What went wrong (or, for ``insecurePermissions(_:)``, how to fix it), without the leading summary of
    /// ``description``; nil for ``wrongPassphrase`` and ``wrongDevice``, which carry no reason.
    public var reason: String? {
        switch storage {
        case .locked(let why), .unavailable(let why), .corrupt(let why), .insecurePermissions(let why),
            .accessDenied(let why), .policyUnsupported(let why), .io(let why), .tooLarge(let why),
            .unsafeFile(let why), .invalidConfiguration(let why), .outcomeUnknown(let why),
            .passphraseRejected(let why), .passphraseProviderFailed(let why):
            return why
        case .wrongPassphrase, .wrongDevice:
            return nil
        }
    }

    /// What the error says, for logs and messages; never a secret.
    public var description: String {
        switch storage {
        case .locked(let why): return "keyring is locked: \(why)"
        case .unavailable(let why): return "no Secret Service available: \(why)"
        case .wrongPassphrase: return "wrong passphrase for the token file"
        case .corrupt(let why): return "token file is corrupt or was tampered with: \(why)"
        case .insecurePermissions(let fix): return "token file location is not private: \(fix)"
        case .wrongDevice: return "this credential is bound to another device"
        case .accessDenied(let why): return "access denied: \(why)"
        case .policyUnsupported(let why): return "access policy cannot be honoured here: \(why)"
        case .io(let why): return "token store I/O failed: \(why)"
        case .tooLarge(let why): return "token store would be too large: \(why)"
        case .unsafeFile(let why): return "token store path is not a plain, single-named file: \(why)"
        case .invalidConfiguration(let why): return "invalid token store configuration: \(why)"
        case .outcomeUnknown(let why): return "the outcome of the operation is unknown: \(why)"
        case .passphraseRejected(let why): return "passphrase refused: \(why)"
        case .passphraseProviderFailed(let why): return "the app's passphrase provider failed: \(why)"
        }
    }
}

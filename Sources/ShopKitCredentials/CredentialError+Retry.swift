import ShopKitAPI

/// Tells the API client's retry decorator which token-store failures another attempt could fix.
///
/// A store failure reaches ShopKitAPI's `RetryMiddleware` when the auth decorator cannot load the tokens. Only
/// `.unavailable` may be transient (a Secret Service that timed out or is being restarted can answer the next
/// attempt). Everything else is the same on every attempt, and some would cost the user: a wrong passphrase or a
/// corrupt file does not heal, a locked keyring stays locked until the user acts, and retrying an
/// `.accessDenied` would ask for presence again on each attempt. `.outcomeUnknown` comes only from a write or a
/// delete, whose caller decides (after reading back) whether to repeat it.
extension CredentialError: RetryClassifiableError {
    /// `true` only for ``CredentialError/unavailable(_:)``.
    public var isRetryable: Bool {
        switch storage {
        case .unavailable:
            return true
        case .locked, .wrongPassphrase, .corrupt, .insecurePermissions, .wrongDevice, .accessDenied,
            .policyUnsupported, .io, .tooLarge, .unsafeFile, .invalidConfiguration, .outcomeUnknown,
            .passphraseRejected, .passphraseProviderFailed:
            return false
        }
    }
}

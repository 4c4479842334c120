/// An error that knows whether sending the same request again could succeed.
///
/// The retry decorator (ShopKitAPI's `RetryMiddleware`) retries transport errors of
/// idempotent requests unless the error conforms and says `isRetryable == false` (a pin mismatch, a certificate
/// failure, a sign-out: retrying cannot help).
///
/// Why a module of its own: every error type declares its classification in the module that declares the type
/// (`TLSError` in ShopKitTLS, `HTTPSTransportError` in ShopKitHTTPS, `CredentialError` in ShopKitCredentials), so which
/// products an app links can never change whether an impostor's certificate is retried. This protocol sits
/// below all of them.
public protocol RetryClassifiableError: Error {
    /// Whether a retry of the same request might succeed.
    var isRetryable: Bool { get }
}

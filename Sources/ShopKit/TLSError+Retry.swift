import ShopKitAPI
import ShopKitTLS

/// Tells the retry decorator which transport failures a second attempt cannot fix.
///
/// A pin mismatch, an untrusted chain or a hostname mismatch is the same on every attempt (and retrying an
/// impostor only gives it more chances), so those are never retried; timeouts and dropped connections may be.
extension TLSError: RetryClassifiableError {
    /// Whether the same request might succeed on another attempt.
    public var isRetryable: Bool {
        switch self {
        case .pinMismatch, .untrustedChain, .hostnameMismatch, .malformedResponse:
            return false
        case .handshakeFailed, .connectFailed, .timeout, .connectionClosed:
            return true
        }
    }
}

/// A client context that cannot be built (bad trust anchors) fails the same way every time.
extension TLSContextError: RetryClassifiableError {
    /// Always `false`: the configuration itself is wrong.
    public var isRetryable: Bool { false }
}

import ShopKitPinning

/// Why a ShopKit connection failed. `APIError.transport` carries it to the UI.
public enum TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No pin matched the verified chain; the report lists the chain's pins and the configured ones.
    case pinMismatch(PinFailureReport)
    /// OpenSSL did not trust the chain; `reason` is its verify result in words.
    case untrustedChain(reason: String, verifyCode: Int)
    /// The certificate does not cover the host name (checked against SANs only).
    case hostnameMismatch(host: String)
    /// The TLS handshake failed; `reason` is OpenSSL's error text.
    case handshakeFailed(reason: String)
    /// The TCP connection could not be made.
    case connectFailed(host: String, port: Int, reason: String)
    /// A timeout fired.
    case timeout(Timeout)
    /// The server's response could not be parsed as HTTP/1.1, or broke a limit.
    case malformedResponse(String)
    /// The connection closed before the response was complete.
    case connectionClosed

    /// Which timeout fired.
    public enum Timeout: String, Sendable, Equatable {
        case connect, handshake, idleRead, request
    }

    public var description: String {
        switch self {
        case .pinMismatch(let report): return report.description
        case .untrustedChain(let reason, let code): return "server certificate chain is not trusted: \(reason) (\(code))"
        case .hostnameMismatch(let host): return "server certificate does not cover \(host)"
        case .handshakeFailed(let reason): return "TLS handshake failed: \(reason)"
        case .connectFailed(let host, let port, let reason): return "could not connect to \(host):\(port): \(reason)"
        case .timeout(let which): return "\(which.rawValue) timeout"
        case .malformedResponse(let why): return "malformed response: \(why)"
        case .connectionClosed: return "connection closed before the response was complete"
        }
    }
}

import Foundation
import ShopKitCore
import ShopKitPinning

/// Why securing a connection failed: the TLS handshake, the chain, the hostname, the pins or the client certificate.
///
/// Only TLS failures are `TLSError`s. What happens around TLS (a bad URL, a refused TCP connection, a response
/// that is not HTTP, a connection that closes mid-response) is the HTTPS client's `HTTPSTransportError`.
/// `APIError.transport` carries either to the UI.
public enum TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No pin matched the verified chain; the report lists the chain's pins and the configured ones.
    case pinMismatch(PinFailureReport)
    /// The policy refuses hosts without a pin set (`PinningPolicy.UnpinnedHosts.refuse`) and no set covers
    /// `host`; `patterns` are the configured host patterns, to spot a typo.
    case hostNotPinned(host: String, patterns: [String])
    /// The policy refuses hosts without a pin set, and every set covering `host` has expired (an expired set is not
    /// enforced, so it counts as none); `pattern` and `expiration` name the most specific of them.
    case pinSetExpired(host: String, pattern: String, expiration: Date)
    /// OpenSSL did not trust the chain; `reason` is its verify result in words.
    case untrustedChain(reason: String, verifyCode: Int)
    /// The certificate does not cover the host name (checked against SANs only).
    case hostnameMismatch(host: String)
    /// The TLS handshake failed; `reason` is OpenSSL's error text, or what ended it.
    case handshakeFailed(reason: String)
    /// The handshake (with its chain, hostname and pin checks) did not finish within the handshake timeout.
    case handshakeTimeout
    /// The TLS connection was closed (by the peer or locally) while data was still to be written or read.
    case connectionClosed
    /// The server asked for a client certificate and none is configured (`TLSClientConfiguration.clientIdentity`).
    /// `acceptedIssuers` are the CA names the server accepts (RFC 2253; empty when it named none).
    case clientCertificateRequired(acceptedIssuers: [String])
    /// The client certificate was not accepted: refused by the server (its alert in `reason`), or not sent because
    /// the server would refuse it (expired, not yet valid, issued by none of the CAs the server names).
    case clientCertificateRejected(reason: String)

    public var description: String {
        switch self {
        case .pinMismatch(let report): return report.description
        case .hostNotPinned(let host, let patterns):
            let known =
                patterns.isEmpty ? "no pin sets are configured" : "the pin sets cover " + patterns.joined(separator: ", ")
            return "no pin set covers \(host) and unpinned hosts are refused (\(known)): add a pin set for \(host) "
                + "or fix the pattern that should cover it"
        case .pinSetExpired(let host, let pattern, let expiration):
            return "the pin set \(pattern) expired at \(expiration.ISO8601Format()) and no live pin set covers \(host); "
                + "unpinned hosts are refused: renew the pin set (new pins and expiration) for \(host)"
        case .untrustedChain(let reason, let code): return "server certificate chain is not trusted: \(reason) (\(code))"
        case .hostnameMismatch(let host): return "server certificate does not cover \(host)"
        case .handshakeFailed(let reason): return "TLS handshake failed: \(reason)"
        case .handshakeTimeout: return "handshake timeout"
        case .connectionClosed: return "the TLS connection was closed"
        case .clientCertificateRequired(let issuers):
            let from = issuers.isEmpty ? "" : " issued by \(issuers.joined(separator: "; "))"
            return "the server requires a client certificate\(from), and none is configured: "
                + "set TLSClientConfiguration.clientIdentity"
        case .clientCertificateRejected(let reason): return "client certificate not accepted: \(reason)"
        }
    }
}

/// Declared here, with the type, so that no product an app links (or leaves out) can change it.
///
/// A pin mismatch, a host without pins under a strict policy, an untrusted chain, a hostname mismatch or a missing
/// or refused client certificate is the same on every attempt (and retrying an impostor only gives it more
/// chances), so those are never retried; a failed or timed-out handshake and a dropped connection may be.
extension TLSError: RetryClassifiableError {
    /// Whether the same request might succeed on another attempt.
    public var isRetryable: Bool {
        switch self {
        case .pinMismatch, .hostNotPinned, .pinSetExpired, .untrustedChain, .hostnameMismatch, .clientCertificateRequired,
            .clientCertificateRejected:
            return false
        case .handshakeFailed, .handshakeTimeout, .connectionClosed:
            return true
        }
    }
}

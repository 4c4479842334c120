import Foundation
import ShopKitCore
import ShopKitPinning

/// Why securing a connection failed: the TLS handshake, the chain, the hostname, the pins or the client certificate.
///
/// Only TLS failures are `TLSError`s. What happens around TLS (a bad URL, a refused TCP connection, a response
/// that is not HTTP, a connection that closes mid-response) is the HTTPS client's `HTTPSTransportError`.
/// `APIError.transport` carries either to the UI.
///
/// A struct, not an enum, so that a new kind of failure is not a breaking change (AsyncHTTPClient's
/// `HTTPClientError` does the same). Compare with `==` (`error == .handshakeTimeout`), or switch on ``code``,
/// which says what kind of failure it is without its details:
///
/// ```swift
/// switch error.code {
/// case .pinMismatch: report(error.pinFailureReport!)
/// case .handshakeFailed, .handshakeTimeout, .connectionClosed: showRetry()
/// default: show(error.description)
/// }
/// ```
///
/// The details each kind carries are properties (``pinFailureReport``, ``host``, ``reason``, ``verifyCode``,
/// ``acceptedIssuers``, …), nil for the kinds that do not carry them.
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Today's kinds and their details; not public, so that adding one breaks no caller.
    enum Storage: Sendable, Equatable {
        case pinMismatch(PinFailureReport)
        case hostNotPinned(host: String, patterns: [String])
        case pinSetExpired(host: String, pattern: String, expiration: Date)
        case untrustedChain(reason: String, verifyCode: Int)
        case hostnameMismatch(host: String)
        case handshakeFailed(reason: String)
        case handshakeTimeout
        case connectionClosed
        case clientCertificateRequired(acceptedIssuers: [String])
        case clientCertificateRejected(reason: String)
        case certificateTransparency(host: String, evaluation: CTEvaluation)
    }

    let storage: Storage

    private init(_ storage: Storage) {
        self.storage = storage
    }

    /// No pin matched the verified chain; the report lists the chain's pins and the configured ones.
    public static func pinMismatch(_ report: PinFailureReport) -> Self { Self(.pinMismatch(report)) }
    /// The policy refuses hosts without a pin set (`PinningPolicy.UnpinnedHosts.refuse`) and no set covers
    /// `host`; `patterns` are the configured host patterns, to spot a typo.
    public static func hostNotPinned(host: String, patterns: [String]) -> Self {
        Self(.hostNotPinned(host: host, patterns: patterns))
    }
    /// The policy refuses hosts without a pin set, and every set covering `host` has expired (an expired set is not
    /// enforced, so it counts as none); `pattern` and `expiration` name the most specific of them.
    public static func pinSetExpired(host: String, pattern: String, expiration: Date) -> Self {
        Self(.pinSetExpired(host: host, pattern: pattern, expiration: expiration))
    }
    /// OpenSSL did not trust the chain; `reason` is its verify result in words.
    public static func untrustedChain(reason: String, verifyCode: Int) -> Self {
        Self(.untrustedChain(reason: reason, verifyCode: verifyCode))
    }
    /// The certificate does not cover the host name (checked against SANs only).
    public static func hostnameMismatch(host: String) -> Self { Self(.hostnameMismatch(host: host)) }
    /// The TLS handshake failed; `reason` is OpenSSL's error text, or what ended it.
    public static func handshakeFailed(reason: String) -> Self { Self(.handshakeFailed(reason: reason)) }
    /// The handshake (with its chain, hostname and pin checks) did not finish within the handshake timeout.
    public static let handshakeTimeout = Self(.handshakeTimeout)
    /// The TLS connection was closed (by the peer or locally) while data was still to be written or read.
    public static let connectionClosed = Self(.connectionClosed)
    /// The server asked for a client certificate and none is configured (`TLSClientConfiguration.clientIdentity`).
    /// `acceptedIssuers` are the CA names the server accepts (RFC 2253; empty when it named none).
    public static func clientCertificateRequired(acceptedIssuers: [String]) -> Self {
        Self(.clientCertificateRequired(acceptedIssuers: acceptedIssuers))
    }
    /// The client certificate was not accepted: refused by the server (its alert in `reason`), or not sent because
    /// the server would refuse it (expired, not yet valid, issued by none of the CAs the server names).
    public static func clientCertificateRejected(reason: String) -> Self {
        Self(.clientCertificateRejected(reason: reason))
    }

    /// Certificate Transparency is enforced for `host` and its verified chain is not compliant (too few valid SCTs,
    /// from too few logs or operators); `evaluation` says which SCTs counted and why the others did not.
    public static func certificateTransparency(host: String, evaluation: CTEvaluation) -> Self {
        Self(.certificateTransparency(host: host, evaluation: evaluation))
    }

    /// What the error says, for logs and error reports.
    public var description: String {
        switch storage {
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
        case .certificateTransparency(let host, let evaluation):
            return "the server's certificate for \(host) is not Certificate Transparency compliant, and CT is enforced "
                + "for \(host): \(evaluation.verdictDescription)"
        }
    }

    /// Two errors are equal when they are the same kind with the same details (a pin mismatch's whole report).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storage == rhs.storage
    }

    /// Hashes the kind and the description, a function of the details that `==` compares (so equal errors hash
    /// alike).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(description)
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
        switch storage {
        case .pinMismatch, .hostNotPinned, .pinSetExpired, .untrustedChain, .hostnameMismatch, .clientCertificateRequired,
            .clientCertificateRejected, .certificateTransparency:
            return false
        case .handshakeFailed, .handshakeTimeout, .connectionClosed:
            return true
        }
    }
}

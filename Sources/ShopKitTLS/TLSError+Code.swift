import Foundation
import ShopKitPinning

extension TLSError {
    /// What kind of failure a ``TLSError`` is, without its details: switch on it.
    ///
    /// A struct with a static member per kind rather than an enum, so that a new kind is not a breaking change:
    /// a `switch` over it always has a `default`. `case .pinMismatch:` matches by `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case pinMismatch, hostNotPinned, pinSetExpired, untrustedChain, hostnameMismatch, handshakeFailed
            case handshakeTimeout, connectionClosed, clientCertificateRequired, clientCertificateRejected
            case certificateTransparency
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// ``TLSError/pinMismatch(_:)``.
        public static let pinMismatch = Self(.pinMismatch)
        /// ``TLSError/hostNotPinned(host:patterns:)``.
        public static let hostNotPinned = Self(.hostNotPinned)
        /// ``TLSError/pinSetExpired(host:pattern:expiration:)``.
        public static let pinSetExpired = Self(.pinSetExpired)
        /// ``TLSError/untrustedChain(reason:verifyCode:)``.
        public static let untrustedChain = Self(.untrustedChain)
        /// ``TLSError/hostnameMismatch(host:)``.
        public static let hostnameMismatch = Self(.hostnameMismatch)
        /// ``TLSError/handshakeFailed(reason:)``.
        public static let handshakeFailed = Self(.handshakeFailed)
        /// ``TLSError/handshakeTimeout``.
        public static let handshakeTimeout = Self(.handshakeTimeout)
        /// ``TLSError/connectionClosed``.
        public static let connectionClosed = Self(.connectionClosed)
        /// ``TLSError/clientCertificateRequired(acceptedIssuers:)``.
        public static let clientCertificateRequired = Self(.clientCertificateRequired)
        /// ``TLSError/clientCertificateRejected(reason:)``.
        public static let clientCertificateRejected = Self(.clientCertificateRejected)
        /// ``TLSError/certificateTransparency(host:evaluation:)``.
        public static let certificateTransparency = Self(.certificateTransparency)

        /// The kind's name, as its static member spells it (`pinMismatch`).
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is; switch on it, with a `default`, to handle some kinds alike.
    public var code: Code {
        switch storage {
        case .pinMismatch: return .pinMismatch
        case .hostNotPinned: return .hostNotPinned
        case .pinSetExpired: return .pinSetExpired
        case .untrustedChain: return .untrustedChain
        case .hostnameMismatch: return .hostnameMismatch
        case .handshakeFailed: return .handshakeFailed
        case .handshakeTimeout: return .handshakeTimeout
        case .connectionClosed: return .connectionClosed
        case .clientCertificateRequired: return .clientCertificateRequired
        case .clientCertificateRejected: return .clientCertificateRejected
        case .certificateTransparency: return .certificateTransparency
        }
    }

    /// The pin check's report (the verified chain's pins beside the configured ones), for ``pinMismatch(_:)``;
    /// else nil.
    public var pinFailureReport: PinFailureReport? {
        if case .pinMismatch(let report) = storage { return report }
        return nil
    }

    /// The host the check was for: of ``hostNotPinned(host:patterns:)``,
    /// ``pinSetExpired(host:pattern:expiration:)``, ``hostnameMismatch(host:)``, and ``pinMismatch(_:)``'s report;
    /// else nil.
    public var host: String? {
        switch storage {
        case .pinMismatch(let report): return report.host
        case .hostNotPinned(let host, _), .pinSetExpired(let host, _, _), .hostnameMismatch(let host),
            .certificateTransparency(let host, _):
            return host
        default: return nil
        }
    }

    /// The configured host patterns, none of which covers the host, for ``hostNotPinned(host:patterns:)``;
    /// else nil.
    public var pinnedHostPatterns: [String]? {
        if case .hostNotPinned(_, let patterns) = storage { return patterns }
        return nil
    }

    /// The pattern and expiration of the most specific expired pin set covering the host, for
    /// ``pinSetExpired(host:pattern:expiration:)``; else nil.
    public var expiredPinSet: (pattern: String, expiration: Date)? {
        if case .pinSetExpired(_, let pattern, let expiration) = storage { return (pattern, expiration) }
        return nil
    }

    /// What went wrong, in words: OpenSSL's verify result for ``untrustedChain(reason:verifyCode:)``, its error
    /// text for ``handshakeFailed(reason:)``, the server's alert or the local check for
    /// ``clientCertificateRejected(reason:)``; else nil.
    public var reason: String? {
        switch storage {
        case .untrustedChain(let reason, _), .handshakeFailed(let reason), .clientCertificateRejected(let reason):
            return reason
        default: return nil
        }
    }

    /// The Certificate Transparency evaluation that refused the chain, for
    /// ``certificateTransparency(host:evaluation:)``; else nil.
    public var certificateTransparency: CTEvaluation? {
        if case .certificateTransparency(_, let evaluation) = storage { return evaluation }
        return nil
    }

    /// OpenSSL's verify result code (`X509_V_ERR_…`), for ``untrustedChain(reason:verifyCode:)``; else nil.
    public var verifyCode: Int? {
        if case .untrustedChain(_, let code) = storage { return code }
        return nil
    }

    /// The CA names (RFC 2253) the server accepts client certificates from, empty when it named none, for
    /// ``clientCertificateRequired(acceptedIssuers:)``; else nil.
    public var acceptedIssuers: [String]? {
        if case .clientCertificateRequired(let issuers) = storage { return issuers }
        return nil
    }
}

import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// What `ServerInspector` found out about one TLS server: protocol details, the verified chain (or, when the
/// chain was refused, the chain the server sent and why), the pin verdict, and warnings.
package struct ServerReport: Sendable, Codable, Equatable {
    /// The overall verdict, each with its own exit code for `pin-check`.
    package enum Verdict: String, Sendable, Codable, CaseIterable {
        /// Trusted, hostname ok, and no pins given or one of them matched the verified chain.
        case ok
        /// Trusted and hostname ok, but no given pin is on the verified chain.
        case pinMismatch = "pin-mismatch"
        /// OpenSSL refused the chain (unknown root, dates, constraints, key usage, weak key or signature, …).
        case untrusted
        /// The certificate's SANs do not cover the name checked.
        case hostnameMismatch = "hostname-mismatch"
        /// No TLS session: refused, timed out, protocol too old, not TLS, or another handshake failure.
        case connectFailed = "connect-failed"
        /// Trusted and hostname ok, but Certificate Transparency, enforced (`--ct enforced`, a fresh log list),
        /// refused the chain: its SCTs do not follow the policy. The handshake ended; the SCTs are in the report.
        case ctNotCompliant = "ct-not-compliant"

        /// `pin-check`'s exit status for this verdict: 0, 1, 2, 3, 4, 5.
        package var exitCode: Int32 {
            switch self {
            case .ok: return 0
            case .pinMismatch: return 1
            case .untrusted: return 2
            case .hostnameMismatch: return 3
            case .connectFailed: return 4
            case .ctNotCompliant: return 5
            }
        }
    }

    /// One certificate as shown to a person.
    package struct Certificate: Sendable, Codable, Equatable {
        /// The subject name (RFC 2253).
        package let subject: String
        /// The issuer name (RFC 2253).
        package let issuer: String
        /// Subject alternative names: DNS and IP as they are, other kinds with a prefix (`email:`, `URI:`, …).
        package let subjectAlternativeNames: [String]
        /// Start of validity.
        package let notBefore: Date
        /// End of validity.
        package let notAfter: Date
        /// Whole days from the inspection until `notAfter` (negative once expired).
        package let daysLeft: Int
        /// Key type and size, e.g. `ECDSA P-256`, `RSA 2048`.
        package let key: String
        /// The algorithm the issuer signed with, e.g. `ecdsa-with-SHA256`.
        package let signatureAlgorithm: String
        /// The SPKI pin, `sha256/BASE64`.
        package let pin: String
        /// Whether a given pin matched this certificate (only ever true on the verified chain).
        package let matched: Bool

        init(_ info: CertificateInfo, now: Date, matched: Bool) {
            subject = info.subject
            issuer = info.issuer
            subjectAlternativeNames = info.subjectAlternativeNames
            notBefore = info.notBefore
            notAfter = info.notAfter
            daysLeft = Int((info.notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
            key = info.keyDescription
            signatureAlgorithm = info.signatureAlgorithm
            pin = info.spkiPin.description
            self.matched = matched
        }
    }

    /// The host connected to (no brackets for IPv6).
    package let host: String
    /// The port connected to.
    package let port: Int
    /// The name sent as SNI (none for IP literals) and checked against the SANs.
    package let servername: String
    /// The overall verdict.
    package let verdict: Verdict
    /// Why the verdict is not `ok`, in words (OpenSSL's verify reason, the connect error, the pin report).
    package internal(set) var reason: String?
    /// e.g. `TLSv1.3` (nil when no session was set up).
    package let tlsVersion: String?
    /// The negotiated cipher suite.
    package let cipher: String?
    /// The ALPN protocol agreed on, if any.
    package let alpn: String?
    /// The chain OpenSSL verified, leaf first; empty unless the chain was trusted.
    package let verifiedChain: [Certificate]
    /// The chain the server sent, in its order (for diagnostics; never used for trust).
    package let presentedChain: [Certificate]
    /// The pins given, as `sha256/BASE64`.
    package let configuredPins: [String]
    /// The given pin that matched, if any.
    package let matchedPin: String?
    /// Warnings: the leaf expires soon, the pin set has no backup pin.
    package internal(set) var warnings: [String]
    /// The server's request for a client certificate and the answer; nil when it asked for none, or when no
    /// client certificate was configured and the handshake ended before a request could be read.
    package var clientCertificate: ClientCertificate? = nil

    /// A server's request for a client certificate (mutual TLS), and the answer.
    ///
    /// In JSON, `requested` is `true` when the server's CertificateRequest was read (`acceptedIssuers` then lists
    /// its CA names, empty when it named none), `null` when the handshake stopped before it could be read: the pins
    /// refused the server's chain first (over TLS 1.2 the request follows the server's Certificate). `sent` is the
    /// subject of the certificate sent, or `null`; `withheld` says why a configured certificate was not sent, or is
    /// `null`.
    package struct ClientCertificate: Sendable, Codable, Equatable {
        /// The CA names the server accepts client certificates from (RFC 2253), in its order.
        package let acceptedIssuers: [String]
        /// The subject of the client certificate sent (`--cert`), or nil when none was.
        package let sent: String?
        /// True when the server's request was read; nil when the handshake stopped before it could be.
        package let requested: Bool?
        /// Why the configured certificate was not sent (the pins refused the chain first, or the server would
        /// refuse it), or nil.
        package let withheld: String?

        package init(acceptedIssuers: [String], sent: String?, requested: Bool? = true, withheld: String? = nil) {
            self.acceptedIssuers = acceptedIssuers
            self.sent = sent
            self.requested = requested
            self.withheld = withheld
        }

        enum CodingKeys: String, CodingKey { case acceptedIssuers, sent, requested, withheld }

        /// Every key always (absent values as `null`), like the report itself.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(acceptedIssuers, forKey: .acceptedIssuers)
            try container.encode(sent, forKey: .sent)
            try container.encode(requested, forKey: .requested)
            try container.encode(withheld, forKey: .withheld)
        }
    }

    /// With `--pins-document`: the document's set applied to the checked name, as an app applies it; nil otherwise.
    package var pinsDocument: DocumentPinSet? = nil

    /// A signed document's pin set for the checked name, and how an app applies it.
    package struct DocumentPinSet: Sendable, Codable, Equatable {
        /// How an app applies the set.
        package enum Enforcement: String, Sendable, Codable {
            /// A mismatch refuses the connection.
            case enforced
            /// A mismatch is reported; the app connects.
            case reportOnly = "report-only"
            /// Past its expiration (and no live set covers the host): not enforced; a strict document refuses the
            /// host (`TLSError.pinSetExpired`), a lax one connects it unpinned.
            case expired
        }

        /// The document's version.
        package let documentVersion: Int
        /// The document's `strictHosts`.
        package let strictHosts: Bool
        /// The pattern of the set applied.
        package let hostPattern: String
        /// How an app applies it now.
        package let enforcement: Enforcement
        /// The set's expiration, if it has one.
        package let expiration: Date?

        enum CodingKeys: String, CodingKey { case documentVersion, strictHosts, hostPattern, enforcement, expiration }

        /// Every key always (`expiration` as `null` when the set has none).
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(documentVersion, forKey: .documentVersion)
            try container.encode(strictHosts, forKey: .strictHosts)
            try container.encode(hostPattern, forKey: .hostPattern)
            try container.encode(enforcement, forKey: .enforcement)
            try container.encode(expiration, forKey: .expiration)
        }
    }

    /// The Certificate Transparency evaluation (`pin-check --ct`); nil when none was made: the handshake failed
    /// before it (untrusted chain, hostname mismatch, connect failure) or the pins refused the chain first.
    package var certificateTransparency: CertificateTransparency? = nil

    /// The proxy tunnelled through (`http://host:port`, never its credentials), or nil for a direct connection.
    package var proxy: String? = nil
    /// ``reason`` without OpenSSL's error-queue text (`SSL_do_handshake failed: error:0A000410:…`), which text
    /// output shows only with `--verbose`; nil when ``reason`` has none. Not in JSON, whose `reason` keeps all.
    package var plainReason: String? = nil
    /// OpenSSL's error-queue text of a handshake failure, for `--verbose`; nil for other failures.
    package var openSSLText: String? = nil

    enum CodingKeys: String, CodingKey {
        case host, port, servername, verdict, reason, tlsVersion, cipher, alpn, verifiedChain, presentedChain
        case configuredPins, matchedPin, warnings, clientCertificate, proxy, pinsDocument, certificateTransparency
    }

    /// Encodes every key, absent values as `null`, so JSON consumers see one stable shape.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(port, forKey: .port)
        try container.encode(servername, forKey: .servername)
        try container.encode(verdict, forKey: .verdict)
        try container.encode(reason, forKey: .reason)
        try container.encode(tlsVersion, forKey: .tlsVersion)
        try container.encode(cipher, forKey: .cipher)
        try container.encode(alpn, forKey: .alpn)
        try container.encode(verifiedChain, forKey: .verifiedChain)
        try container.encode(presentedChain, forKey: .presentedChain)
        try container.encode(configuredPins, forKey: .configuredPins)
        try container.encode(matchedPin, forKey: .matchedPin)
        try container.encode(warnings, forKey: .warnings)
        try container.encode(clientCertificate, forKey: .clientCertificate)
        try container.encode(proxy, forKey: .proxy)
        try container.encode(pinsDocument, forKey: .pinsDocument)
        try container.encode(certificateTransparency, forKey: .certificateTransparency)
    }
}

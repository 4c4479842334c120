import Foundation

/// One certificate of a chain, reduced to what pinning and diagnostics need.
public struct CertificateInfo: Sendable, Hashable {
    /// The certificate's SPKI pin.
    public let spkiPin: SPKIPin
    /// The subject as a one-line RFC 2253 string.
    public let subject: String
    /// The issuer as a one-line RFC 2253 string.
    public let issuer: String
    /// The subjectAltName entries: DNS names and IP addresses as they are, other kinds with a prefix
    /// (`email:`, `URI:`, `DirName:`, `RID:`, `othername:`). For display; hostnames are checked by OpenSSL.
    public let subjectAlternativeNames: [String]
    /// Start of validity.
    public let notBefore: Date
    /// End of validity.
    public let notAfter: Date
    /// Key type and size, e.g. `ECDSA P-256` or `RSA 2048`.
    public let keyDescription: String
    /// Signature algorithm, e.g. `ecdsa-with-SHA256`.
    public let signatureAlgorithm: String

    /// Describes one certificate; building a `CertificateInfo` grants no trust: only a `VerifiedChain` is matched.
    package init(
        spkiPin: SPKIPin, subject: String, issuer: String, subjectAlternativeNames: [String],
        notBefore: Date, notAfter: Date, keyDescription: String, signatureAlgorithm: String
    ) {
        self.spkiPin = spkiPin
        self.subject = subject
        self.issuer = issuer
        self.subjectAlternativeNames = subjectAlternativeNames
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.keyDescription = keyDescription
        self.signatureAlgorithm = signatureAlgorithm
    }
}

/// The chain OpenSSL built and verified for a connection, leaf first, root last.
///
/// Pins are matched against this type only. Library users cannot create one: it comes from OpenSSL's verified
/// chain (`X509_STORE_CTX_get0_chain` at depth 0 inside verification, or `SSL_get0_verified_chain` after it) once
/// OpenSSL accepted the chain and the hostname, so a certificate the server sent that is not on the verified
/// path can never match a pin.
public struct VerifiedChain: Sendable, Hashable {
    /// The verified certificates, leaf first.
    public let certificates: [CertificateInfo]

    /// The leaf certificate, `certificates.first` (package access: the tests' shorthand).
    package var leaf: CertificateInfo? { certificates.first }

    /// Only the OpenSSL layer (and tests in this package) build verified chains.
    package init(verifiedCertificates: [CertificateInfo]) {
        self.certificates = verifiedCertificates
    }
}

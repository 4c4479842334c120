import Foundation

/// One Signed Certificate Timestamp (RFC 6962) as OpenSSL read and checked it: a log's promise to publish the
/// certificate.
public struct SignedCertificateTimestamp: Sendable, Hashable {
    /// Where the server delivered the SCT (RFC 9163's names as raw values).
    public enum Source: String, Sendable, Hashable {
        /// In the certificate (the precertificate SCT list extension).
        case embedded
        /// In the TLS handshake's signed_certificate_timestamp extension.
        case tlsExtension = "tls-extension"
        /// In a stapled OCSP response.
        case ocsp
    }

    /// What checking the SCT's signature found.
    public enum Status: String, Sendable, Hashable {
        /// Signed by a log in the list, over this certificate.
        case valid
        /// The signature does not verify (forged, or made for another certificate), or the timestamp is in the
        /// future.
        case invalid
        /// No log in the list has the SCT's log id.
        case unknownLog
        /// Not checked (no issuer to rebuild a precertificate from, or not validated).
        case unverified
        /// A version of SCT this client does not read.
        case unknownVersion
    }

    /// The SCT's version (0 is v1).
    public let version: Int
    /// The log's id: SHA-256 of its public key.
    public let logID: [UInt8]
    /// When the log signed it (milliseconds since 1970).
    public let timestamp: Date
    /// The SCT's extensions, as sent.
    public let extensions: [UInt8]
    /// How it was delivered.
    public let source: Source
    /// What its signature check found.
    public let status: Status
    /// The SCT in its TLS encoding (for reports).
    public let serialized: [UInt8]

    /// Only the OpenSSL layer (and tests) read SCTs.
    package init(
        version: Int, logID: [UInt8], timestamp: Date, extensions: [UInt8] = [], source: Source, status: Status,
        serialized: [UInt8] = []
    ) {
        self.version = version
        self.logID = logID
        self.timestamp = timestamp
        self.extensions = extensions
        self.source = source
        self.status = status
        self.serialized = serialized
    }
}

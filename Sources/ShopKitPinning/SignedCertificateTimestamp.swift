import Foundation

/// One Signed Certificate Timestamp (RFC 6962 §3.2) of a connection, as the OpenSSL layer read and checked it: a
/// log's promise to publish the certificate, which ``CertificateTransparencyPolicy`` counts.
///
/// Only the OpenSSL layer (and tests) build one: its ``status`` is OpenSSL's verdict on the signature
/// (`SCT_validate` against the log list's keys), which the policy trusts.
public struct SignedCertificateTimestamp: Sendable, Hashable {
    /// Where the server delivered the SCT (RFC 9163's names as raw values).
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// In the certificate (the precertificate SCT list extension).
        case embedded
        /// In the TLS `signed_certificate_timestamp` extension.
        case tlsExtension = "tls-extension"
        /// In a stapled OCSP response.
        case ocsp
    }

    /// What OpenSSL found when it checked the SCT (`SCT_VALIDATION_STATUS_*`).
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// The signature verifies under the log's key over this certificate.
        case valid
        /// The signature does not verify: a forged SCT, or one made for another certificate.
        case invalid
        /// The log is not in the log store OpenSSL checked against.
        case unknownLog
        /// Not checked (OpenSSL lacked what it needs, such as the issuer for an embedded SCT).
        case unverified
        /// An SCT version OpenSSL does not know (RFC 6962 defines v1 only).
        case unknownVersion
    }

    /// The SCT's version: 0 for v1.
    public let version: Int
    /// The ID of the log that issued it (the SHA-256 of the log's key, 32 bytes).
    public let logID: [UInt8]
    /// When the log issued it (RFC 6962's milliseconds since the epoch).
    public let timestamp: Date
    /// The SCT's extensions (empty for every SCT RFC 6962 logs issue).
    public let extensions: [UInt8]
    /// Where the server delivered it.
    public let source: Source
    /// OpenSSL's verdict on its signature.
    public let status: Status
    /// The SCT's TLS encoding (RFC 6962 §3.2 `SignedCertificateTimestamp`), as reports carry it.
    public let serialized: [UInt8]

    /// Only the OpenSSL layer and tests build SCTs.
    package init(
        version: Int = 0, logID: [UInt8], timestamp: Date, extensions: [UInt8] = [], source: Source, status: Status,
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

    /// The timestamp from RFC 6962's milliseconds since the epoch.
    package static func date(milliseconds: UInt64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds / 1000) + Double(milliseconds % 1000) / 1000)
    }
}

import Foundation

/// A report of a connection whose chain did not follow the CT policy, in RFC 9163's Expect-CT report format (the
/// field's own, which report collectors already read), plus ShopKit's verdict:
///
///     {"expect-ct-report": {
///       "date-time": "2026-11-28T12:00:00Z", "hostname": "api.example.com", "port": 443, "scheme": "https",
///       "effective-expiration-date": "2027-01-12T00:00:00Z",
///       "served-certificate-chain": ["-----BEGIN CERTIFICATE-----…"],
///       "validated-certificate-chain": ["-----BEGIN CERTIFICATE-----…"],
///       "scts": [{"version": 1, "status": "valid", "source": "embedded", "serialized_sct": "AL…"}],
///       "failure-mode": "enforce", "test-report": false,
///       "shopkit-verdict": "the server's certificate lacks …"}}
///
/// `effective-expiration-date` is when the log list that judged the connection becomes stale (enforcement under it
/// ends); `failure-mode` is `enforce` when the connection was refused, `report-only` otherwise; an SCT's status is
/// `valid` (verified, from a listed log), `invalid` (a signature that does not verify) or `unknown` (any other);
/// `shopkit-verdict` is the verdict's reason. Certificates are public; the report holds no secret.
public struct CTComplianceReport: Sendable, Hashable, Codable {
    /// One SCT as the report carries it.
    public struct SCT: Sendable, Hashable, Codable {
        /// 1 for an RFC 6962 v1 SCT.
        public var version: Int
        /// `valid`, `invalid` or `unknown`.
        public var status: String
        /// `embedded`, `tls-extension` or `ocsp`.
        public var source: String
        /// The SCT's TLS encoding in base64.
        public var serializedSCT: String

        enum CodingKeys: String, CodingKey {
            case version, status, source
            case serializedSCT = "serialized_sct"
        }

        public init(version: Int, status: String, source: String, serializedSCT: String) {
            self.version = version
            self.status = status
            self.source = source
            self.serializedSCT = serializedSCT
        }

        /// `sct` as RFC 9163 describes it.
        public init(_ sct: SignedCertificateTimestamp) {
            let status: String
            switch sct.status {
            case .valid: status = "valid"
            case .invalid: status = "invalid"
            case .unknownLog, .unverified, .unknownVersion: status = "unknown"
            }
            self.init(
                version: sct.version + 1, status: status, source: sct.source.rawValue,
                serializedSCT: Data(sct.serialized).base64EncodedString())
        }
    }

    /// `date-time`: when the connection was checked.
    public var dateTime: Date
    /// `hostname`.
    public var hostname: String
    /// `port`.
    public var port: Int
    /// `scheme`: always `https`.
    public var scheme: String
    /// `effective-expiration-date`: when the log list that judged the connection becomes stale.
    public var effectiveExpirationDate: Date
    /// `served-certificate-chain`: the chain the server sent, as PEM.
    public var servedCertificateChain: [String]
    /// `validated-certificate-chain`: the chain OpenSSL verified, as PEM.
    public var validatedCertificateChain: [String]
    /// `scts`.
    public var scts: [SCT]
    /// `failure-mode`: `enforce` (the connection was refused) or `report-only`.
    public var failureMode: String
    /// `test-report`: always false.
    public var testReport: Bool
    /// `shopkit-verdict`: why the chain does not follow the policy.
    public var verdict: String

    /// The report of `evaluation` for a connection to `host`:`port` at `date`.
    public init(
        evaluation: CTEvaluation, host: String, port: Int, servedChainPEM: [String], validatedChainPEM: [String],
        date: Date
    ) {
        dateTime = date
        hostname = host
        self.port = port
        scheme = "https"
        effectiveExpirationDate = evaluation.logListExpiry
        servedCertificateChain = servedChainPEM
        validatedCertificateChain = validatedChainPEM
        scts = evaluation.assessments.map { SCT($0.sct) }
        failureMode = evaluation.allowsConnection ? "report-only" : "enforce"
        testReport = false
        switch evaluation.verdict {
        case .notCompliant(let reason), .exempt(let reason): verdict = reason
        case .compliant: verdict = "compliant"
        case .notChecked: verdict = "not checked (CT is disabled for the host)"
        case .noLogList: verdict = "not checked (the log list has no logs)"
        }
    }

    /// The report's JSON, keys sorted, slashes unescaped.
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data()
    }

    private enum OuterKeys: String, CodingKey { case report = "expect-ct-report" }

    private enum CodingKeys: String, CodingKey {
        case dateTime = "date-time", hostname, port, scheme
        case effectiveExpirationDate = "effective-expiration-date"
        case servedCertificateChain = "served-certificate-chain"
        case validatedCertificateChain = "validated-certificate-chain"
        case scts
        case failureMode = "failure-mode"
        case testReport = "test-report"
        case verdict = "shopkit-verdict"
    }

    public func encode(to encoder: any Encoder) throws {
        var outer = encoder.container(keyedBy: OuterKeys.self)
        var container = outer.nestedContainer(keyedBy: CodingKeys.self, forKey: .report)
        try container.encode(CertificateTransparencyPolicy.timestamp(dateTime), forKey: .dateTime)
        try container.encode(hostname, forKey: .hostname)
        try container.encode(port, forKey: .port)
        try container.encode(scheme, forKey: .scheme)
        try container.encode(CertificateTransparencyPolicy.timestamp(effectiveExpirationDate), forKey: .effectiveExpirationDate)
        try container.encode(servedCertificateChain, forKey: .servedCertificateChain)
        try container.encode(validatedCertificateChain, forKey: .validatedCertificateChain)
        try container.encode(scts, forKey: .scts)
        try container.encode(failureMode, forKey: .failureMode)
        try container.encode(testReport, forKey: .testReport)
        try container.encode(verdict, forKey: .verdict)
    }

    public init(from decoder: any Decoder) throws {
        let outer = try decoder.container(keyedBy: OuterKeys.self)
        let container = try outer.nestedContainer(keyedBy: CodingKeys.self, forKey: .report)
        func date(_ key: CodingKeys) throws -> Date {
            let text = try container.decode(String.self, forKey: key)
            do { return try CTLogListWire.date(text, path: key.rawValue) } catch {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: error.description)
            }
        }
        dateTime = try date(.dateTime)
        hostname = try container.decode(String.self, forKey: .hostname)
        port = try container.decode(Int.self, forKey: .port)
        scheme = try container.decode(String.self, forKey: .scheme)
        effectiveExpirationDate = try date(.effectiveExpirationDate)
        servedCertificateChain = try container.decode([String].self, forKey: .servedCertificateChain)
        validatedCertificateChain = try container.decode([String].self, forKey: .validatedCertificateChain)
        scts = try container.decode([SCT].self, forKey: .scts)
        failureMode = try container.decode(String.self, forKey: .failureMode)
        testReport = try container.decode(Bool.self, forKey: .testReport)
        verdict = try container.decodeIfPresent(String.self, forKey: .verdict) ?? ""
    }
}

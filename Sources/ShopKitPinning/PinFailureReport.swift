import Foundation

/// A structured account of a pin check that did not match: everything needed to fix the configuration.
///
/// Its ``description`` follows OkHttp's format, so the right pin can be pasted from it:
///
///     Certificate pinning failure for api.example.com!
///       Peer certificate chain (verified):
///         sha256/AbC…=: CN=api.example.com
///         sha256/XyZ…=: CN=Example Intermediate CA
///       Pinned certificates for api.example.com (pattern *.example.com):
///         sha256/QqQ…=
public struct PinFailureReport: Sendable, Equatable, CustomStringConvertible {
    /// The host name that was checked.
    public let host: String
    /// The pins of the verified chain, leaf first, with each certificate's subject.
    public let chainPins: [(pin: SPKIPin, subject: String)]
    /// The pins configured for the host.
    public let configuredPins: [SPKIPin]
    /// When the check happened.
    public let date: Date
    /// The pattern of the pin set that was applied, when known.
    public let hostPattern: HostPattern?
    /// The expiration of the pin set that was applied, if it has one.
    public let expiration: Date?
    /// Whether the set was enforced (the connection was refused): false for report-only and expired sets.
    /// TrustKit's `enforce-pinning`.
    public let enforced: Bool
    /// The port connected to, when the TLS layer knows it.
    public var port: Int?
    /// The version of the pinning policy that was applied (0 for a baseline built in code; a signed pin-set
    /// document's version otherwise).
    public var policyVersion: Int
    /// The verified chain as PEM, leaf first, when the TLS layer had it (a resumed session carries none).
    /// TrustKit's `validated-certificate-chain`; certificates are public.
    public var validatedChainPEM: [String]

    /// A report for a check of `chain` against `configuredPins`.
    package init(
        host: String, chain: VerifiedChain, configuredPins: [SPKIPin], date: Date, hostPattern: HostPattern? = nil,
        expiration: Date? = nil, enforced: Bool = true, port: Int? = nil, validatedChainPEM: [String] = [],
        policyVersion: Int = 0
    ) {
        self.policyVersion = policyVersion
        self.host = host
        self.chainPins = chain.certificates.map { ($0.spkiPin, $0.subject) }
        self.configuredPins = configuredPins
        self.date = date
        self.hostPattern = hostPattern
        self.expiration = expiration
        self.enforced = enforced
        self.port = port
        self.validatedChainPEM = validatedChainPEM
    }

    /// Reports are equal when every field is (the chain compared pin by pin and subject by subject).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.host == rhs.host && lhs.configuredPins == rhs.configuredPins && lhs.date == rhs.date
            && lhs.chainPins.map(\.pin) == rhs.chainPins.map(\.pin)
            && lhs.chainPins.map(\.subject) == rhs.chainPins.map(\.subject)
            && lhs.hostPattern == rhs.hostPattern && lhs.expiration == rhs.expiration
            && lhs.enforced == rhs.enforced && lhs.policyVersion == rhs.policyVersion && lhs.port == rhs.port && lhs.validatedChainPEM == rhs.validatedChainPEM
    }

    /// OkHttp-style message: the verified chain's pins beside the configured ones, ready to paste.
    public var description: String {
        let policy = policyVersion > 0 ? " (pin policy version \(policyVersion))" : ""
        var lines = ["Certificate pinning failure for \(host)\(policy)!", "  Peer certificate chain (verified):"]
        lines += chainPins.map { "    \($0.pin): \($0.subject)" }
        let pattern = hostPattern.map { $0.pattern == host ? "" : " (pattern \($0))" } ?? ""
        lines.append("  Pinned certificates for \(host)\(pattern):")
        lines += configuredPins.map { "    \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// Receives pin failure reports, e.g. to send them to a backend (ShopKitHTTPS's `HTTPPinFailureReporter` POSTs
/// them as TrustKit reports).
///
/// Called for every connection whose verified chain matched no pin of its host's set: enforced sets (the
/// connection is refused, ``PinFailureReport/enforced`` is true), report-only and expired ones.
///
/// - Warning: Called on the connection's event loop: return at once and hand any work (a network send, a
///   file write) to a task or queue of your own, or every connection on that loop stalls.
public protocol PinFailureReporter: Sendable {
    /// Called once per connection whose chain matched no pin of the host's pin set.
    func report(_ report: PinFailureReport)

    /// Called once per connection whose publicly trusted chain did not follow the Certificate Transparency policy,
    /// in `reportOnly` and `enforced` mode (``CTEvaluation/needsReport``). The default implementation drops the
    /// report; ShopKitHTTPS's `HTTPPinFailureReporter` sends it (RFC 9163's JSON, ``CTComplianceReport/jsonData()``).
    func report(_ report: CTComplianceReport)
}

extension PinFailureReporter {
    /// Drops the report: a reporter written before CT existed receives pin failures only. Implement it to receive
    /// CT reports.
    public func report(_ report: CTComplianceReport) {}
}

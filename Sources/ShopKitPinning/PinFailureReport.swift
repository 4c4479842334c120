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

    /// A report for a check of `chain` against `configuredPins`.
    public init(
        host: String, chain: VerifiedChain, configuredPins: [SPKIPin], date: Date, hostPattern: HostPattern? = nil,
        expiration: Date? = nil
    ) {
        self.host = host
        self.chainPins = chain.certificates.map { ($0.spkiPin, $0.subject) }
        self.configuredPins = configuredPins
        self.date = date
        self.hostPattern = hostPattern
        self.expiration = expiration
    }

    /// Reports are equal when every field is (the chain compared pin by pin and subject by subject).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.host == rhs.host && lhs.configuredPins == rhs.configuredPins && lhs.date == rhs.date
            && lhs.chainPins.map(\.pin) == rhs.chainPins.map(\.pin)
            && lhs.chainPins.map(\.subject) == rhs.chainPins.map(\.subject)
            && lhs.hostPattern == rhs.hostPattern && lhs.expiration == rhs.expiration
    }

    /// OkHttp-style message: the verified chain's pins beside the configured ones, ready to paste.
    public var description: String {
        var lines = ["Certificate pinning failure for \(host)!", "  Peer certificate chain (verified):"]
        lines += chainPins.map { "    \($0.pin): \($0.subject)" }
        let pattern = hostPattern.map { $0.pattern == host ? "" : " (pattern \($0))" } ?? ""
        lines.append("  Pinned certificates for \(host)\(pattern):")
        lines += configuredPins.map { "    \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// Receives the failure reports of report-only pin sets (and of expired ones), e.g. to send them to a backend.
public protocol PinFailureReporter: Sendable {
    /// Called once per connection whose chain matched no pin of a report-only or expired set.
    func report(_ report: PinFailureReport)
}

import Foundation

/// What the pinning policy decided for one connection, with its reason.
public enum PinVerdict: Sendable, Equatable {
    /// No pin set covers this host: chain and hostname verification alone decide.
    case notPinned
    /// A configured pin matched a certificate on the verified chain (index 0 is the leaf).
    case matched(pin: SPKIPin, certificateIndex: Int)
    /// The host's pin set expired; it was not enforced (the expiry is logged).
    case expired(PinFailureReport)
    /// No pin matched, but the set is report-only: the connection goes on and the report is delivered.
    case reportOnlyMismatch(PinFailureReport)
    /// No pin matched: the connection must be closed.
    case mismatch(PinFailureReport)

    /// Whether the connection may proceed.
    public var allowsConnection: Bool {
        if case .mismatch = self { return false }
        return true
    }
}

/// A structured account of a pin check that did not match: everything needed to fix the configuration.
public struct PinFailureReport: Sendable, Equatable, CustomStringConvertible {
    /// The host name that was checked.
    public let host: String
    /// The pins of the verified chain, leaf first, with each certificate's subject.
    public let chainPins: [(pin: SPKIPin, subject: String)]
    /// The pins configured for the host.
    public let configuredPins: [SPKIPin]
    /// When the check happened.
    public let date: Date

    public init(host: String, chain: VerifiedChain, configuredPins: [SPKIPin], date: Date) {
        self.host = host
        self.chainPins = chain.certificates.map { ($0.spkiPin, $0.subject) }
        self.configuredPins = configuredPins
        self.date = date
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.host == rhs.host && lhs.configuredPins == rhs.configuredPins && lhs.date == rhs.date
            && lhs.chainPins.map(\.pin) == rhs.chainPins.map(\.pin)
            && lhs.chainPins.map(\.subject) == rhs.chainPins.map(\.subject)
    }

    /// OkHttp-style message: the verified chain's pins beside the configured ones, ready to paste.
    public var description: String {
        var lines = ["Certificate pinning failure for \(host)!", "  Peer certificate chain (verified):"]
        lines += chainPins.map { "    \($0.pin): \($0.subject)" }
        lines.append("  Pinned certificates for \(host):")
        lines += configuredPins.map { "    \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// Receives the failure reports of report-only pin sets (and of expired ones), e.g. to send them to a backend.
public protocol PinFailureReporter: Sendable {
    /// Called once per connection whose chain matched no pin of a report-only or expired set.
    func report(_ report: PinFailureReport)
}

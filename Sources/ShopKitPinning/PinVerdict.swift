import Foundation

/// What the pinning policy decided for one connection, with its reason.
public enum PinVerdict: Sendable, Equatable, CustomStringConvertible {
    /// No pin set covers this host: chain and hostname verification alone decide.
    case notPinned
    /// A configured pin matched a certificate on the verified chain (index 0 is the leaf).
    case matched(pin: SPKIPin, certificateIndex: Int)
    /// No pin matched, but the host's pin set has expired: it is not enforced. The caller logs this.
    case expired(PinFailureReport)
    /// No pin matched, but the set is report-only: the connection goes on and the report is delivered.
    case reportOnlyMismatch(PinFailureReport)
    /// No pin matched: the connection must be closed.
    case mismatch(PinFailureReport)

    /// Whether the connection may proceed: every case but ``mismatch(_:)`` (package access: the TLS layer's
    /// shorthand; an app switches on the cases).
    package var allowsConnection: Bool {
        if case .mismatch = self { return false }
        return true
    }

    /// The report to deliver to a ``PinFailureReporter``, if the verdict has one (package access: the TLS layer's
    /// shorthand; an app switches on the cases).
    package var report: PinFailureReport? {
        switch self {
        case .notPinned, .matched: return nil
        case .expired(let report), .reportOnlyMismatch(let report), .mismatch(let report): return report
        }
    }

    /// A log line for the verdict (no secrets: pins and subjects are public).
    public var description: String {
        switch self {
        case .notPinned:
            return "no pin set for this host"
        case .matched(let pin, let index):
            return "pin \(pin) matched certificate \(index) of the verified chain"
        case .expired(let report):
            let when = report.expiration.map { " at \($0.ISO8601Format())" } ?? ""
            return "pin set expired\(when) and was not enforced; " + report.description
        case .reportOnlyMismatch(let report):
            return "report-only pin set, connection allowed; " + report.description
        case .mismatch(let report):
            return report.description
        }
    }
}

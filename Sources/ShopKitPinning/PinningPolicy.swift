import Foundation

/// Per-host pin sets and the rules that apply them to a verified chain.
///
/// - Warning: Pins are checked only after OpenSSL verified the chain and the hostname; they narrow
///   trust, never replace it.
public struct PinningPolicy: Sendable {
    /// The configured pin sets, most specific first when matched.
    public var pinSets: [PinSet]

    public init(pinSets: [PinSet] = []) {
        self.pinSets = pinSets
    }

    /// The pin set that covers `host`, if any.
    public func pinSet(for host: String) -> PinSet? {
        pinSets.first { $0.hostPattern.matches(host) }
    }

    /// Checks the verified chain of a connection to `host` against the host's pin set.
    public func evaluate(host: String, chain: VerifiedChain, now: Date) -> PinVerdict {
        guard let set = pinSet(for: host) else { return .notPinned }
        for (index, certificate) in chain.certificates.enumerated() where set.pins.contains(certificate.spkiPin) {
            return .matched(pin: certificate.spkiPin, certificateIndex: index)
        }
        let report = PinFailureReport(host: host, chain: chain, configuredPins: set.pins, date: now)
        if let expiration = set.expiration, now >= expiration { return .expired(report) }
        return set.reportOnly ? .reportOnlyMismatch(report) : .mismatch(report)
    }
}

/// The pins for one host pattern.
public struct PinSet: Sendable, Hashable {
    /// Which hosts this set covers.
    public let hostPattern: HostPattern
    /// The accepted pins (leaf and backup keys).
    public let pins: [SPKIPin]
    /// After this date the set is not enforced.
    public let expiration: Date?
    /// Mismatches are reported but do not close the connection.
    public let reportOnly: Bool

    public init(hostPattern: HostPattern, pins: [SPKIPin], expiration: Date? = nil, reportOnly: Bool = false) {
        self.hostPattern = hostPattern
        self.pins = pins
        self.expiration = expiration
        self.reportOnly = reportOnly
    }
}

/// A host name pattern: `api.example.com`, `*.example.com` (exactly one more label) or
/// `**.example.com` (zero or more labels). Case-insensitive; IDNs must be given in punycode.
public struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    /// The pattern as given, lowercased.
    public let pattern: String

    public init(_ pattern: String) {
        self.pattern = pattern.lowercased()
    }

    /// Whether `host` falls under this pattern.
    public func matches(_ host: String) -> Bool {
        let host = host.lowercased()
        if pattern.hasPrefix("**.") {
            let base = String(pattern.dropFirst(3))
            return host == base || host.hasSuffix("." + base)
        }
        if pattern.hasPrefix("*.") {
            let base = String(pattern.dropFirst(2))
            guard host.hasSuffix("." + base) else { return false }
            let head = host.dropLast(base.count + 1)
            return !head.isEmpty && !head.contains(".")
        }
        return host == pattern
    }

    public var description: String { pattern }
}

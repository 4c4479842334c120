import Foundation

/// Per-host pin sets and the rules that apply them to a verified chain.
///
/// When several sets' patterns match a host, the most specific wins: an exact name (or IP address) over
/// `*.` over `**.`, and between patterns of one kind the longer base; between equal patterns, the first
/// given. Only that one set is applied.
///
/// - Warning: Pins are checked only after OpenSSL verified the chain and the hostname; they narrow
///   trust, never replace it.
public struct PinningPolicy: Sendable {
    /// The configured pin sets.
    public var pinSets: [PinSet]

    /// A policy applying `pinSets`; an empty policy pins nothing.
    public init(pinSets: [PinSet] = []) {
        self.pinSets = pinSets
    }

    /// The pin set that covers `host`, if any: the most specific matching pattern.
    public func pinSet(for host: String) -> PinSet? {
        var best: PinSet?
        for set in pinSets where set.hostPattern.matches(host) {
            if best == nil || set.hostPattern.specificity > best!.hostPattern.specificity { best = set }
        }
        return best
    }

    /// Checks the verified chain of a connection to `host` against the host's pin set.
    ///
    /// Rules, in order: no set → ``PinVerdict/notPinned``; a pin equal to the SPKI pin of any certificate
    /// of the verified chain → ``PinVerdict/matched(pin:certificateIndex:)`` (leaf first); otherwise an
    /// expired set → ``PinVerdict/expired(_:)``, a report-only set → ``PinVerdict/reportOnlyMismatch(_:)``,
    /// else ``PinVerdict/mismatch(_:)``.
    public func evaluate(host: String, chain: VerifiedChain, now: Date) -> PinVerdict {
        guard let set = pinSet(for: host) else { return .notPinned }
        for (index, certificate) in chain.certificates.enumerated() where set.pins.contains(certificate.spkiPin) {
            return .matched(pin: certificate.spkiPin, certificateIndex: index)
        }
        let report = PinFailureReport(
            host: host, chain: chain, configuredPins: set.pins, date: now, hostPattern: set.hostPattern,
            expiration: set.expiration)
        if set.isExpired(at: now) { return .expired(report) }
        return set.reportOnly ? .reportOnlyMismatch(report) : .mismatch(report)
    }

    /// The no-backup warning of the set covering `host`, for the chain just verified (see ``PinSet/backupWarning(for:)``).
    public func backupWarning(host: String, chain: VerifiedChain) -> PinBackupWarning? {
        pinSet(for: host)?.backupWarning(for: chain)
    }
}

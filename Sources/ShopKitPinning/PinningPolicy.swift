import Foundation

/// Per-host pin sets and the rules that apply them to a verified chain.
///
/// When several sets' patterns match a host, the most specific *live* one wins: an exact name (or IP address)
/// over `*.` over `**.`, and between patterns of one kind the longer base; between equal patterns, the first
/// given. Only that one set is applied. An expired set hides nothing: the next most specific live set applies,
/// and only when every set covering the host has expired is the host unpinned (``PinVerdict/expired(_:)``, not
/// enforced, reported), which a strict policy refuses.
///
/// - Warning: Pins are checked only after OpenSSL verified the chain and the hostname; they narrow
///   trust, never replace it.
public struct PinningPolicy: Sendable {
    /// What happens on a connection to a host that no pin set covers.
    public enum UnpinnedHosts: Sendable, Hashable {
        /// Connect with chain and hostname verification only (the default); ShopKit logs once per host, at
        /// `notice`, that the host is not pinned.
        case allow
        /// Refuse the connection with `TLSError.hostNotPinned`, naming the host and the configured patterns. A host
        /// whose only covering sets have expired counts as unpinned, and is refused with `TLSError.pinSetExpired`.
        /// Choose this when every host the app talks to is pinned: a typo in a pattern then fails loudly
        /// instead of silently turning pinning off.
        case refuse
    }

    /// The configured pin sets.
    public var pinSets: [PinSet]
    /// What happens on a connection to a host no set covers (default ``UnpinnedHosts/allow``).
    public var unpinnedHosts: UnpinnedHosts
    /// Which policy this is: 0 for one built in code (the app's baseline), a signed ``PinSetDocument``'s version
    /// for one it describes. Failure reports carry it, so a refusal names the policy that refused.
    public var version: Int
    /// Whether a signed pin-set document may turn this (baseline) policy's ``UnpinnedHosts/refuse`` into
    /// ``UnpinnedHosts/allow`` (default false: a strict app stays strict whatever a document says). Read only on
    /// the baseline a document is checked against.
    ///
    /// - Warning: Setting it lets whoever holds a signing key stop pinning every host the document leaves out.
    public var documentsMayAllowUnpinnedHosts: Bool

    /// For the policy of a signed document: the instant the document expires, and the policy that applies from
    /// then on (the baseline it was checked against). Every evaluation at or after that instant uses that policy,
    /// so the document's sets never outlive the document, however late the timer that replaces it runs.
    package var expiry: Expiry?

    /// When a document's policy ends, and what follows it.
    package final class Expiry: Sendable {
        /// The document's `expiresAt`: from this instant on (`PinSetDocument.isExpired(at:)`), `then` applies.
        package let at: Date
        package let then: PinningPolicy

        package init(at: Date, then: PinningPolicy) {
            self.at = at
            self.then = then
        }
    }

    /// The instants at which the policy in force changes by itself (its document's expiry, and those of the
    /// policies that follow), soonest first; empty for a policy built in code.
    package var expiryInstants: [Date] {
        guard let expiry else { return [] }
        return ([expiry.at] + expiry.then.expiryInstants).sorted()
    }

    /// Whether a document's expiry in this policy has passed at `now` (the policy in force is then another).
    package func hasGivenWay(at now: Date) -> Bool { successor(at: now) != nil }

    /// The policy in force at `now`: this one, or past its document's expiry the one that follows it.
    package func inForce(at now: Date) -> PinningPolicy { successor(at: now) ?? self }

    /// The policy that follows this one at `now`, nil while this one is in force (every query that takes an
    /// instant starts here).
    private func successor(at now: Date) -> PinningPolicy? {
        guard let expiry, now >= expiry.at else { return nil }
        return expiry.then.inForce(at: now)
    }

    /// A policy applying `pinSets`; an empty policy pins nothing.
    ///
    /// - Parameters:
    ///   - pinSets: the pin sets, each covering the hosts its pattern matches.
    ///   - unpinnedHosts: `.refuse` makes every host without a pin set fail to connect ("strict hosts"); the
    ///     default `.allow` connects them with chain and hostname verification only.
    ///   - version: the policy's version (0, the default, for a baseline built in code).
    ///   - documentsMayAllowUnpinnedHosts: on a strict baseline, let a signed document allow unpinned hosts
    ///     (default false).
    public init(
        pinSets: [PinSet] = [], unpinnedHosts: UnpinnedHosts = .allow, version: Int = 0,
        documentsMayAllowUnpinnedHosts: Bool = false
    ) {
        self.pinSets = pinSets
        self.unpinnedHosts = unpinnedHosts
        self.version = version
        self.documentsMayAllowUnpinnedHosts = documentsMayAllowUnpinnedHosts
    }

    /// The configured host patterns, in order (what a refusal of an unpinned host lists).
    package var hostPatterns: [String] { pinSets.map(\.hostPattern.description) }

    /// Whether a connection to `host` at `now` must be refused: the policy is strict and no live set covers the
    /// host (a set past its expiration is not enforced, so it counts as none; ``expiredPinSet(for:at:)`` names it).
    package func refusesUnpinned(host: String, at now: Date) -> Bool {
        if let successor = successor(at: now) { return successor.refusesUnpinned(host: host, at: now) }
        return unpinnedHosts == .refuse && pinSet(for: host, at: now)?.isExpired(at: now) ?? true
    }

    /// The set applied to `host` (any spelling: it is looked up under its canonical ``ServerName``) at `now`: the
    /// most specific live set covering it; when every covering set has expired, the most specific of those (it is
    /// then not enforced); nil when none covers it.
    package func pinSet(for host: String, at now: Date) -> PinSet? {
        if let successor = successor(at: now) { return successor.pinSet(for: host, at: now) }
        return mostSpecific(for: host) { !$0.isExpired(at: now) } ?? pinSet(for: host)
    }

    /// The most specific expired set covering `host` when no live set covers it: why a strict policy refuses it.
    package func expiredPinSet(for host: String, at now: Date) -> PinSet? {
        guard let set = pinSet(for: host, at: now), set.isExpired(at: now) else { return nil }
        return set
    }

    /// The most specific set whose pattern covers `host`, expired or not (see `pinSet(for:at:)` for the set
    /// that is applied).
    package func pinSet(for host: String) -> PinSet? { mostSpecific(for: host) { _ in true } }

    private func mostSpecific(for host: String, where included: (PinSet) -> Bool) -> PinSet? {
        var best: PinSet?
        let subject = HostPattern.Subject(host)
        for set in pinSets where set.hostPattern.matches(subject) && included(set) {
            if best == nil || set.hostPattern.specificity > best!.hostPattern.specificity { best = set }
        }
        return best
    }

    /// Checks the verified chain of a connection to `host` against the host's pin set.
    ///
    /// The set is `pinSet(for:at:)`'s: the most specific live one, else the most specific expired one. Rules, in
    /// order: no set → ``PinVerdict/notPinned``; a pin equal to the SPKI pin of any certificate of the verified
    /// chain → ``PinVerdict/matched(pin:certificateIndex:)`` (leaf first); otherwise an expired set (every set
    /// covering the host has expired) → ``PinVerdict/expired(_:)``, a report-only set →
    /// ``PinVerdict/reportOnlyMismatch(_:)``, else ``PinVerdict/mismatch(_:)``.
    ///
    /// Any spelling of a server name finds the set of its canonical form (`127.0.0.1.` finds the set for
    /// `127.0.0.1`; `API.Example.COM.` the one for `api.example.com`), as the TLS layer's own lookup does, and a
    /// report names the canonical form.
    public func evaluate(host: String, chain: VerifiedChain, now: Date) -> PinVerdict {
        if let successor = successor(at: now) { return successor.evaluate(host: host, chain: chain, now: now) }
        let host = (try? ServerName(host))?.text ?? host
        guard let set = pinSet(for: host, at: now) else { return .notPinned }
        for (index, certificate) in chain.certificates.enumerated() where set.pins.contains(certificate.spkiPin) {
            return .matched(pin: certificate.spkiPin, certificateIndex: index)
        }
        let report = PinFailureReport(
            host: host, chain: chain, configuredPins: set.pins, date: now, hostPattern: set.hostPattern,
            expiration: set.expiration, enforced: !set.isExpired(at: now) && !set.reportOnly, policyVersion: version)
        if set.isExpired(at: now) { return .expired(report) }
        return set.reportOnly ? .reportOnlyMismatch(report) : .mismatch(report)
    }

    /// The no-backup warning of the set applied to `host` at `now` (`pinSet(for:at:)`), for the chain just
    /// verified: a ``PinBackupWarning`` when every pin of that set matches `chain` (then no pin is a real backup,
    /// and replacing the server's keys would lock clients out); nil when at least one pin is not in use, or no
    /// set applies.
    public func backupWarning(host: String, chain: VerifiedChain, at now: Date) -> PinBackupWarning? {
        pinSet(for: host, at: now)?.backupWarning(for: chain)
    }
}

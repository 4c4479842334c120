import Foundation

/// Certificate Transparency for publicly trusted chains: Chrome's CT policy over the SCTs a connection delivered,
/// judged against a log list, in a mode per host pattern.
///
/// Why: pins protect the hosts an app owns; every other host is trusted on the Web PKI alone. Requiring SCTs means
/// a certificate a CA issued by mistake (or under pressure) must have been published in CT logs, where the site's
/// owner can find it, before ShopKit accepts it.
///
/// - Modes: ``Mode/reportOnly`` is the default (a non-compliant chain is reported through the pin-failure
///   reporter, the connection goes on), ``Mode/enforced`` refuses it, ``Mode/disabled`` does not check. The most
///   specific rule whose pattern matches the host wins, as for pin sets (an exact name over `*.` over `**.`, then
///   the longer base; between equal patterns, the first given); other hosts get ``defaultMode``.
/// - Scope: only chains ending at a public root (``publicRoots``); a private root (a company CA, the tests' own)
///   is exempt, as browsers exempt locally added roots.
/// - A stale list: when ``logList`` is older than ``maximumLogListAge``, `enforced` acts as `reportOnly`
///   (browsers do the same after 70 days), never refusing every host because logs moved on.
/// - A list with no logs (the bundled one) never blocks and never reports (``CTEvaluation/Verdict/noLogList``).
///
/// The rules (`evaluate(host:chain:scts:rootIsPublic:now:)`) are Chrome's (ct_policy.md), on SCTs whose signature
/// OpenSSL verified, from logs in the list, dated no later than the time of check, from a log whose temporal
/// interval holds the certificate's notAfter:
/// - SCTs embedded in the certificate: one or more from a log qualified, usable or read-only now; SCTs from at
///   least N distinct logs qualified, usable, read-only, or retired (an SCT from a retired log counts only if dated
///   before the retirement), N = 2 for a lifetime (notAfter − notBefore) of at most 180 days, 3 above; and among
///   them at least two distinct operators.
/// - SCTs from the TLS extension or a stapled OCSP response: at least two from logs qualified, usable or read-only
///   now, of at least two distinct operators.
/// Either set suffices. Pending and rejected logs never count. An SCT's operator is the one that ran its log when
/// the SCT was issued (a log's `previous_operators`), so a log handed from one operator to another cannot make one
/// operator's SCTs count as two operators'.
///
/// - Warning: `enforced` refuses connections to hosts whose certificates do not follow the policy; start with
///   `reportOnly`, read the reports, then enforce per host.
public struct CertificateTransparencyPolicy: Sendable {
    /// What the policy does for a host.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Not checked.
        case disabled
        /// Checked; a non-compliant chain is reported, the connection goes on (the default).
        case reportOnly
        /// Checked; a non-compliant chain is reported and the connection refused (while the list is fresh).
        case enforced
    }

    /// The mode for the hosts a pattern matches.
    public struct Rule: Sendable, Hashable {
        /// The hosts the rule covers.
        public var hostPattern: HostPattern
        /// Their mode.
        public var mode: Mode

        /// A rule giving the hosts `hostPattern` matches `mode`.
        public init(hostPattern: HostPattern, mode: Mode) {
            self.hostPattern = hostPattern
            self.mode = mode
        }

        /// A rule from a pattern's text (`api.example.com`, `*.example.com`, `**.example.com`).
        public init(host pattern: String, mode: Mode) throws(HostPatternError) {
            self.init(hostPattern: try HostPattern(pattern), mode: mode)
        }
    }

    /// Which roots count as public: chains ending elsewhere are exempt.
    public enum PublicRoots: Sendable, Hashable {
        /// The Mozilla roots Debian's ca-certificates ships in `/usr/share/ca-certificates/mozilla`, read by the
        /// OpenSSL layer (the default).
        case system
        /// Roots with these SPKI pins (tests, and apps with a list of their own).
        case spkiPins(Set<SPKIPin>)
    }

    /// The mode of hosts no rule covers (default ``Mode/reportOnly``).
    public var defaultMode: Mode
    /// The modes per host pattern. ``init(defaultMode:rules:logList:maximumLogListAge:publicRoots:)`` refuses two
    /// rules with one pattern; if a later change adds one, the first given applies.
    public var rules: [Rule]
    /// The logs SCTs are judged against (default ``CTLogList/bundled``, which has none).
    public var logList: CTLogList
    /// How old ``logList`` may be before `enforced` acts as `reportOnly` (default 70 days, as browsers).
    public var maximumLogListAge: TimeInterval
    /// Which roots are public (default ``PublicRoots/system``).
    public var publicRoots: PublicRoots

    /// The default age limit of a log list: 70 days.
    public static let defaultMaximumLogListAge: TimeInterval = 70 * 86_400

    /// A policy without rules: every host gets `defaultMode`.
    public init(
        defaultMode: Mode = .reportOnly, logList: CTLogList = .bundled,
        maximumLogListAge: TimeInterval = CertificateTransparencyPolicy.defaultMaximumLogListAge,
        publicRoots: PublicRoots = .system
    ) {
        self.defaultMode = defaultMode
        self.rules = []
        self.logList = logList
        self.maximumLogListAge = maximumLogListAge
        self.publicRoots = publicRoots
    }

    /// A policy with a mode per host pattern.
    ///
    /// - Throws: ``CertificateTransparencyPolicyError/duplicateHostPattern(_:)`` when two rules have one pattern.
    public init(
        defaultMode: Mode = .reportOnly, rules: [Rule], logList: CTLogList = .bundled,
        maximumLogListAge: TimeInterval = CertificateTransparencyPolicy.defaultMaximumLogListAge,
        publicRoots: PublicRoots = .system
    ) throws(CertificateTransparencyPolicyError) {
        var seen = Set<HostPattern>()
        for rule in rules where !seen.insert(rule.hostPattern).inserted { throw .duplicateHostPattern(rule.hostPattern) }
        self.init(defaultMode: defaultMode, logList: logList, maximumLogListAge: maximumLogListAge, publicRoots: publicRoots)
        self.rules = rules
    }

    /// The mode for `host` (any spelling: looked up under its canonical name, as pin sets are): the most specific
    /// matching rule's, else ``defaultMode``.
    public func mode(for host: String) -> Mode {
        let subject = HostPattern.Subject(host)
        var best: Rule?
        for rule in rules where rule.hostPattern.matches(subject) {
            if best == nil || rule.hostPattern.specificity > best!.hostPattern.specificity { best = rule }
        }
        return best?.mode ?? defaultMode
    }

    /// Whether the list is older than ``maximumLogListAge`` at `now`, or dated more than ``futureListTolerance`` after it.
    public func logListIsStale(at now: Date) -> Bool {
        let age = now.timeIntervalSince(logList.timestamp)
        // A list dated more than a day ahead of this clock is not trusted to enforce either: its date cannot be
        // told from a mistake, and taken as it is it would never go stale.
        return age > maximumLogListAge || age < -Self.futureListTolerance
    }

    /// How far ahead of the local clock a list's timestamp may be (clocks differ) before the list counts as stale.
    public static let futureListTolerance: TimeInterval = 86_400
}

/// Why a CT policy was refused.
public enum CertificateTransparencyPolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Two rules have this pattern.
    case duplicateHostPattern(HostPattern)

    public var description: String {
        switch self {
        case .duplicateHostPattern(let pattern):
            return "the CT policy has two rules for \(pattern); give each host pattern one mode"
        }
    }
}

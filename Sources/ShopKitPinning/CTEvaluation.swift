import Foundation

/// The outcome of ``CertificateTransparencyPolicy/evaluate(host:chain:scts:rootIsPublic:now:)`` for one
/// connection: the verdict, the mode it was judged under, and what each SCT counted for.
public struct CTEvaluation: Sendable, Hashable {
    /// What the policy concluded.
    public enum Verdict: Sendable, Hashable {
        /// The SCTs follow the policy.
        case compliant
        /// The SCTs do not follow the policy; the reason names what is missing and whose fault it is.
        case notCompliant(reason: String)
        /// Not judged: the chain ends at a root that is not public (a private or locally added CA).
        case exempt(reason: String)
        /// Not judged: the host's mode is ``CertificateTransparencyPolicy/Mode/disabled``.
        case notChecked
        /// Not judged: the log list has no logs (the bundled list, until the app supplies one), so no SCT could
        /// count. Never blocks and never reports: judging every host non-compliant would report every connection.
        case noLogList
    }

    /// The host's mode.
    public let mode: CertificateTransparencyPolicy.Mode
    /// The mode the verdict is acted on under: ``mode``, except ``CertificateTransparencyPolicy/Mode/reportOnly``
    /// for an enforced host while the log list is stale.
    public let effectiveMode: CertificateTransparencyPolicy.Mode
    /// What the policy concluded.
    public let verdict: Verdict
    /// Whether the log list was older than the policy's `maximumLogListAge`.
    public let logListStale: Bool
    /// When the log list becomes stale (its timestamp plus `maximumLogListAge`): a report's
    /// `effective-expiration-date`, the end of enforcement under this list.
    public let logListExpiry: Date
    /// Each SCT the connection delivered, in the order given, with what it counted for.
    public let assessments: [SCTAssessment]

    package init(
        mode: CertificateTransparencyPolicy.Mode, effectiveMode: CertificateTransparencyPolicy.Mode, verdict: Verdict,
        logListStale: Bool, logListExpiry: Date, assessments: [SCTAssessment]
    ) {
        self.mode = mode
        self.effectiveMode = effectiveMode
        self.verdict = verdict
        self.logListStale = logListStale
        self.logListExpiry = logListExpiry
        self.assessments = assessments
    }

    /// False only for a non-compliant chain under an effective `enforced` mode: the connection is refused.
    public var allowsConnection: Bool {
        guard case .notCompliant = verdict else { return true }
        return effectiveMode != .enforced
    }

    /// True for a non-compliant chain under `reportOnly` or `enforced`: the reporter gets a ``CTComplianceReport``.
    public var needsReport: Bool {
        guard case .notCompliant = verdict else { return false }
        return effectiveMode != .disabled
    }
}

/// One SCT of a connection, as the policy judged it.
public struct SCTAssessment: Sendable, Hashable {
    /// The SCT.
    public let sct: SignedCertificateTimestamp
    /// Its log's description, nil when the log is not in the list.
    public let logDescription: String?
    /// The operator that ran its log when it was issued (``CTLogList/Log/operatorName(at:)``), which the
    /// distinct-operator rule counts; nil when the log is not in the list.
    public let operatorName: String?
    /// Whether it counts toward the rules of its source (embedded, or TLS extension and OCSP).
    public let counted: Bool
    /// Why it does not count, naming who is at fault (the server's certificate, a log, the list); nil when it
    /// counts.
    public let reason: String?

    package init(sct: SignedCertificateTimestamp, logDescription: String?, operatorName: String?, counted: Bool, reason: String?) {
        self.sct = sct
        self.logDescription = logDescription
        self.operatorName = operatorName
        self.counted = counted
        self.reason = reason
    }
}

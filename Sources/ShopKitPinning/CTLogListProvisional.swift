import Foundation

// PROVISIONAL (replaced by the ct-policy branch's CTLogList at merge).
public struct CTLogList: Sendable, Hashable {
    public struct Log: Sendable, Hashable {
        public var description: String
        public var logID: [UInt8]
        public var key: [UInt8]
        public var operatorName: String
    }
    public var timestamp: Date
    public var logs: [Log]
}

// PROVISIONAL stubs (replaced by the ct-policy branch at merge).
public struct CertificateTransparencyPolicy: Sendable {
    public enum Mode: String, Sendable, Hashable, CaseIterable { case disabled, reportOnly, enforced }
    public enum PublicRoots: Sendable, Hashable { case system, spkiPins(Set<SPKIPin>) }
    public var defaultMode: Mode = .reportOnly
    public var logList: CTLogList = CTLogList(timestamp: Date(), logs: [])
    public var maximumLogListAge: TimeInterval = 70 * 86_400
    public var publicRoots: PublicRoots = .system
    public init() {}
    public func mode(for host: String) -> Mode { defaultMode }
    public func evaluate(
        host: String, chain: VerifiedChain, scts: [SignedCertificateTimestamp], rootIsPublic: Bool, now: Date
    ) -> CTEvaluation {
        CTEvaluation(mode: defaultMode, effectiveMode: defaultMode, verdict: .notChecked, logListStale: false)
    }
}

public struct CTEvaluation: Sendable, Hashable {
    public enum Verdict: Sendable, Hashable {
        case compliant, notCompliant(reason: String), exempt(reason: String), notChecked, noLogList
    }
    public var mode: CertificateTransparencyPolicy.Mode
    public var effectiveMode: CertificateTransparencyPolicy.Mode
    public var verdict: Verdict
    public var logListStale: Bool
    public var verdictDescription: String { "\(verdict)" }
    public var allowsConnection: Bool {
        if case .notCompliant = verdict, effectiveMode == .enforced { return false }
        return true
    }
    public var needsReport: Bool {
        if case .notCompliant = verdict { return effectiveMode != .disabled }
        return false
    }
}

public struct CTComplianceReport: Sendable, Hashable {
    public init(evaluation: CTEvaluation, host: String, port: Int, date: Date, servedChainPEM: [String], validatedChainPEM: [String]) {}
}
extension PinFailureReporter {
    public func report(_ report: CTComplianceReport) {}
}

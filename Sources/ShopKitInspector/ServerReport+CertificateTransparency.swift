import Foundation
import ShopKitPinning

extension ServerReport {
    /// The Certificate Transparency evaluation of the checked connection (`pin-check --ct`), as JSON carries it:
    /// the modes, the verdict, the log list it was judged against, and every SCT the server delivered.
    package struct CertificateTransparency: Sendable, Codable, Equatable {
        /// The mode asked for: `disabled`, `report-only` or `enforced`.
        package let mode: String
        /// The mode acted on: `report-only` for `enforced` while the log list is stale; else ``mode``.
        package let effectiveMode: String
        /// `compliant`, `not-compliant`, `exempt` (the root is not public), `not-checked` (mode disabled) or
        /// `no-log-list` (the list has no logs, as the bundled one).
        package let verdict: String
        /// The verdict in words: why not compliant, why exempt, what was counted.
        package let reason: String
        /// The log list judged against.
        package let logList: LogList
        /// Every SCT the server delivered, in the order read; empty in mode `disabled` (none is asked for).
        package let scts: [SCT]

        /// The log list of an evaluation.
        package struct LogList: Sendable, Codable, Equatable {
            /// `bundled` (ShopKit's resource) or the `--ct-log-list` path.
            package let source: String
            /// The list's `log_list_timestamp`.
            package let timestamp: Date
            /// The list's `version`, if it has one.
            package let version: String?
            /// How many logs it holds.
            package let logs: Int
            /// Whether it was older than the maximum age (70 days) at the check: `enforced` then acts as report-only.
            package let stale: Bool
            /// When it becomes (or became) stale: its timestamp plus the maximum age.
            package let staleAfter: Date

            enum CodingKeys: String, CodingKey { case source, timestamp, version, logs, stale, staleAfter }

            /// Every key always (`version` as `null`).
            package func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(source, forKey: .source)
                try container.encode(timestamp, forKey: .timestamp)
                try container.encode(version, forKey: .version)
                try container.encode(logs, forKey: .logs)
                try container.encode(stale, forKey: .stale)
                try container.encode(staleAfter, forKey: .staleAfter)
            }
        }

        /// One SCT, as the policy judged it.
        package struct SCT: Sendable, Codable, Equatable {
            /// Its log's description; nil when the log is not in the list.
            package let log: String?
            /// Its log's operator; nil when the log is not in the list.
            package let logOperator: String?
            /// The log ID (SHA-256 of the log's key), base64.
            package let logID: String
            /// When the log signed it.
            package let timestamp: Date
            /// `embedded`, `tls-extension` or `ocsp`.
            package let source: String
            /// OpenSSL's check of its signature: `valid`, `invalid`, `unknown-log`, `unverified`, `unknown-version`.
            package let status: String
            /// Whether it counts toward the policy.
            package let counted: Bool
            /// Why it does not count; nil when it does.
            package let reason: String?

            enum CodingKeys: String, CodingKey {
                case log, logOperator = "operator", logID, timestamp, source, status, counted, reason
            }

            /// Every key always (absent values as `null`).
            package func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(log, forKey: .log)
                try container.encode(logOperator, forKey: .logOperator)
                try container.encode(logID, forKey: .logID)
                try container.encode(timestamp, forKey: .timestamp)
                try container.encode(source, forKey: .source)
                try container.encode(status, forKey: .status)
                try container.encode(counted, forKey: .counted)
                try container.encode(reason, forKey: .reason)
            }
        }

        /// The evaluation of a connection under `policy`, whose list came from `source`.
        package init(_ evaluation: CTEvaluation, policy: CertificateTransparencyPolicy, source: String) {
            mode = Self.name(evaluation.mode)
            effectiveMode = Self.name(evaluation.effectiveMode)
            switch evaluation.verdict {
            case .compliant: verdict = "compliant"
            case .notCompliant: verdict = "not-compliant"
            case .exempt: verdict = "exempt"
            case .notChecked: verdict = "not-checked"
            case .noLogList: verdict = "no-log-list"
            }
            var reason = evaluation.verdictDescription
            if evaluation.verdict == .noLogList {
                reason += source == "bundled"
                    ? " (ShopKit's bundled list has none: give a list with --ct-log-list FILE)"
                    : " (\(source) holds no log)"
            }
            self.reason = reason
            logList = LogList(
                policy: policy, source: source, stale: evaluation.logListStale, staleAfter: evaluation.logListExpiry)
            scts = evaluation.assessments.map(SCT.init)
        }

        /// Mode `disabled`: nothing asked for, nothing judged.
        package init(disabledUnder policy: CertificateTransparencyPolicy, source: String, now: Date) {
            mode = Self.name(.disabled)
            effectiveMode = mode
            verdict = "not-checked"
            reason = "not checked: Certificate Transparency is disabled (--ct disabled), so no SCTs were asked for"
            logList = LogList(
                policy: policy, source: source, stale: policy.logListIsStale(at: now),
                staleAfter: policy.logList.timestamp.addingTimeInterval(policy.maximumLogListAge))
            scts = []
        }

        /// A mode as pin-check spells it: `disabled`, `report-only`, `enforced`.
        package static func name(_ mode: CertificateTransparencyPolicy.Mode) -> String {
            switch mode {
            case .disabled: return "disabled"
            case .reportOnly: return "report-only"
            case .enforced: return "enforced"
            }
        }

        /// Whether the verdict is `not-compliant`.
        package var isNotCompliant: Bool { verdict == "not-compliant" }
    }
}

extension ServerReport.CertificateTransparency.LogList {
    init(policy: CertificateTransparencyPolicy, source: String, stale: Bool, staleAfter: Date) {
        self.source = source
        timestamp = policy.logList.timestamp
        version = policy.logList.version
        logs = policy.logList.logs.count
        self.stale = stale
        self.staleAfter = staleAfter
    }
}

extension ServerReport.CertificateTransparency.SCT {
    init(_ assessment: SCTAssessment) {
        log = assessment.logDescription
        logOperator = assessment.operatorName
        logID = Data(assessment.sct.logID).base64EncodedString()
        timestamp = assessment.sct.timestamp
        source = assessment.sct.source.rawValue
        switch assessment.sct.status {
        case .valid: status = "valid"
        case .invalid: status = "invalid"
        case .unknownLog: status = "unknown-log"
        case .unverified: status = "unverified"
        case .unknownVersion: status = "unknown-version"
        }
        counted = assessment.counted
        reason = assessment.reason
    }
}

extension ServerReport.CertificateTransparency {
    /// The section of the text report: the modes and the list, each SCT, then the verdict.
    func textLines() -> [String] {
        let effective = effectiveMode == mode ? "" : " (acting as \(effectiveMode): the log list is stale)"
        let listName = logList.source == "bundled" ? "ShopKit's bundled list" : logList.source
        var lines = ["Certificate Transparency: mode \(mode)\(effective)"]
        let staleness = logList.stale
            ? "STALE since \(Self.day(logList.staleAfter))" : "stale after \(Self.day(logList.staleAfter))"
        lines.append(
            "  log list:  \(listName), \(logList.timestamp.ISO8601Format()), \(logList.logs) "
                + "\(logList.logs == 1 ? "log" : "logs"), \(staleness)")
        if mode != "disabled" {
            lines.append(scts.isEmpty ? "  SCTs:      none delivered" : "  SCTs (\(scts.count), in the order read):")
        }
        for (index, sct) in scts.enumerated() {
            let log = sct.log.map { "\($0) (\(sct.logOperator ?? "?"))" } ?? "log not in the list"
            lines.append("  [\(index)] \(log)")
            lines.append("      log ID:    \(sct.logID)")
            lines.append("      timestamp: \(sct.timestamp.ISO8601Format()), \(sct.source)")
            lines.append("      status:    \(sct.status), \(sct.counted ? "counted" : "not counted: \(sct.reason ?? "?")")")
        }
        lines.append("  verdict:   \(reason)")
        return lines
    }

    private static func day(_ date: Date) -> String { String(date.ISO8601Format().prefix(10)) }
}

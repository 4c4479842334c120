import Foundation

extension CertificateTransparencyPolicy {
    /// The longest lifetime (notAfter − notBefore) for which two distinct logs' embedded SCTs suffice: 180 days.
    public static let shortLifetime: TimeInterval = 180 * 86_400

    /// Judges the SCTs of a connection to `host` whose chain OpenSSL verified.
    ///
    /// In order: a `disabled` host → ``CTEvaluation/Verdict/notChecked``; a chain ending at a root that is not
    /// public (`rootIsPublic` false, as the OpenSSL layer found it from ``publicRoots``) →
    /// ``CTEvaluation/Verdict/exempt(reason:)``; a list without logs → ``CTEvaluation/Verdict/noLogList``;
    /// otherwise Chrome's rules (see the type's summary) → ``CTEvaluation/Verdict/compliant`` or
    /// ``CTEvaluation/Verdict/notCompliant(reason:)``. Every SCT is assessed whatever the verdict, for diagnostics.
    /// An `enforced` host is acted on as `reportOnly` while the list is stale at `now`.
    ///
    /// - Parameters:
    ///   - host: the server name connected to (any spelling; its mode is looked up under its canonical name).
    ///   - chain: the verified chain, leaf first; the leaf's validity gives the lifetime and the temporal check.
    ///   - scts: every SCT the connection delivered (embedded, TLS extension, OCSP), with OpenSSL's status.
    ///   - rootIsPublic: whether the chain's root is one of ``publicRoots``.
    ///   - now: the time of check.
    public func evaluate(
        host: String, chain: VerifiedChain, scts: [SignedCertificateTimestamp], rootIsPublic: Bool, now: Date
    ) -> CTEvaluation {
        let mode = mode(for: host)
        let stale = logListIsStale(at: now)
        let effectiveMode: Mode = mode == .enforced && stale ? .reportOnly : mode
        let leaf = chain.certificates.first
        let judged = Self.countingEachLogOnce(scts.map { judge($0, leaf: leaf, now: now) })
        let verdict: CTEvaluation.Verdict
        if mode == .disabled {
            verdict = .notChecked
        } else if !rootIsPublic {
            verdict = .exempt(
                reason: "the chain ends at a root that is not publicly trusted (a private or locally added CA); "
                    + "Certificate Transparency applies to publicly trusted chains only")
        } else if logList.logs.isEmpty {
            verdict = .noLogList
        } else {
            verdict = Self.verdict(judged, leaf: leaf)
        }
        return CTEvaluation(
            mode: mode, effectiveMode: effectiveMode, verdict: verdict, logListStale: stale,
            logListExpiry: logList.timestamp.addingTimeInterval(maximumLogListAge), assessments: judged.map(\.assessment))
    }

    /// One SCT, judged: its assessment, and for a counted one its log.
    struct Judged {
        let assessment: SCTAssessment
        let log: CTLogList.Log?
        /// Whether its operator (at its time) counts toward the distinct-operator rule: a counted SCT, or one not
        /// counted only because another SCT of its log was. Two SCTs of one log, from each side of its handover to
        /// another operator, are two operators' SCTs whatever their order (Chrome counts operators over every SCT).
        var countsOperator: Bool
        var counted: Bool { assessment.counted }

        init(assessment: SCTAssessment, log: CTLogList.Log?) {
            self.assessment = assessment
            self.log = log
            countsOperator = assessment.counted
        }
    }

    /// Whether `sct` counts toward its source's rules, and if not why (the first reason found).
    func judge(_ sct: SignedCertificateTimestamp, leaf: CertificateInfo?, now: Date) -> Judged {
        let log = logList.log(id: sct.logID)
        func judged(_ reason: String?) -> Judged {
            Judged(
                assessment: SCTAssessment(
                    sct: sct, logDescription: log?.description, operatorName: log?.operatorName(at: sct.timestamp),
                    counted: reason == nil,
                    reason: reason),
                log: log)
        }
        if sct.version != 0 || sct.status == .unknownVersion {
            return judged("the SCT has version \(sct.version + 1); RFC 6962 defines only v1, so the server sent an SCT ShopKit cannot read")
        }
        guard let log else {
            return judged(
                "its log (ID \(Data(sct.logID).base64EncodedString())) is not in the log list: the list lacks that log, "
                    + "or the SCT names no real log")
        }
        let name = String(reflecting: log.description)
        switch sct.status {
        case .valid, .unknownVersion: break
        case .invalid:
            return judged(
                "its signature does not verify under the key of log \(name) for this certificate: the server's "
                    + "certificate carries a forged SCT, or one made for another certificate")
        case .unknownLog:
            return judged("it was not checked: the log store OpenSSL used did not hold log \(name)")
        case .unverified:
            return judged("its signature could not be checked (OpenSSL lacked what it needs, such as the certificate's issuer)")
        }
        if sct.timestamp > now {
            return judged(
                "it is dated \(Self.timestamp(sct.timestamp)), after the time of check (\(Self.timestamp(now))): "
                    + "log \(name)'s clock, or this machine's, is wrong")
        }
        guard let state = log.state else {
            return judged("the log list gives log \(name) no state, so its SCTs do not count (the list is at fault)")
        }
        switch state {
        case .qualified, .usable, .readOnly: break
        case .pending(let since):
            return judged("log \(name) is pending (since \(Self.timestamp(since))): its SCTs never count")
        case .rejected(let since):
            return judged("log \(name) was rejected on \(Self.timestamp(since)): its SCTs never count")
        case .retired(let since):
            if sct.source != .embedded {
                return judged(
                    "log \(name) retired on \(Self.timestamp(since)): SCTs from the TLS extension or OCSP count only "
                        + "from logs qualified, usable or read-only now")
            }
            if sct.timestamp >= since {
                return judged(
                    "log \(name) retired on \(Self.timestamp(since)) and the SCT is dated "
                        + "\(Self.timestamp(sct.timestamp)), not before the retirement")
            }
        }
        if let interval = log.temporalInterval {
            guard let leaf else { return judged("the chain has no leaf certificate to check log \(name)'s temporal interval with") }
            guard interval.contains(leaf.notAfter) else {
                return judged(
                    "the server's certificate expires at \(Self.timestamp(leaf.notAfter)), outside log \(name)'s "
                        + "temporal interval [\(Self.timestamp(interval.start)), \(Self.timestamp(interval.end)))")
            }
        }
        return judged(nil)
    }

    /// `judged` with every SCT after the first counted one from the same log (in the same group: embedded, or
    /// TLS extension and OCSP) marked as not counted: a log counts once, and the assessments say so.
    static func countingEachLogOnce(_ judged: [Judged]) -> [Judged] {
        var seen: Set<[UInt8]> = []
        return judged.map { item in
            guard item.counted, let log = item.log else { return item }
            let group: UInt8 = item.assessment.sct.source == .embedded ? 0 : 1
            guard seen.insert([group] + log.logID).inserted else {
                let sct = item.assessment.sct
                var repeated = Judged(
                    assessment: SCTAssessment(
                        sct: sct, logDescription: log.description, operatorName: log.operatorName(at: sct.timestamp),
                        counted: false,
                        reason: "another SCT from log \(String(reflecting: log.description)) already counted: each log "
                            + "counts once (its operator at this SCT's time still counts as an operator)"),
                    log: log)
                repeated.countsOperator = true
                return repeated
            }
            return item
        }
    }

    /// The most uncounted SCTs a reason lists one by one (a server can send hundreds).
    static let reasonsListed = 5

    /// Chrome's rules over the judged SCTs: the embedded set or the delivered (TLS extension, OCSP) set.
    static func verdict(_ judged: [Judged], leaf: CertificateInfo?) -> CTEvaluation.Verdict {
        guard let leaf else { return .notCompliant(reason: "the verified chain has no leaf certificate") }
        guard !judged.isEmpty else {
            return .notCompliant(
                reason: "the server sent no SCTs: none embedded in its certificate, none in the TLS extension or "
                    + "a stapled OCSP response")
        }
        var problems: [String] = []
        let embedded = judged.filter { $0.assessment.sct.source == .embedded }
        if !embedded.isEmpty {
            let counted = embedded.filter(\.counted)
            let logs = Set(counted.compactMap(\.log?.logID))
            let operators = Set(embedded.filter(\.countsOperator).compactMap(\.assessment.operatorName))
            let lifetime = leaf.notAfter.timeIntervalSince(leaf.notBefore)
            let needed = lifetime <= shortLifetime ? 2 : 3
            let days = Int((lifetime / 86_400).rounded(.up))
            let hasCurrent = counted.contains { $0.log?.state?.isCurrent == true }
            if logs.count >= needed, operators.count >= 2, hasCurrent { return .compliant }
            var missing: [String] = []
            if logs.count < needed {
                missing.append("SCTs from \(needed) distinct logs (its \(days)-day lifetime needs \(needed)); \(logs.count) counted")
            }
            if operators.count < 2 {
                missing.append("SCTs from two distinct log operators; \(Self.operators(operators)) counted")
            }
            if !hasCurrent { missing.append("an SCT from a log qualified, usable or read-only now") }
            problems.append("the server's certificate lacks " + missing.joined(separator: ", and "))
        }
        let delivered = judged.filter { $0.assessment.sct.source != .embedded }
        if !delivered.isEmpty {
            let counted = delivered.filter(\.counted)
            let logs = Set(counted.compactMap(\.log?.logID))
            let operators = Set(delivered.filter(\.countsOperator).compactMap(\.assessment.operatorName))
            if logs.count >= 2, operators.count >= 2 { return .compliant }
            problems.append(
                "the server's SCTs from the TLS extension or OCSP count from \(logs.count) log(s) of "
                    + "\(Self.operators(operators)); two logs of two distinct operators are needed")
        }
        let uncounted = judged.filter { !$0.counted }
        if !uncounted.isEmpty {
            var reasons = uncounted.prefix(reasonsListed).map {
                "\($0.assessment.sct.source.rawValue) SCT: \($0.assessment.reason ?? "")"
            }
            if uncounted.count > reasonsListed { reasons.append("and \(uncounted.count - reasonsListed) more") }
            problems.append("\(uncounted.count) SCT(s) did not count (\(reasons.joined(separator: "; ")))")
        }
        return .notCompliant(reason: problems.joined(separator: "; "))
    }

    private static func operators(_ names: Set<String>) -> String {
        switch names.count {
        case 0: return "no operator"
        case 1: return "one operator (\(names.first!))"
        default: return "\(names.count) operators (\(names.sorted().joined(separator: ", ")))"
        }
    }

    /// `date` as reasons write times: ISO 8601 in UTC, whole seconds.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

import Foundation
import Testing
@testable import ShopKitPinning

/// Logs, SCTs and leaves as the design's fixtures (TestCerts/ct/) have them: operators One (logs a, b), Two (c),
/// Three (d), all usable since 2025-01-01; the list dated 2026-11-01; SCTs dated 2026-11-01T01:00:00Z.
enum CTFixture {
    static func date(_ text: String) -> Date { try! CTLogListWire.date(text, path: "") }

    static let a: UInt8 = 1, b: UInt8 = 2, c: UInt8 = 3, d: UInt8 = 4
    static let usableSince = date("2025-01-01T00:00:00Z")
    static let listDate = date("2026-11-01T00:00:00Z")
    static let sctDate = date("2026-11-01T01:00:00Z")
    static let notBefore = date("2026-11-01T00:00:00Z")
    /// The time of check: 2026-11-28 12:00, 27.5 days after the list.
    static let now = date("2026-11-28T12:00:00Z")

    static func id(_ log: UInt8) -> [UInt8] { [UInt8](repeating: log, count: 32) }

    static func log(
        _ log: UInt8, _ operatorName: String, state: CTLogList.State? = .usable(usableSince),
        interval: CTLogList.TemporalInterval? = nil
    ) -> CTLogList.Log {
        CTLogList.Log(
            description: "ShopKit Test Log \(Character(Unicode.Scalar(UInt8(ascii: "A") + log - 1)))", logID: id(log),
            key: [0x30, log], state: state, temporalInterval: interval, operatorName: operatorName)
    }

    /// The test list; `change` alters one log (by its number) first.
    static func list(timestamp: Date = listDate, _ change: (UInt8, inout CTLogList.Log) -> Void = { _, _ in }) -> CTLogList {
        func logs(_ numbers: [UInt8], _ name: String) -> [CTLogList.Log] {
            numbers.map { number in
                var entry = log(number, name)
                change(number, &entry)
                return entry
            }
        }
        return CTLogList(timestamp: timestamp, version: "1", operators: [
            .init(name: "ShopKit Test Operator One", logs: logs([a, b], "ShopKit Test Operator One")),
            .init(name: "ShopKit Test Operator Two", logs: logs([c], "ShopKit Test Operator Two")),
            .init(name: "ShopKit Test Operator Three", logs: logs([d], "ShopKit Test Operator Three")),
        ])
    }

    /// A verified chain whose leaf lives `days` days from 2026-11-01 (3653 days: the design's leaves, to 2036-11-01).
    static func chain(days: Double = 3653) -> VerifiedChain {
        let leaf = CertificateInfo(
            spkiPin: Fixture.pin(1), subject: "CN=localhost", issuer: "CN=ShopKit Test Intermediate 2",
            subjectAlternativeNames: ["localhost"], notBefore: notBefore, notAfter: notBefore + days * 86_400,
            keyDescription: "ECDSA P-256", signatureAlgorithm: "ecdsa-with-SHA256")
        return VerifiedChain(verifiedCertificates: [leaf, Fixture.certificate(2, "CN=Intermediate"), Fixture.certificate(3, "CN=Root")])
    }

    static func sct(
        _ log: UInt8, _ source: SignedCertificateTimestamp.Source = .embedded, status: SignedCertificateTimestamp.Status = .valid,
        at timestamp: Date = sctDate
    ) -> SignedCertificateTimestamp {
        SignedCertificateTimestamp(
            version: 0, logID: id(log), timestamp: timestamp, extensions: [], source: source, status: status,
            serialized: [0, log])
    }

    static func policy(_ mode: CertificateTransparencyPolicy.Mode = .enforced, list: CTLogList = list()) -> CertificateTransparencyPolicy {
        CertificateTransparencyPolicy(defaultMode: mode, logList: list)
    }

    static func evaluate(
        _ scts: [SignedCertificateTimestamp], policy: CertificateTransparencyPolicy = policy(), days: Double = 3653,
        rootIsPublic: Bool = true, now: Date = now
    ) -> CTEvaluation {
        policy.evaluate(host: "localhost", chain: chain(days: days), scts: scts, rootIsPublic: rootIsPublic, now: now)
    }
}

@Suite(.timeLimit(.minutes(3))) struct CertificateTransparencyPolicyTests {
    typealias F = CTFixture

    static func reason(_ evaluation: CTEvaluation) -> String? {
        guard case .notCompliant(let reason) = evaluation.verdict else { return nil }
        return reason
    }

    /// The assessment of the SCT from `log`.
    static func assessment(_ evaluation: CTEvaluation, _ log: UInt8) -> SCTAssessment? {
        evaluation.assessments.first { $0.sct.logID == F.id(log) }
    }

    // MARK: embedded SCTs

    @Test func embeddedSCTsFromThreeLogsOfThreeOperatorsComply() {
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d)])
        #expect(evaluation.verdict == .compliant)
        #expect(evaluation.mode == .enforced && evaluation.effectiveMode == .enforced)
        #expect(evaluation.allowsConnection && !evaluation.needsReport && !evaluation.logListStale)
        #expect(evaluation.assessments.allSatisfy { $0.counted && $0.reason == nil })
        #expect(Self.assessment(evaluation, F.c)?.logDescription == "ShopKit Test Log C")
        #expect(Self.assessment(evaluation, F.c)?.operatorName == "ShopKit Test Operator Two")
    }

    /// The same log's SCT three times counts once, and the assessments say which copies did not count.
    @Test func aLogCountsOnceAndItsOtherSCTsSaySo() throws {
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.a), F.sct(F.a), F.sct(F.c)])
        guard case .notCompliant = evaluation.verdict else {
            Issue.record("\(evaluation.verdict)")
            return
        }
        #expect(evaluation.assessments.map(\.counted) == [true, false, false, true])
        #expect(evaluation.assessments[1].reason?.contains("each log counts once") == true)
    }

    /// Hundreds of SCTs that do not count make a reason of a few lines, not hundreds (it goes into reports).
    @Test func aReasonListsAFewUncountedSCTsAndHowManyMore() throws {
        let evaluation = F.evaluate((0..<500).map { _ in F.sct(9) } + [F.sct(F.a)])
        let reason = try #require(Self.reason(evaluation))
        #expect(reason.contains("500 SCT(s) did not count"))
        #expect(reason.contains("and 495 more"))
        #expect(reason.count < 2_000, "\(reason.count) characters")
    }

    /// A list dated days ahead of the clock enforces nothing: taken as it is, it would never go stale.
    @Test func aListDatedAheadOfTheClockIsStale() {
        let ahead = F.policy(list: F.list(timestamp: F.now + 2 * 86_400))
        #expect(ahead.logListIsStale(at: F.now))
        let evaluation = F.evaluate([F.sct(F.a)], policy: ahead)
        #expect(evaluation.logListStale && evaluation.effectiveMode == .reportOnly && evaluation.allowsConnection)
        // A few hours ahead is only clocks differing.
        #expect(!F.policy(list: F.list(timestamp: F.now + 3_600)).logListIsStale(at: F.now))
    }

    @Test func tooFewSCTsAreRefusedWhenEnforcedAndReportedWhenNot() throws {
        let enforced = F.evaluate([F.sct(F.a)])
        let reason = try #require(Self.reason(enforced))
        #expect(reason.contains("the server's certificate lacks SCTs from 3 distinct logs (its 3653-day lifetime needs 3); 1 counted"))
        #expect(reason.contains("two distinct log operators; one operator (ShopKit Test Operator One) counted"))
        #expect(!enforced.allowsConnection && enforced.needsReport)
        let reportOnly = F.evaluate([F.sct(F.a)], policy: F.policy(.reportOnly))
        #expect(Self.reason(reportOnly) == reason)
        #expect(reportOnly.allowsConnection && reportOnly.needsReport)
    }

    @Test func noSCTsAtAllIsNamed() {
        #expect(Self.reason(F.evaluate([]))?.hasPrefix("the server sent no SCTs") == true)
    }

    @Test func twoLogsSufficeUpTo180DaysOfLifetimeAndNotBeyond() throws {
        let scts = [F.sct(F.a), F.sct(F.c)]
        #expect(F.evaluate(scts, days: 180).verdict == .compliant)
        let longer = try #require(Self.reason(F.evaluate(scts, days: 181)))
        #expect(longer.contains("SCTs from 3 distinct logs (its 181-day lifetime needs 3); 2 counted"))
        #expect(Self.reason(F.evaluate(scts)) != nil)  // the design's two-logs leaf: ten years
    }

    @Test func SCTsFromOneOperatorOnlyDoNotComply() throws {
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.b)], days: 90)
        let reason = try #require(Self.reason(evaluation))
        #expect(reason == "the server's certificate lacks SCTs from two distinct log operators; one operator (ShopKit Test Operator One) counted")
        #expect(evaluation.assessments.allSatisfy { $0.counted })
        // The same two logs' SCTs twice over make no more logs.
        #expect(Self.reason(F.evaluate([F.sct(F.a), F.sct(F.a), F.sct(F.c)])) != nil)
    }

    @Test func aRetiredLogCountsOnlyForSCTsDatedBeforeItsRetirement() throws {
        let scts = [F.sct(F.a), F.sct(F.c), F.sct(F.d)]
        let after = F.list { if $0 == F.c { $1.state = .retired(F.date("2026-11-01T00:30:00Z")) } }
        let refused = F.evaluate(scts, policy: F.policy(list: after))
        let assessment = try #require(Self.assessment(refused, F.c))
        #expect(!assessment.counted)
        #expect(assessment.reason == "log \"ShopKit Test Log C\" retired on 2026-11-01T00:30:00Z and the SCT is dated 2026-11-01T01:00:00Z, not before the retirement")
        #expect(Self.reason(refused)?.contains("2 counted") == true)
        let before = F.list { if $0 == F.c { $1.state = .retired(F.date("2026-11-02T00:00:00Z")) } }
        #expect(F.evaluate(scts, policy: F.policy(list: before)).verdict == .compliant)
    }

    @Test func embeddedSCTsNeedOneFromALogThatIsCurrentNow() throws {
        let retired = F.list { number, log in if number == F.c || number == F.d { log.state = .retired(F.date("2026-11-20T00:00:00Z")) } }
        let evaluation = F.evaluate([F.sct(F.c), F.sct(F.d)], policy: F.policy(list: retired), days: 90)
        #expect(evaluation.assessments.allSatisfy { $0.counted })
        #expect(Self.reason(evaluation) == "the server's certificate lacks an SCT from a log qualified, usable or read-only now")
        let readOnly = F.list { if $0 == F.d { $1.state = .readOnly(F.date("2026-11-20T00:00:00Z")) } }
        #expect(F.evaluate([F.sct(F.c), F.sct(F.d)], policy: F.policy(list: readOnly), days: 90).verdict == .compliant)
    }

    @Test func pendingAndRejectedLogsNeverCount() throws {
        for state in [CTLogList.State.pending(F.usableSince), .rejected(F.usableSince), nil] {
            let list = F.list { if $0 == F.d { $1.state = state } }
            let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d)], policy: F.policy(list: list))
            #expect(Self.reason(evaluation) != nil)
            let reason = try #require(Self.assessment(evaluation, F.d)?.reason)
            #expect(reason.contains(state.map { $0 == .pending(F.usableSince) ? "is pending" : "was rejected" } ?? "no state"))
        }
    }

    @Test func aForgedSignatureNeverCounts() throws {
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d, status: .invalid)])
        let assessment = try #require(Self.assessment(evaluation, F.d))
        #expect(!assessment.counted)
        #expect(assessment.reason?.contains("signature does not verify under the key of log \"ShopKit Test Log D\"") == true)
        #expect(assessment.reason?.contains("the server's certificate carries a forged SCT") == true)
        let reason = try #require(Self.reason(evaluation))
        #expect(reason.contains("1 SCT(s) did not count (embedded SCT: its signature does not verify"))
        #expect(!evaluation.allowsConnection)
    }

    @Test func anSCTForAnotherCertificateNeverCounts() throws {
        // OpenSSL checks the signature over this certificate's precertificate: an SCT made for another certificate
        // fails it, as a forged one does.
        let evaluation = F.evaluate([F.sct(F.a, status: .invalid), F.sct(F.c, status: .invalid), F.sct(F.d, status: .invalid)])
        #expect(evaluation.assessments.allSatisfy { !$0.counted && $0.reason?.contains("made for another certificate") == true })
        #expect(Self.reason(evaluation)?.contains("0 counted") == true)
    }

    @Test func otherStatusesNeverCount() throws {
        for (status, words) in [
            (SignedCertificateTimestamp.Status.unverified, "could not be checked"), (.unknownLog, "did not hold log"),
            (.unknownVersion, "RFC 6962 defines only v1"),
        ] {
            let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d, status: status)])
            #expect(Self.assessment(evaluation, F.d)?.reason?.contains(words) == true)
            #expect(Self.reason(evaluation) != nil)
        }
    }

    @Test func anUnknownLogNeverCounts() throws {
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(9)])
        let assessment = try #require(Self.assessment(evaluation, 9))
        #expect(assessment.logDescription == nil && assessment.operatorName == nil && !assessment.counted)
        #expect(assessment.reason?.hasPrefix("its log (ID CQkJ") == true)
        #expect(assessment.reason?.hasSuffix("is not in the log list: the list lacks that log, or the SCT names no real log") == true)
        #expect(Self.reason(evaluation) != nil)
    }

    @Test func anSCTDatedInTheFutureNeverCounts() throws {
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d, at: F.now + 60)])
        #expect(Self.assessment(evaluation, F.d)?.reason?.contains("dated 2026-11-28T12:01:00Z, after the time of check (2026-11-28T12:00:00Z)") == true)
        #expect(Self.reason(evaluation) != nil)
        #expect(F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d, at: F.now)]).verdict == .compliant)
    }

    @Test func aLogCountsOnlyForCertificatesExpiringInItsTemporalInterval() throws {
        let outside = F.list { if $0 == F.d { $1.temporalInterval = .init(start: F.date("2030-01-01T00:00:00Z"), end: F.date("2031-01-01T00:00:00Z")) } }
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d)], policy: F.policy(list: outside))
        #expect(Self.assessment(evaluation, F.d)?.reason == "the server's certificate expires at 2036-11-01T00:00:00Z, outside log \"ShopKit Test Log D\"'s temporal interval [2030-01-01T00:00:00Z, 2031-01-01T00:00:00Z)")
        #expect(Self.reason(evaluation) != nil)
        // End exclusive, start inclusive.
        let endsThere = F.list { if $0 == F.d { $1.temporalInterval = .init(start: F.date("2036-01-01T00:00:00Z"), end: F.date("2036-11-01T00:00:00Z")) } }
        #expect(Self.reason(F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d)], policy: F.policy(list: endsThere))) != nil)
        let startsThere = F.list { if $0 == F.d { $1.temporalInterval = .init(start: F.date("2036-11-01T00:00:00Z"), end: F.date("2037-01-01T00:00:00Z")) } }
        #expect(F.evaluate([F.sct(F.a), F.sct(F.c), F.sct(F.d)], policy: F.policy(list: startsThere)).verdict == .compliant)
    }

    /// Log C, handed from operator One to operator Two at `handover`: its SCTs issued before then are One's.
    static func handedOver(at handover: Date, previous: [CTLogList.PreviousOperator]? = nil) -> CertificateTransparencyPolicy {
        F.policy(list: F.list { number, log in
            if number == F.c {
                log.previousOperators = previous ?? [.init(name: "ShopKit Test Operator One", end: handover)]
            }
        })
    }

    /// An SCT counts for the operator that ran its log when the SCT was issued, not for the log's operator now:
    /// a log handed from One to Two makes its older SCTs One's, so One's two logs cannot pass as two operators.
    @Test func anSCTCountsForTheOperatorThatRanItsLogWhenItWasIssued() throws {
        let scts = [F.sct(F.a), F.sct(F.c)]
        let before = Self.handedOver(at: F.sctDate + 1)
        let evaluation = F.evaluate(scts, policy: before, days: 90)
        #expect(Self.reason(evaluation) == "the server's certificate lacks SCTs from two distinct log operators; one operator (ShopKit Test Operator One) counted")
        #expect(Self.assessment(evaluation, F.c)?.operatorName == "ShopKit Test Operator One")
        #expect(Self.assessment(evaluation, F.c)?.counted == true)
        // Delivered SCTs follow the same rule.
        let delivered = F.evaluate([F.sct(F.a, .tlsExtension), F.sct(F.c, .ocsp)], policy: before)
        #expect(Self.reason(delivered)?.contains("of one operator (ShopKit Test Operator One)") == true)

        // Handed over at the SCT's own instant or before it: the SCT is Two's.
        for handover in [F.sctDate, F.sctDate - 86_400] {
            let after = F.evaluate(scts, policy: Self.handedOver(at: handover), days: 90)
            #expect(after.verdict == .compliant, "\(handover)")
            #expect(Self.assessment(after, F.c)?.operatorName == "ShopKit Test Operator Two")
        }
    }

    /// Two SCTs of one log, from each side of its handover, are two operators' SCTs whatever order the server sends
    /// them in (the log still counts once): the verdict never depends on the order.
    @Test func aHandedOverLogsSCTsFromBothSidesCountTwoOperatorsInAnyOrder() {
        let handover = F.sctDate + 3600
        let policy = Self.handedOver(at: handover)
        for source in [SignedCertificateTimestamp.Source.embedded, .tlsExtension] {
            let before = F.sct(F.c, source, at: handover - 60), after = F.sct(F.c, source, at: handover + 60)
            let other = F.sct(F.a, source)
            for order in [[other, before, after], [other, after, before], [after, before, other], [before, other, after]] {
                let evaluation = F.evaluate(order, policy: policy, days: 90, now: handover + 86_400)
                #expect(evaluation.verdict == .compliant, "\(source) \(order.map(\.timestamp)): \(evaluation.verdict)")
                #expect(evaluation.assessments.filter(\.counted).count == 2, "log C counts once")
            }
            // One side alone is One's: one operator.
            #expect(F.evaluate([other, before], policy: policy, days: 90, now: handover + 86_400).verdict != .compliant)
        }
    }

    /// With several previous operators, the one whose time ended first after the SCT was issued had it, in
    /// whatever order the list gives them.
    @Test func ofSeveralPreviousOperatorsTheOneRunningTheLogAtTheSCTCounts() throws {
        let earliest = CTLogList.PreviousOperator(name: "ShopKit Test Operator Three", end: F.sctDate - 86_400)
        let running = CTLogList.PreviousOperator(name: "ShopKit Test Operator One", end: F.sctDate + 86_400)
        let later = CTLogList.PreviousOperator(name: "ShopKit Test Operator Four", end: F.sctDate + 2 * 86_400)
        for order in [[earliest, running, later], [later, running, earliest], [running, later, earliest]] {
            let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c)], policy: Self.handedOver(at: F.sctDate, previous: order), days: 90)
            #expect(Self.assessment(evaluation, F.c)?.operatorName == "ShopKit Test Operator One")
            #expect(Self.reason(evaluation) != nil)
        }
        let log = try #require(Self.handedOver(at: F.sctDate, previous: [later, running, earliest]).logList.log(id: F.id(F.c)))
        #expect(log.operatorName(at: F.sctDate - 2 * 86_400) == "ShopKit Test Operator Three")
        #expect(log.operatorName(at: F.sctDate + 86_400) == "ShopKit Test Operator Four")
        #expect(log.operatorName(at: F.sctDate + 2 * 86_400) == "ShopKit Test Operator Two")
    }

    // MARK: SCTs from the TLS extension and OCSP

    @Test func twoDeliveredSCTsOfTwoOperatorsComplyWhateverTheLifetime() {
        #expect(F.evaluate([F.sct(F.a, .tlsExtension), F.sct(F.c, .tlsExtension)]).verdict == .compliant)
        #expect(F.evaluate([F.sct(F.a, .tlsExtension), F.sct(F.c, .ocsp)]).verdict == .compliant)
        // Either set suffices: too few embedded SCTs, enough delivered ones.
        #expect(F.evaluate([F.sct(F.b), F.sct(F.a, .tlsExtension), F.sct(F.c, .tlsExtension)]).verdict == .compliant)
    }

    @Test func deliveredSCTsNeedTwoOperators() throws {
        let evaluation = F.evaluate([F.sct(F.a, .tlsExtension), F.sct(F.b, .tlsExtension)])
        #expect(Self.reason(evaluation) == "the server's SCTs from the TLS extension or OCSP count from 2 log(s) of one operator (ShopKit Test Operator One); two logs of two distinct operators are needed")
        #expect(Self.reason(F.evaluate([F.sct(F.a, .tlsExtension)])) != nil)
        #expect(Self.reason(F.evaluate([F.sct(F.a, .tlsExtension), F.sct(F.c, .tlsExtension, status: .invalid)])) != nil)
    }

    @Test func aRetiredLogNeverCountsForDeliveredSCTs() throws {
        let retired = F.list { if $0 == F.c { $1.state = .retired(F.date("2026-11-20T00:00:00Z")) } }
        let evaluation = F.evaluate([F.sct(F.a, .tlsExtension), F.sct(F.c, .tlsExtension)], policy: F.policy(list: retired))
        #expect(Self.assessment(evaluation, F.c)?.reason?.contains("SCTs from the TLS extension or OCSP count only from logs qualified, usable or read-only now") == true)
        #expect(Self.reason(evaluation) != nil)
    }

    // MARK: scope, modes and the list

    @Test func aStaleListDowngradesEnforcedToReportOnly() {
        let scts = [F.sct(F.a)]
        let fresh = F.evaluate(scts, now: F.date("2027-01-10T00:00:00Z"))  // 70 days: not older than the limit
        #expect(!fresh.logListStale && fresh.effectiveMode == .enforced && !fresh.allowsConnection)
        let stale = F.evaluate(scts, now: F.date("2027-01-10T00:00:01Z"))
        #expect(stale.logListStale && stale.mode == .enforced && stale.effectiveMode == .reportOnly)
        #expect(stale.allowsConnection && stale.needsReport)
        #expect(stale.logListExpiry == F.date("2027-01-10T00:00:00Z"))
        var shorter = F.policy()
        shorter.maximumLogListAge = 7 * 86_400
        #expect(F.evaluate(scts, policy: shorter).effectiveMode == .reportOnly)
    }

    @Test func aPrivateRootIsExempt() {
        let evaluation = F.evaluate([F.sct(F.a)], rootIsPublic: false)
        guard case .exempt(let reason) = evaluation.verdict else { Issue.record("got \(evaluation.verdict)"); return }
        #expect(reason.contains("not publicly trusted"))
        #expect(evaluation.allowsConnection && !evaluation.needsReport)
        #expect(evaluation.assessments.count == 1)
    }

    @Test func disabledIsNotChecked() {
        let evaluation = F.evaluate([], policy: F.policy(.disabled))
        #expect(evaluation.verdict == .notChecked && evaluation.effectiveMode == .disabled)
        #expect(evaluation.allowsConnection && !evaluation.needsReport)
    }

    @Test func aListWithoutLogsNeverBlocksNorReports() {
        let empty = CTLogList(timestamp: F.listDate, operators: [])
        let evaluation = F.evaluate([], policy: F.policy(list: empty))
        #expect(evaluation.verdict == .noLogList)
        #expect(evaluation.allowsConnection && !evaluation.needsReport)
        // The default policy's bundled list has no logs.
        #expect(F.evaluate([], policy: CertificateTransparencyPolicy(defaultMode: .enforced)).verdict == .noLogList)
        #expect(CertificateTransparencyPolicy().defaultMode == .reportOnly)
        #expect(CertificateTransparencyPolicy().maximumLogListAge == 70 * 86_400)
        #expect(CertificateTransparencyPolicy().publicRoots == .system)
    }

    @Test func theMostSpecificPatternWins() throws {
        let policy = try CertificateTransparencyPolicy(
            defaultMode: .disabled,
            rules: [
                .init(host: "**.example.com", mode: .enforced), .init(host: "*.example.com", mode: .reportOnly),
                .init(host: "api.example.com", mode: .disabled), .init(host: "**.cdn.example.com", mode: .disabled),
                .init(host: "127.0.0.1", mode: .enforced),
            ], logList: F.list())
        #expect(policy.mode(for: "example.com") == .enforced)
        #expect(policy.mode(for: "www.example.com") == .reportOnly)
        #expect(policy.mode(for: "API.Example.COM.") == .disabled)
        #expect(policy.mode(for: "a.b.example.com") == .enforced)
        #expect(policy.mode(for: "x.cdn.example.com") == .disabled)
        #expect(policy.mode(for: "cdn.example.com") == .reportOnly)  // `*.` beats `**.` whatever the base
        #expect(policy.mode(for: "127.0.0.1.") == .enforced)
        #expect(policy.mode(for: "example.org") == .disabled)
        let evaluation = policy.evaluate(host: "www.example.com", chain: F.chain(), scts: [], rootIsPublic: true, now: F.now)
        #expect(evaluation.mode == .reportOnly && evaluation.allowsConnection && evaluation.needsReport)
    }

    @Test func twoRulesForOnePatternAreRefused() throws {
        #expect(throws: CertificateTransparencyPolicyError.duplicateHostPattern(try HostPattern("*.example.com"))) {
            try CertificateTransparencyPolicy(rules: [
                .init(host: "*.example.com", mode: .enforced), .init(host: "*.EXAMPLE.com.", mode: .disabled),
            ])
        }
    }
}

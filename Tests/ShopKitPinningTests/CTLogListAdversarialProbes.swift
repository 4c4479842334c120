import Foundation
import Testing
@testable import ShopKitPinning

/// Security review of the CT log list's operator history (branch ct-attack2): adversarial probes against
/// "an SCT counts for the operator that ran its log when the SCT was issued, so a log handed from one operator to
/// another cannot make one operator's SCTs pass as two operators'" (README, SECURITY.md, CertificateTransparency.md),
/// and the strict reading of `previous_operators`. Pure policy: SCTs built as the OpenSSL layer builds them.
///
/// Run on demand: `SHOPKIT_ADVERSARIAL=1 swift test --filter CTLogListAdversarialProbes`.
@Suite(
    .enabled(if: ProcessInfo.processInfo.environment["SHOPKIT_ADVERSARIAL"] != nil, "set SHOPKIT_ADVERSARIAL=1"),
    .timeLimit(.minutes(3)))
struct PolicyCTLogListAdversarialProbes {
    typealias F = CTFixture

    static func reason(_ evaluation: CTEvaluation) -> String? {
        guard case .notCompliant(let reason) = evaluation.verdict else { return nil }
        return reason
    }

    static func describe(_ evaluation: CTEvaluation) -> String {
        "\(evaluation.verdict) " + evaluation.assessments.map {
            "[\($0.sct.logID[0])@\($0.sct.timestamp.timeIntervalSince1970) op=\($0.operatorName ?? "nil") counted=\($0.counted)]"
        }.joined()
    }

    /// Log C (operator Two now) was run by operator One until `handover`.
    static func handedOver(at handover: Date, name: String = "ShopKit Test Operator One") -> CertificateTransparencyPolicy {
        F.policy(list: F.list { number, log in
            if number == F.c { log.previousOperators = [.init(name: name, end: handover)] }
        })
    }

    // MARK: Counting

    /// Two SCTs of one log, one from each side of its handover, beside one from One's log A: by Chrome's rule (an
    /// SCT is its operator's at its time) the set has SCTs of two operators from two logs. The verdict must not
    /// depend on the order the server sends them in.
    @Test func aHandedOverLogsTwoSidesGiveOneVerdictWhateverTheOrder() {
        let a = F.a
        let handover = F.sctDate + 3600
        let policy = Self.handedOver(at: handover)
        let now = handover + 86_400
        for source in [SignedCertificateTimestamp.Source.embedded, .tlsExtension] {
            let old = F.sct(F.c, source, at: handover - 60)  // One's
            let new = F.sct(F.c, source, at: handover + 60)  // Two's
            let first = F.sct(a, source)
            let orders = [[first, old, new], [first, new, old], [old, first, new], [new, old, first]]
            let evaluations = orders.map { F.evaluate($0, policy: policy, days: 90, now: now) }
            for evaluation in evaluations { print("PROBE order \(source): \(Self.describe(evaluation))") }
            let verdicts = Set(evaluations.map { Self.reason($0) == nil })
            #expect(verdicts.count == 1, "the verdict depends on the SCTs' order (\(source))")
            // The assessment names, for each SCT, the operator at its own time, counted or not.
            for evaluation in evaluations {
                for assessment in evaluation.assessments where assessment.sct.logID == F.id(F.c) {
                    let expected = assessment.sct.timestamp < handover ? "ShopKit Test Operator One" : "ShopKit Test Operator Two"
                    #expect(assessment.operatorName == expected)
                }
            }
        }
    }

    /// `end_time` exactly at the SCT: the new operator's (the doc: "SCTs issued before then are its SCTs"); one
    /// millisecond earlier (RFC 6962 timestamps are milliseconds): the previous operator's.
    @Test func endTimeAtTheSCTsMillisecond() {
        let handover = F.sctDate + 0.001
        let policy = Self.handedOver(at: handover)
        let at = F.evaluate([F.sct(F.a), F.sct(F.c, at: handover)], policy: policy, days: 90)
        let before = F.evaluate([F.sct(F.a), F.sct(F.c, at: F.sctDate)], policy: policy, days: 90)
        print("PROBE at end_time: \(Self.describe(at)); 1 ms before: \(Self.describe(before))")
        #expect(at.verdict == .compliant)
        #expect(Self.reason(before) != nil)
    }

    /// A previous operator with an `end_time` far in the future (a list that never hands the log over): every SCT is
    /// its; One's A and its C never count as two operators, however late the SCTs.
    @Test func aFarFutureEndTimeKeepsTheLogThePreviousOperators() throws {
        let json = CTLogListTests.changed(
            #""previous_operators": []"#,
            #""previous_operators": [{"name": "ShopKit Test Operator Two", "end_time": "9999-12-31T23:59:59Z"}]"#)
        let list = try CTLogList(json: Data(json.utf8))
        let b = try #require(list.log(id: [UInt8](repeating: 2, count: 32)))
        #expect(b.operatorName(at: Date(timeIntervalSince1970: 253_402_300_798)) == "ShopKit Test Operator Two")
        #expect(b.operatorName(at: Date(timeIntervalSince1970: 253_402_300_799)) == "ShopKit Test Operator One")
        let far = Self.handedOver(at: Date(timeIntervalSince1970: 253_402_300_799))
        #expect(Self.reason(F.evaluate([F.sct(F.a), F.sct(F.c)], policy: far, days: 90)) != nil)
    }

    /// A previous operator named as the log's current operator: no second operator appears.
    @Test func aPreviousOperatorNamedAsTheCurrentOne() {
        let policy = F.policy(list: F.list { number, log in
            if number == F.b { log.previousOperators = [.init(name: "ShopKit Test Operator One", end: F.sctDate + 60)] }
        })
        #expect(Self.reason(F.evaluate([F.sct(F.a), F.sct(F.b)], policy: policy, days: 90)) != nil)
    }

    /// Names a reader cannot tell apart: the same name in NFC and NFD (canonically equivalent; Swift's `==` calls
    /// them equal). Two operators so named are one operator: the list is refused ("two operators with one name"),
    /// or their logs count as one operator. And a previous operator written in the other form is that operator.
    @Test func canonicallyEquivalentOperatorNamesAreOneOperator() throws {
        let nfc = "Op\u{E9}rateur Un", nfd = "Ope\u{301}rateur Un"
        #expect(nfc == nfd)
        let two = CTLogListTests.chromeLike
            .replacingOccurrences(of: #""name": "ShopKit Test Operator One""#, with: #""name": "\#(nfc)""#)
            .replacingOccurrences(of: #""name": "ShopKit Test Operator Two", "email": [], "logs": []"#, with: #"""
                "name": "\#(nfd)", "email": [], "logs": [{"description": "D", "log_id": "\#(CTLogListTests.id(4))",
                "key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE", "state": {"usable": {"timestamp": "2025-01-01T00:00:00Z"}}}]
                """#)
        do {
            let list = try CTLogList(json: Data(two.utf8))
            print("PROBE NFC/NFD operators accepted: \(list.operators.map { Array($0.name.unicodeScalars) })")
            let policy = F.policy(list: list)
            let evaluation = policy.evaluate(
                host: "localhost", chain: F.chain(days: 90),
                scts: [F.sct(1, .tlsExtension), F.sct(4, .tlsExtension)], rootIsPublic: true, now: F.now)
            print("PROBE NFC/NFD: \(Self.describe(evaluation))")
            #expect(Self.reason(evaluation) != nil, "one operator's logs, its name in NFC and NFD, passed as two operators")
        } catch {
            print("PROBE NFC/NFD operators refused: \(error)")
        }

        // One's log C, handed from One written in NFD to One written in NFC.
        let policy = F.policy(list: {
            var list = F.list { number, log in
                if number == F.c { log.previousOperators = [.init(name: nfd, end: F.sctDate + 60)] }
                if number == F.a { log.operatorName = nfc }
            }
            list.operators[0].name = nfc
            return list
        }())
        let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c)], policy: policy, days: 90)
        print("PROBE NFC/NFD previous: \(Self.describe(evaluation))")
        #expect(Self.reason(evaluation) != nil)
    }

    /// Informational: names differing by case or by a trailing space (Chrome compares names exactly, so these count
    /// as two operators there too). Printed, not asserted.
    @Test func namesDifferingByCaseOrSpace() {
        for name in ["shopkit test operator one", "ShopKit Test Operator One ", "ShopKit\u{A0}Test Operator One"] {
            let evaluation = F.evaluate([F.sct(F.a), F.sct(F.c)], policy: Self.handedOver(at: F.sctDate + 60, name: name), days: 90)
            print("PROBE previous operator \(name.debugDescription): \(Self.describe(evaluation))")
        }
    }

    /// Previous operators of a tiled (static-CT-API) log are read too: `tiled_logs` are "read as logs of their
    /// operator", and a handover of a tiled log must not be forgotten.
    @Test func aTiledLogsPreviousOperatorsAreRead() throws {
        let json = CTLogListTests.changed(
            #""monitoring_url": "https://tiles.example.com/","#,
            #""monitoring_url": "https://tiles.example.com/", "previous_operators": [{"name": "ShopKit Test Operator Two", "end_time": "2026-06-01T00:00:00Z"}],"#)
        do {
            let list = try CTLogList(json: Data(json.utf8))
            let tiled = try #require(list.log(id: [UInt8](repeating: 3, count: 32)))
            print("PROBE tiled previous operators: \(tiled.previousOperators)")
            #expect(tiled.previousOperators == [.init(name: "ShopKit Test Operator Two", end: CTLogListTests.date("2026-06-01T00:00:00Z"))])
            #expect(tiled.operatorName(at: CTLogListTests.date("2026-01-01T00:00:00Z")) == "ShopKit Test Operator Two")
        } catch {
            Issue.record("a tiled log's previous_operators refused: \(error)")
        }
    }

    // MARK: Reading `previous_operators`

    static let at = "operators[0].logs[1].previous_operators"

    static func previous(_ entries: String) -> Data {
        Data(CTLogListTests.changed(#""previous_operators": []"#, #""previous_operators": "# + entries).utf8)
    }

    /// JSON tricks: each must be refused, never read as some other list.
    @Test(arguments: [
        ("duplicate name", #"[{"name": "ShopKit Test Operator Two", "name": "X", "end_time": "2027-01-01T00:00:00Z"}]"#),
        ("escaped duplicate name", #"[{"name": "ShopKit Test Operator Two", "\u006eame": "X", "end_time": "2027-01-01T00:00:00Z"}]"#),
        ("escaped duplicate end_time", #"[{"name": "X", "end_time": "2027-01-01T00:00:00Z", "end\u005ftime": "2020-01-01T00:00:00Z"}]"#),
        ("null name", #"[{"name": null, "end_time": "2027-01-01T00:00:00Z"}]"#),
        ("numeric name", #"[{"name": 1, "end_time": "2027-01-01T00:00:00Z"}]"#),
        ("null end_time", #"[{"name": "X", "end_time": null}]"#),
        ("numeric end_time", #"[{"name": "X", "end_time": 1798761600}]"#),
        ("nested array", #"[[{"name": "X", "end_time": "2027-01-01T00:00:00Z"}]]"#),
        ("null entry", #"[null]"#),
        ("string entry", #"["X"]"#),
    ])
    func oddPreviousOperatorsAreRefused(label: String, entries: String) {
        do {
            let list = try CTLogList(json: Self.previous(entries))
            let log = list.log(id: [UInt8](repeating: 2, count: 32))
            Issue.record("\(label): accepted as \(String(describing: log?.previousOperators))")
        } catch {
            print("PROBE \(label): refused: \(error)")
            #expect(error.path?.hasPrefix(Self.at) == true || error.path?.hasPrefix("operators[0].logs[1]") == true, "\(label): \(error)")
        }
    }

    /// Odd time forms: refused, or read as the instant they name (nil: there is none, so refused).
    @Test(arguments: [
        ("2027-01-01T00:00:00+01:00", CTLogListTests.date("2026-12-31T23:00:00Z") as Date?),
        ("2027-02-30T00:00:00Z", nil), ("2027-13-01T00:00:00Z", nil), ("2027-01-01T00:00:60Z", nil),
        ("2027-01-01T24:00:00Z", CTLogListTests.date("2027-01-02T00:00:00Z")),
        ("2027-01-01t00:00:00z", CTLogListTests.date("2027-01-01T00:00:00Z")),
        ("2027-01-01 00:00:00Z", CTLogListTests.date("2027-01-01T00:00:00Z")),
        ("+2027-01-01T00:00:00Z", CTLogListTests.date("2027-01-01T00:00:00Z")),
        ("10000-01-01T00:00:00Z", Date(timeIntervalSince1970: 253_402_300_800)),
        ("2027-01-01T00:00:00.Z", nil), ("2027-1-1T0:0:0Z", CTLogListTests.date("2027-01-01T00:00:00Z")),
        ("2027-01-01T00:00:00.0000000000000000000001Z", CTLogListTests.date("2027-01-01T00:00:00Z")),
    ])
    func oddEndTimesAreRefusedOrReadExactly(text: String, expected: Date?) {
        let entries = #"[{"name": "ShopKit Test Operator Two", "end_time": "\#(text)"}]"#
        do {
            let list = try CTLogList(json: Self.previous(entries))
            let end = list.log(id: [UInt8](repeating: 2, count: 32))?.previousOperators.first?.end
            print("PROBE end_time \(text): read as \(String(describing: end?.timeIntervalSince1970))")
            #expect(expected != nil && end == expected, "\(text) read as \(String(describing: end))")
        } catch {
            print("PROBE end_time \(text): refused: \(error)")
        }
    }

    /// Informational: names a publisher would not write (only a space, a NUL): printed.
    @Test(arguments: [" ", "ShopKit Test Operator Two\\u0000", "\\u001b[31mRed", "\\u202eowT rotarepO"])
    func oddNames(name: String) {
        let entries = #"[{"name": "\#(name)", "end_time": "2027-01-01T00:00:00Z"}]"#
        print("PROBE name \(name.debugDescription): \(Result { try CTLogList(json: Self.previous(entries)) }.map { $0.log(id: [UInt8](repeating: 2, count: 32))!.previousOperators })")
    }

    /// Fractional seconds (Chrome's list writes some): read exactly, never truncated to the second, so an SCT in
    /// the last half second before the handover is the previous operator's.
    @Test func aFractionalEndTimeIsReadExactly() throws {
        let list = try CTLogList(json: Self.previous(#"[{"name": "ShopKit Test Operator Two", "end_time": "2027-01-01T00:00:00.75Z"}]"#))
        let b = try #require(list.log(id: [UInt8](repeating: 2, count: 32)))
        let end = CTLogListTests.date("2027-01-01T00:00:00Z")
        print("PROBE fractional: \(b.previousOperators)")
        #expect(b.operatorName(at: end + 0.5) == "ShopKit Test Operator Two")
        #expect(b.operatorName(at: end + 0.75) == "ShopKit Test Operator One")
    }

    /// Two `previous_operators` members on one log (the first empty): refused, not the last read.
    @Test func aRepeatedPreviousOperatorsMemberIsRefused() {
        let json = CTLogListTests.changed(
            #""previous_operators": []"#,
            #""previous_operators": [], "previous\u005foperators": [{"name": "ShopKit Test Operator Two", "end_time": "2027-01-01T00:00:00Z"}]"#)
        #expect(throws: CTLogListError.self) { try CTLogList(json: Data(json.utf8)) }
    }

    /// Many previous operators (20,000: a 1 MB list): read and judged in bounded time.
    @Test func manyPreviousOperatorsInBoundedTime() throws {
        let count = 20_000
        var entries = "["
        for index in 0..<count {
            if index > 0 { entries += "," }
            entries += #"{"name": "Op \#(index)", "end_time": "\#(PinSetDocument.timestamp(Date(timeIntervalSince1970: 1_600_000_000 + Double(index))))"}"#
        }
        entries += "]"
        let data = Self.previous(entries)
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = Result { try CTLogList(json: data) }
        let read = clock.now - start
        print("PROBE \(count) previous operators (\(data.count) bytes): \(read), \(outcome.map { _ in "accepted" })")
        #expect(read < .seconds(5), "a 1 MB list read in \(read)")
        if case .success(let list) = outcome {
            let b = try #require(list.log(id: [UInt8](repeating: 2, count: 32)))
            let judged = clock.now
            for _ in 0..<1000 { _ = b.operatorName(at: Date(timeIntervalSince1970: 1_600_000_000 + 10_000)) }
            print("PROBE 1000 lookups: \(clock.now - judged)")
            #expect(b.operatorName(at: Date(timeIntervalSince1970: 1_600_000_000 + 10_000.5)) == "Op 10001")
        }
    }

    // MARK: Staleness

    /// A list older than 70 days, or dated more than a day ahead of the clock, makes `enforced` act `reportOnly`;
    /// at the boundaries and for a list dated in year 10000 (which the reader takes).
    @Test func staleListsNeverEnforce() throws {
        let listDate = F.listDate
        let scts = [F.sct(F.a)]  // one operator: not compliant
        let cases: [(String, Date, Bool)] = [
            ("69 days 23 h", listDate + 70 * 86_400 - 3600, false),
            ("70 days + 1 s", listDate + 70 * 86_400 + 1, true),
            ("dated 23 h ahead", listDate - 23 * 3600, false),
            ("dated 1 day + 1 s ahead", listDate - 86_400 - 1, true),
        ]
        for (label, now, stale) in cases {
            let evaluation = F.evaluate(scts, days: 90, now: now)
            print("PROBE stale \(label): stale \(evaluation.logListStale), effective \(evaluation.effectiveMode), allows \(evaluation.allowsConnection)")
            #expect(evaluation.logListStale == stale, "\(label)")
            #expect(evaluation.allowsConnection == stale, "\(label)")
        }
        let json = CTLogListTests.chromeLike.replacingOccurrences(of: "\"log_list_timestamp\": \"2026-11-01T00:00:00Z\"", with: "\"log_list_timestamp\": \"10000-01-01T00:00:00Z\"")
        if let far = try? CTLogList(json: Data(json.utf8)) {
            let policy = CertificateTransparencyPolicy(defaultMode: .enforced, logList: far)
            print("PROBE list dated 10000: read as \(far.timestamp.timeIntervalSince1970), stale now: \(policy.logListIsStale(at: F.now))")
            #expect(policy.logListIsStale(at: F.now))
        }
    }
}

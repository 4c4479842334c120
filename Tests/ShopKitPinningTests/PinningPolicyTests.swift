import Foundation
import Testing
@testable import ShopKitPinning

/// Builders for verified chains and pins; a VerifiedChain is made through its package init only.
enum Fixture {
    static func pin(_ byte: UInt8) -> SPKIPin { try! SPKIPin(sha256: [UInt8](repeating: byte, count: 32)) }

    static func certificate(_ byte: UInt8, _ subject: String) -> CertificateInfo {
        CertificateInfo(
            spkiPin: pin(byte), subject: subject, issuer: "CN=Issuer", subjectAlternativeNames: [],
            notBefore: Date(timeIntervalSince1970: 0), notAfter: Date(timeIntervalSince1970: 2_000_000_000),
            keyDescription: "ECDSA P-256", signatureAlgorithm: "ecdsa-with-SHA256")
    }

    /// leaf (1), intermediate (2), root (3)
    static let chain = VerifiedChain(verifiedCertificates: [
        certificate(1, "CN=api.example.com"), certificate(2, "CN=Example Intermediate"), certificate(3, "CN=Example Root"),
    ])

    static let now = Date(timeIntervalSince1970: 1_800_000_000)
}

@Suite(.timeLimit(.minutes(3))) struct PinningPolicyTests {
    let chain = Fixture.chain
    let now = Fixture.now

    func policy(_ sets: PinSet...) -> PinningPolicy { PinningPolicy(pinSets: sets) }

    @Test func unpinnedHost() throws {
        let policy = policy(try PinSet(host: "api.example.com", pins: [Fixture.pin(1).description, Fixture.pin(9).description]))
        #expect(policy.evaluate(host: "other.example.com", chain: chain, now: now) == .notPinned)
    }

    @Test(arguments: [(UInt8(1), 0), (2, 1), (3, 2)])
    func matchesAnyCertificateOfTheVerifiedChain(_ byte: UInt8, _ index: Int) throws {
        let set = try PinSet(hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(byte), Fixture.pin(9)])
        let verdict = policy(set).evaluate(host: "api.example.com", chain: chain, now: now)
        #expect(verdict == .matched(pin: Fixture.pin(byte), certificateIndex: index))
        #expect(verdict.allowsConnection)
    }

    @Test func mismatchClosesAndReports() throws {
        let set = try PinSet(hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(8), Fixture.pin(9)])
        let verdict = policy(set).evaluate(host: "api.example.com", chain: chain, now: now)
        guard case .mismatch(let report) = verdict else { Issue.record("got \(verdict)"); return }
        #expect(!verdict.allowsConnection)
        #expect(report.configuredPins == [Fixture.pin(8), Fixture.pin(9)])
        #expect(report.chainPins.map(\.pin) == [Fixture.pin(1), Fixture.pin(2), Fixture.pin(3)])
        #expect(verdict.report == report)
    }

    @Test func reportOnlyMismatchLetsTheConnectionThrough() throws {
        let set = try PinSet(
            hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(8), Fixture.pin(9)], reportOnly: true)
        let verdict = policy(set).evaluate(host: "api.example.com", chain: chain, now: now)
        guard case .reportOnlyMismatch = verdict else { Issue.record("got \(verdict)"); return }
        #expect(verdict.allowsConnection)
    }

    @Test func expiryIsCheckedAgainstTheInjectedDate() throws {
        let expiration = Date(timeIntervalSince1970: 1_700_000_000)
        let set = try PinSet(
            hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(8), Fixture.pin(9)], expiration: expiration)
        let before = policy(set).evaluate(host: "api.example.com", chain: chain, now: expiration.addingTimeInterval(-1))
        let at = policy(set).evaluate(host: "api.example.com", chain: chain, now: expiration)
        let after = policy(set).evaluate(host: "api.example.com", chain: chain, now: expiration.addingTimeInterval(86_400))
        guard case .mismatch = before else { Issue.record("before expiry: \(before)"); return }
        guard case .expired(let report) = at, case .expired = after else { Issue.record("at/after: \(at) \(after)"); return }
        #expect(at.allowsConnection && after.allowsConnection)
        #expect(report.expiration == expiration)
        #expect(at.description.contains("expired"))
    }

    @Test func expiredSetStillReportsAMatch() throws {
        let set = try PinSet(
            hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(1), Fixture.pin(9)],
            expiration: Date(timeIntervalSince1970: 0))
        #expect(policy(set).evaluate(host: "api.example.com", chain: chain, now: now)
            == .matched(pin: Fixture.pin(1), certificateIndex: 0))
    }

    @Test func mostSpecificPatternWins() throws {
        let any = try PinSet(host: "**.example.com", pins: [Fixture.pin(8).description, Fixture.pin(9).description])
        let one = try PinSet(host: "*.example.com", pins: [Fixture.pin(7).description, Fixture.pin(9).description])
        let exact = try PinSet(host: "api.example.com", pins: [Fixture.pin(1).description, Fixture.pin(9).description])
        let policy = PinningPolicy(pinSets: [any, one, exact])
        #expect(policy.pinSet(for: "api.example.com") == exact)
        #expect(policy.pinSet(for: "www.example.com") == one)
        #expect(policy.pinSet(for: "example.com") == any)
        #expect(policy.pinSet(for: "a.b.example.com") == any)
        #expect(policy.evaluate(host: "API.example.com", chain: chain, now: now).allowsConnection)
        #expect(!policy.evaluate(host: "www.example.com", chain: chain, now: now).allowsConnection)
    }

    @Test func singlePinNeedsExplicitAcceptance() throws {
        let pattern = try HostPattern("api.example.com")
        #expect(throws: PinSetError.singlePin(pattern)) { try PinSet(hostPattern: pattern, pins: [Fixture.pin(1)]) }
        #expect(throws: PinSetError.singlePin(pattern)) {
            try PinSet(hostPattern: pattern, pins: [Fixture.pin(1), Fixture.pin(1)])
        }
        #expect(throws: PinSetError.noPins(pattern)) { try PinSet(hostPattern: pattern, pins: []) }
        let accepted = try PinSet(hostPattern: pattern, pins: [Fixture.pin(1)], acceptingSinglePin: true)
        #expect(accepted.pins == [Fixture.pin(1)])
        #expect(PinSetError.singlePin(pattern).description.contains("acceptingSinglePin"))
    }

    @Test func textInitializerWrapsEachError() {
        #expect(throws: PinningConfigurationError.hostPattern(.misplacedWildcard("a.*.com"))) {
            try PinSet(host: "a.*.com", pins: [])
        }
        #expect(throws: PinningConfigurationError.pin(.badBase64)) {
            try PinSet(host: "api.example.com", pins: ["sha256/!!"])
        }
    }

    @Test func backupWarningWhenEveryPinIsInUse() throws {
        let noBackup = try PinSet(host: "api.example.com", pins: [Fixture.pin(1).description, Fixture.pin(2).description])
        let warning = try #require(noBackup.backupWarning(for: chain))
        #expect(warning.pins == [Fixture.pin(1), Fixture.pin(2)])
        #expect(warning.description.contains("no real backup"))
        let single = try PinSet(host: "api.example.com", pins: [Fixture.pin(3).description], acceptingSinglePin: true)
        #expect(single.backupWarning(for: chain) != nil)
        let withBackup = try PinSet(host: "api.example.com", pins: [Fixture.pin(1).description, Fixture.pin(9).description])
        #expect(withBackup.backupWarning(for: chain) == nil)
        #expect(PinningPolicy(pinSets: [noBackup]).backupWarning(host: "api.example.com", chain: chain, at: now) == warning)
        #expect(PinningPolicy(pinSets: [noBackup]).backupWarning(host: "other.test", chain: chain, at: now) == nil)
    }

    /// A document's policy gives way to the one after it at its expiry, in every query that takes an instant, and
    /// a chain of them ends at the first one in force: the sets of an expired document never apply.
    @Test func anExpiredDocumentsPolicyGivesWayToTheNextAtItsExpiry() throws {
        let baseline = PinningPolicy(pinSets: [try PinSet(host: "api.example.com", pins: [Fixture.pin(1).description, Fixture.pin(9).description])])
        var second = PinningPolicy(
            pinSets: [try PinSet(host: "api.example.com", pins: [Fixture.pin(7).description, Fixture.pin(8).description])],
            version: 2)
        second.expiry = .init(at: now + 200, then: baseline)
        var first = PinningPolicy(
            pinSets: [try PinSet(
                host: "api.example.com", pins: [Fixture.pin(5).description, Fixture.pin(6).description],
                expiration: now + 101, reportOnly: false)],
            unpinnedHosts: .refuse, version: 1)
        first.expiry = .init(at: now + 100, then: second)
        #expect(first.inForce(at: now + 99).version == 1)
        #expect(first.inForce(at: now + 100).version == 2)
        #expect(first.inForce(at: now + 200).version == 0)
        // Past the first expiry the second's pins apply (a mismatch naming version 2), never the first's set
        // (its own expiration one second later would have left a lax host unpinned, a strict one refused).
        guard case .mismatch(let report) = first.evaluate(host: "api.example.com", chain: chain, now: now + 150) else {
            Issue.record("the second policy's mismatch expected")
            return
        }
        #expect(report.policyVersion == 2)
        #expect(first.pinSet(for: "api.example.com", at: now + 150)?.pins == [Fixture.pin(7), Fixture.pin(8)])
        #expect(!first.refusesUnpinned(host: "other.example.com", at: now + 150))
        #expect(first.refusesUnpinned(host: "other.example.com", at: now + 99))
        #expect(first.evaluate(host: "api.example.com", chain: chain, now: now + 250) == .matched(pin: Fixture.pin(1), certificateIndex: 0))
    }
}

@Suite(.timeLimit(.minutes(3))) struct PinFailureMessageTests {
    @Test func listsVerifiedChainPinsWithSubjectsBesideConfiguredPins() throws {
        let set = try PinSet(host: "*.example.com", pins: [Fixture.pin(8).description, Fixture.pin(9).description])
        let verdict = PinningPolicy(pinSets: [set]).evaluate(host: "api.example.com", chain: Fixture.chain, now: Fixture.now)
        let report = try #require(verdict.report)
        let expected = """
            Certificate pinning failure for api.example.com!
              Peer certificate chain (verified):
                \(Fixture.pin(1)): CN=api.example.com
                \(Fixture.pin(2)): CN=Example Intermediate
                \(Fixture.pin(3)): CN=Example Root
              Pinned certificates for api.example.com (pattern *.example.com):
                \(Fixture.pin(8))
                \(Fixture.pin(9))
            """
        #expect(report.description == expected)
    }

    @Test func chainPinsInTheMessageParseBack() throws {
        let report = PinFailureReport(host: "h.example", chain: Fixture.chain, configuredPins: [Fixture.pin(9)], date: Fixture.now)
        let pasted = report.description.split(separator: "\n").compactMap { line -> SPKIPin? in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("sha256/") else { return nil }
            return try? SPKIPin(String(text.prefix(51)))
        }
        #expect(pasted == [Fixture.pin(1), Fixture.pin(2), Fixture.pin(3), Fixture.pin(9)])
    }
}

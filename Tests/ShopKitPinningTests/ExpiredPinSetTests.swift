import Foundation
import Testing
@testable import ShopKitPinning

/// Issue 25, defect 5: an expired pin set hides nothing. When the most specific set covering a host has expired,
/// the next most specific live set applies; only when every covering set has expired is the connection unpinned
/// (`.expired`: not enforced, reported), and a strict policy then refuses it.
@Suite(.timeLimit(.minutes(3))) struct ExpiredPinSetTests {
    let chain = Fixture.chain
    let now = Fixture.now
    let past = Fixture.now.addingTimeInterval(-1)

    func expiredExact() throws -> PinSet {
        try PinSet(hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(8), Fixture.pin(9)], expiration: past)
    }

    @Test func anExpiredSpecificSetFallsThroughToALiveBroaderOne() throws {
        let broad = try PinSet(hostPattern: HostPattern("**.example.com"), pins: [Fixture.pin(7), Fixture.pin(6)])
        let policy = PinningPolicy(pinSets: [try expiredExact(), broad])
        let verdict = policy.evaluate(host: "api.example.com", chain: chain, now: now)
        guard case .mismatch(let report) = verdict else {
            Issue.record("the live **.example.com set must be enforced, got \(verdict)")
            return
        }
        #expect(report.hostPattern == broad.hostPattern)
        #expect(report.configuredPins == [Fixture.pin(7), Fixture.pin(6)])
        #expect(report.enforced)
        #expect(policy.pinSet(for: "api.example.com", at: now) == broad)
    }

    @Test func aLiveBroaderSetCanMatch() throws {
        let broad = try PinSet(hostPattern: HostPattern("*.example.com"), pins: [Fixture.pin(2), Fixture.pin(6)])
        let policy = PinningPolicy(pinSets: [try expiredExact(), broad])
        #expect(policy.evaluate(host: "api.example.com", chain: chain, now: now) == .matched(pin: Fixture.pin(2), certificateIndex: 1))
    }

    @Test func beforeItsExpirationTheSpecificSetStillWins() throws {
        let broad = try PinSet(hostPattern: HostPattern("**.example.com"), pins: [Fixture.pin(1), Fixture.pin(6)])
        let policy = PinningPolicy(pinSets: [try expiredExact(), broad])
        let verdict = policy.evaluate(host: "api.example.com", chain: chain, now: past.addingTimeInterval(-1))
        guard case .mismatch(let report) = verdict else { Issue.record("got \(verdict)"); return }
        #expect(report.hostPattern == (try HostPattern("api.example.com")))
    }

    @Test func whenEveryCoveringSetExpiredTheHostIsUnpinnedAndReported() throws {
        let policy = PinningPolicy(pinSets: [try expiredExact()])
        guard case .expired(let report) = policy.evaluate(host: "api.example.com", chain: chain, now: now) else {
            Issue.record("expected .expired")
            return
        }
        #expect(!report.enforced)
        #expect(!policy.refusesUnpinned(host: "api.example.com", at: now))
    }

    @Test func strictModeRefusesAHostWhoseOnlySetsExpired() throws {
        let strict = PinningPolicy(pinSets: [try expiredExact()], unpinnedHosts: .refuse)
        #expect(strict.refusesUnpinned(host: "api.example.com", at: now))
        #expect(!strict.refusesUnpinned(host: "api.example.com", at: past.addingTimeInterval(-1)))
        #expect(strict.expiredPinSet(for: "api.example.com", at: now) == (try expiredExact()))
        let broad = try PinSet(hostPattern: HostPattern("**.example.com"), pins: [Fixture.pin(7), Fixture.pin(6)])
        let withBroad = PinningPolicy(pinSets: [try expiredExact(), broad], unpinnedHosts: .refuse)
        #expect(!withBroad.refusesUnpinned(host: "api.example.com", at: now))
        #expect(withBroad.expiredPinSet(for: "api.example.com", at: now) == nil)
    }
}

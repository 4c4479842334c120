import Foundation
import Testing
@testable import ShopKitPinning

/// `PinningPolicy.unpinnedHosts`: the default connects hosts no set covers; `.refuse` refuses them.
@Suite(.timeLimit(.minutes(3))) struct StrictHostsTests {
    func sets() throws -> [PinSet] {
        [
            try PinSet(host: "api.example.com", pins: [Fixture.pin(1).description, Fixture.pin(9).description]),
            try PinSet(host: "*.cdn.example.com", pins: [Fixture.pin(2).description, Fixture.pin(9).description]),
        ]
    }

    @Test func defaultAllowsUnpinnedHosts() throws {
        let policy = PinningPolicy(pinSets: try sets())
        #expect(policy.unpinnedHosts == .allow)
        #expect(!policy.refusesUnpinned(host: "typo.exmaple.com", at: Fixture.now))
    }

    @Test func strictPolicyRefusesOnlyHostsNoSetCovers() throws {
        let policy = PinningPolicy(pinSets: try sets(), unpinnedHosts: .refuse)
        #expect(policy.refusesUnpinned(host: "api.exmaple.com", at: Fixture.now))  // the typo the option exists for
        #expect(policy.refusesUnpinned(host: "cdn.example.com", at: Fixture.now))  // *. needs one more label
        #expect(!policy.refusesUnpinned(host: "API.example.com", at: Fixture.now))
        #expect(!policy.refusesUnpinned(host: "img.cdn.example.com", at: Fixture.now))
        #expect(policy.hostPatterns == ["api.example.com", "*.cdn.example.com"])
    }

    @Test func strictPolicyWithoutSetsRefusesEverything() {
        let policy = PinningPolicy(unpinnedHosts: .refuse)
        #expect(policy.refusesUnpinned(host: "localhost", at: Fixture.now))
        #expect(policy.hostPatterns.isEmpty)
    }

    @Test func reportsSayWhetherTheSetWasEnforced() throws {
        let enforced = try PinSet(host: "a.example.com", pins: [Fixture.pin(7).description, Fixture.pin(8).description])
        let reportOnly = try PinSet(
            host: "b.example.com", pins: [Fixture.pin(7).description, Fixture.pin(8).description], reportOnly: true)
        let expired = try PinSet(
            host: "c.example.com", pins: [Fixture.pin(7).description, Fixture.pin(8).description],
            expiration: Fixture.now.addingTimeInterval(-1))
        let policy = PinningPolicy(pinSets: [enforced, reportOnly, expired])
        #expect(policy.evaluate(host: "a.example.com", chain: Fixture.chain, now: Fixture.now).report?.enforced == true)
        #expect(policy.evaluate(host: "b.example.com", chain: Fixture.chain, now: Fixture.now).report?.enforced == false)
        #expect(policy.evaluate(host: "c.example.com", chain: Fixture.chain, now: Fixture.now).report?.enforced == false)
    }
}

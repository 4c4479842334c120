import Foundation
import Testing
@testable import ShopKitPinning

/// The short form: a dictionary literal of host pattern → pins, checked once where it becomes a policy.
@Suite(.timeLimit(.minutes(3))) struct PinnedHostsTests {
    let current = Fixture.pin(1).description
    let backup = Fixture.pin(9).description
    let other = Fixture.pin(2).description

    @Test func theLiteralBuildsTheLongFormsPolicy() throws {
        let short = try PinningPolicy(["api.example.com": [current, backup], "*.cdn.example.com": [other, backup]])
        let long = PinningPolicy(pinSets: [
            try PinSet(host: "api.example.com", pins: [current, backup]),
            try PinSet(host: "*.cdn.example.com", pins: [other, backup]),
        ])
        #expect(short.pinSets == long.pinSets)
        #expect(short.unpinnedHosts == long.unpinnedHosts)
        #expect(short.version == long.version)
        #expect(short.documentsMayAllowUnpinnedHosts == long.documentsMayAllowUnpinnedHosts)
        #expect(short.evaluate(host: "api.example.com", chain: Fixture.chain, now: Fixture.now)
            == .matched(pin: Fixture.pin(1), certificateIndex: 0))
        #expect(try PinningPolicy(["a.example.com": [current, backup]], unpinnedHosts: .refuse).unpinnedHosts == .refuse)
    }

    @Test func anEmptyLiteralPinsNothing() throws {
        #expect(try PinningPolicy([:]).pinSets.isEmpty)
    }

    @Test func aOnePinSetFailsNamingTheHost() throws {
        let hosts: PinnedHosts = ["api.example.com": [current, backup], "shop.example.com": [current]]
        #expect(throws: PinningConfigurationError.pinSet(.singlePin(try HostPattern("shop.example.com")))) {
            try PinningPolicy(hosts)
        }
        #expect(throws: Never.self) { try PinningPolicy(["api.example.com": [current, backup]]) }
        do {
            _ = try hosts.pinSets()
            Issue.record("a one-pin set was accepted")
        } catch {
            #expect(error.host == "shop.example.com")
            #expect(error.error.description.contains("shop.example.com"))
        }
    }

    @Test func aPatternGivenTwiceIsRefused() throws {
        // Spelled differently, the same canonical pattern: a Dictionary literal would not even notice.
        let hosts: PinnedHosts = ["api.example.com": [current, backup], "API.example.com": [other, backup]]
        #expect(throws: PinningConfigurationError.duplicateHostPattern(try HostPattern("api.example.com"))) {
            try PinningPolicy(hosts)
        }
    }

    @Test func badTextIsTheLongFormsError() throws {
        #expect(throws: PinningConfigurationError.pin(.badBase64)) { try PinningPolicy(["a.example.com": ["sha256/!!", backup]]) }
        #expect(throws: PinningConfigurationError.hostPattern(.misplacedWildcard("a.*.com"))) {
            try PinningPolicy(["a.*.com": [current, backup]])
        }
    }
}

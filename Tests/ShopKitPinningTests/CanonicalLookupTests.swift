import Foundation
import Testing
@testable import ShopKitPinning

/// Issue 39, items 4 and 5: the public lookups take any spelling of a server name and use its one canonical form
/// (``ServerName``), as the transport does; names a resolver reads as addresses are refused, as the doc says.
@Suite(.timeLimit(.minutes(3))) struct CanonicalLookupTests {
    static let policy = PinningPolicy(pinSets: [
        try! PinSet(hostPattern: HostPattern("127.0.0.1"), pins: [Fixture.pin(1), Fixture.pin(9)]),
        try! PinSet(hostPattern: HostPattern("::1"), pins: [Fixture.pin(2), Fixture.pin(9)]),
        try! PinSet(hostPattern: HostPattern("api.example.com"), pins: [Fixture.pin(3), Fixture.pin(9)]),
    ])

    @Test(arguments: [
        ("127.0.0.1.", "127.0.0.1"), ("[::1]", "::1"), ("0:0:0:0:0:0:0:1", "::1"), ("API.Example.COM.", "api.example.com"),
    ])
    func pinSetForAnySpellingIsTheCanonicalNamesSet(_ host: String, _ pattern: String) {
        let expected = try! HostPattern(pattern)
        #expect(Self.policy.pinSet(for: host)?.hostPattern == expected, "\(host)")
        #expect(Self.policy.pinSet(for: host, at: Fixture.now)?.hostPattern == expected, "\(host)")
    }

    @Test func evaluateFindsTheSetOfTheCanonicalNameAndReportsThatName() {
        let verdict = Self.policy.evaluate(host: "127.0.0.1.", chain: Fixture.chain, now: Fixture.now)
        #expect(verdict == .matched(pin: Fixture.pin(1), certificateIndex: 0))
        let strict = PinningPolicy(pinSets: Self.policy.pinSets, unpinnedHosts: .refuse)
        #expect(!strict.refusesUnpinned(host: "127.0.0.1.", at: Fixture.now))
        let mismatch = PinningPolicy(pinSets: [try! PinSet(hostPattern: HostPattern("127.0.0.1"), pins: [Fixture.pin(8), Fixture.pin(9)])])
        guard case .mismatch(let report) = mismatch.evaluate(host: "127.0.0.1.", chain: Fixture.chain, now: Fixture.now) else {
            Issue.record("expected a mismatch for 127.0.0.1.")
            return
        }
        #expect(report.host == "127.0.0.1")
    }

    /// glibc's resolver reads these as IPv4 addresses (inet_aton's hex, octal and short forms): they are refused,
    /// not checked as DNS names that would reach 127.0.0.1.
    @Test(arguments: ["0x7f000001", "0X7F000001", "0x7f.1", "1.0x7f", "0x7f.0.0.1", "0x7f000001."])
    func namesAResolverReadsAsAddressesAreRefused(_ host: String) {
        #expect(throws: ServerNameError.self, "\(host)") { try ServerName(host) }
    }

    @Test(arguments: ["0xcafe.example", "x7f000001", "cafe", "deadbeef.test", "0x-a.test"])
    func namesThatOnlyLookLikeHexAreNames(_ host: String) throws {
        #expect(try ServerName(host).isIPAddress == false)
    }
}

import Testing
@testable import ShopKitPinning

@Suite struct SPKIPinSmokeTests {
    @Test func roundTripsCanonicalForm() throws {
        let text = "sha256/" + String(repeating: "A", count: 43) + "="
        #expect(try SPKIPin(text).description == text)
        #expect(throws: PinParseError.wrongPrefix("sha1/abc")) { try SPKIPin("sha1/abc") }
    }
}

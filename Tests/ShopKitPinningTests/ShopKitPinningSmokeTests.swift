import Testing
@testable import ShopKitPinning

@Suite(.timeLimit(.minutes(3))) struct SPKIPinSmokeTests {
    @Test func roundTripsCanonicalForm() throws {
        let text = "sha256/" + String(repeating: "A", count: 43) + "="
        #expect(try SPKIPin(text).description == text)
        #expect(throws: PinParseError.wrongPrefix("sha1/abc")) { try SPKIPin("sha1/abc") }
    }
}

/// The single-pin refusal is caught as the README and the Pinning article say, for each initializer.
@Suite(.timeLimit(.minutes(3))) struct SinglePinDocumentedErrorTests {
    @Test func typedPinsThrowPinSetErrorSinglePin() throws {
        let pin = try SPKIPin("sha256/" + String(repeating: "A", count: 43) + "=")
        do {
            _ = try PinSet(hostPattern: HostPattern("api.example.com"), pins: [pin])
            Issue.record("one pin must be refused")
        } catch PinSetError.singlePin {
        } catch {
            Issue.record("documented as PinSetError.singlePin, got \(error)")
        }
    }

    @Test func textPinsThrowPinningConfigurationErrorWrappingSinglePin() {
        do {
            _ = try PinSet(host: "api.example.com", pins: ["sha256/" + String(repeating: "A", count: 43) + "="])
            Issue.record("one pin must be refused")
        } catch PinningConfigurationError.pinSet(.singlePin) {
        } catch {
            Issue.record("documented as PinningConfigurationError.pinSet(.singlePin), got \(error)")
        }
    }
}

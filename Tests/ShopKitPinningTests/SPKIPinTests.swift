import Foundation
import Testing
@testable import ShopKitPinning

@Suite(.timeLimit(.minutes(3))) struct SPKIPinTests {
    static let digest = [UInt8](0..<32)
    static let base64 = Data(digest).base64EncodedString()

    @Test func parsesOkHttpForm() throws {
        let pin = try SPKIPin("sha256/" + Self.base64)
        #expect(pin.sha256 == Self.digest)
        #expect(pin.description == "sha256/" + Self.base64)
    }

    @Test func parsesCurlFormAndPrintsOkHttpForm() throws {
        let pin = try SPKIPin("sha256//" + Self.base64)
        #expect(pin == (try SPKIPin(sha256: Self.digest)))
        #expect(pin.description == "sha256/" + Self.base64)
    }

    @Test(arguments: ["sha1/" + SPKIPinTests.base64, "SHA256/" + SPKIPinTests.base64, SPKIPinTests.base64, "", "sha384/" + SPKIPinTests.base64])
    func refusesWrongPrefix(_ text: String) {
        #expect {
            try SPKIPin(text)
        } throws: { error in
            guard case .wrongPrefix = error as? PinParseError else { return false }
            return true
        }
    }

    @Test(arguments: ["sha256/not*base64!", "sha256/AAA", "sha256/" + String(SPKIPinTests.base64.dropLast())])
    func refusesBadBase64(_ text: String) {
        #expect(throws: PinParseError.badBase64) { try SPKIPin(text) }
    }

    @Test func refusesSHA1SizedDigestWithAHint() {
        let sha1 = Data(repeating: 7, count: 20).base64EncodedString()
        #expect(throws: PinParseError.wrongLength(20)) { try SPKIPin("sha256/" + sha1) }
        #expect(PinParseError.wrongLength(20).description.contains("SHA-1"))
    }

    @Test(arguments: [0, 16, 31, 33, 48, 64])
    func refusesWrongLengths(_ count: Int) {
        let text = "sha256/" + Data(repeating: 1, count: count).base64EncodedString()
        #expect(throws: PinParseError.wrongLength(count)) { try SPKIPin(text) }
        #expect(throws: PinParseError.wrongLength(count)) { try SPKIPin(sha256: [UInt8](repeating: 1, count: count)) }
    }

    /// A SHA-256 of a whole certificate is also 32 bytes: parsing cannot tell it from an SPKI pin, so it
    /// parses, and will simply never match (the check compares with SPKI digests only).
    @Test func certificateHashIsIndistinguishableByLength() throws {
        let certificateHash = Data(repeating: 0xAB, count: 32).base64EncodedString()
        #expect(try SPKIPin("sha256/" + certificateHash).sha256.count == 32)
    }

    @Test func errorMessagesSayWhatToDo() {
        #expect(PinParseError.wrongPrefix("sha1/x").description.contains("sha256/"))
        #expect(PinParseError.badBase64.description.contains("base64"))
        #expect(PinParseError.wrongLength(31).description.contains("32 bytes"))
    }

    @Test func codableUsesCanonicalString() throws {
        let pin = try SPKIPin(sha256: Self.digest)
        let json = try JSONEncoder().encode([pin])
        #expect(String(decoding: json, as: UTF8.self) == "[\"sha256\\/\(Self.base64.replacingOccurrences(of: "/", with: "\\/"))\"]")
        #expect(try JSONDecoder().decode([SPKIPin].self, from: json) == [pin])
    }
}

/// A digest whose base64 starts with `/`: OkHttp's form then starts with `sha256//`, like curl's form.
@Suite(.timeLimit(.minutes(3))) struct SPKIPinSlashTests {
    @Test func aDigestWhoseBase64StartsWithASlashParsesInBothForms() throws {
        // 0xFC… encodes to base64 starting with "/".
        let digest = [UInt8](repeating: 0xFC, count: 32)
        let pin = try SPKIPin(sha256: digest)
        #expect(pin.description.hasPrefix("sha256//"))
        #expect(try SPKIPin(pin.description) == pin)
        #expect(try SPKIPin("sha256/" + pin.description.dropFirst("sha256".count)) == pin)  // curl's form
    }
}

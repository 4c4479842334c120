import Foundation
import Testing
@testable import ShopKitPinning

/// Issue 38, later review rounds (F8, F10, F12): a document reads one way only, and its refusals speak a user's
/// words.
extension PinSetDocumentTests {
    /// The document's JSON as text, to edit by hand.
    static var text: String { String(decoding: json([("api.example.com", false, nil)]), as: UTF8.self) }

    static func refusal(_ text: String) -> String? {
        do {
            _ = try PinSetDocument(json: Array(text.utf8))
            return nil
        } catch {
            return "\(error)"
        }
    }

    // MARK: F8

    /// Valid JSON nested deeper than a document ever is was reported as "not JSON" (Foundation's decoder gives up).
    @Test func aDocumentNestedTooDeeplyIsRefusedAsSuchWithTheLimit() throws {
        let depth = 10_000
        let deep = Self.text.replacingOccurrences(
            of: "\"strictHosts\":true",
            with: "\"strictHosts\":true,\"x\":" + String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        #expect(throws: PinSetDocumentError.nestedTooDeeply(maximumDepth: PinSetDocument.maximumDepth)) {
            try PinSetDocument(json: Array(deep.utf8))
        }
        #expect(PinSetDocumentError.nestedTooDeeply(maximumDepth: 16).description.contains("more than 16 levels"))
        // A document's own depth (object, pinSets, set, pins) is far from the limit.
        _ = try PinSetDocument(json: Array(Self.text.utf8))
    }

    /// Swift's type names (`Dictionary<String, Any>`, `Array<Any>`) reached the user; a field of the wrong kind is
    /// named in JSON's words.
    @Test func aFieldOfTheWrongKindIsNamedInJSONWords() throws {
        let pins = "[\"\(Fixture.pin(1))\",\"\(Fixture.pin(2))\"]"
        let cases: [(String, String)] = [
            ("[]", "the document must be a JSON object"),
            (Self.text.replacingOccurrences(of: "\"pinSets\":[", with: "\"pinSets\":[\"api.example.com\","), "pinSets[0] must be a JSON object"),
            (Self.text.replacingOccurrences(of: "\"pinSets\":[", with: "\"pinSets\":{\"a\":[").replacingOccurrences(of: "}]", with: "}]}"),
             "pinSets must be a JSON array"),
            (#"{"version":3,"issuedAt":"2027-01-01T00:00:00Z","expiresAt":"2027-01-02T00:00:00Z","pinSets":[{"host":"a.example.com","pins":"x"}]}"#,
             "pinSets[0].pins must be a JSON array"),
            (#"{"version":3,"issuedAt":"2027-01-01T00:00:00Z","expiresAt":"2027-01-02T00:00:00Z","pinSets":[{"host":"a.example.com","pins":\#(pins)}],"unpinnedBaselineHosts":{}}"#,
             "unpinnedBaselineHosts must be a JSON array"),
            (#"{"version":"3","issuedAt":"2027-01-01T00:00:00Z","expiresAt":"2027-01-02T00:00:00Z","pinSets":[]}"#,
             "version must be an integer"),
            (#"{"version":3,"issuedAt":1,"expiresAt":"2027-01-02T00:00:00Z","pinSets":[]}"#, "issuedAt must be a string"),
        ]
        for (text, expected) in cases {
            let message = try #require(Self.refusal(text), "\(text) was accepted")
            #expect(message.contains(expected), "\(message)")
            for swiftWord in ["Dictionary", "Array<", "Optional", "String>", "Any>", "Swift."] {
                #expect(!message.contains(swiftWord), "\(message)")
            }
        }
    }

    // MARK: F10

    /// `null` for an optional member was read as the member left out: one more spelling of one document.
    @Test func nullForAnOptionalMemberIsRefused() throws {
        let set = "{\"host\":\"api.example.com\",\"pins\":[\"\(Fixture.pin(1))\",\"\(Fixture.pin(2))\"]"
        let cases: [(String, String)] = [
            (Self.text.replacingOccurrences(of: "\"strictHosts\":true", with: "\"strictHosts\":null"), "strictHosts"),
            (Self.text.replacingOccurrences(of: "\"strictHosts\":true", with: "\"strictHosts\":true,\"audience\":null"), "audience"),
            (Self.text.replacingOccurrences(of: "\"strictHosts\":true", with: "\"strictHosts\":true,\"unpinnedBaselineHosts\":null"),
             "unpinnedBaselineHosts"),
            (Self.text.replacingOccurrences(of: "\"pinSets\":[", with: "\"pinSets\":[\(set),\"reportOnly\":null},"), "pinSets[0].reportOnly"),
            (Self.text.replacingOccurrences(of: "\"pinSets\":[", with: "\"pinSets\":[\(set),\"expiration\":null},"), "pinSets[0].expiration"),
        ]
        for (text, field) in cases {
            let message = try #require(Self.refusal(text), "\(text) was accepted")
            #expect(message.contains("\(field) is null"), "\(message)")
            #expect(message.contains("leave the member out"), "\(message)")
        }
    }

    /// A pin with stray low bits in its last base64 character decodes to the same digest as the canonical one and
    /// was accepted, then printed canonicalised: the signed text and what a reviewer greps for differed.
    @Test func aPinIsAcceptedOnlyInItsCanonicalForm() throws {
        let canonical = Fixture.pin(1).description  // "sha256/AQEB…AQE=": "E" carries 2 unused low bits
        let stray = String(canonical.dropLast(2)) + "F="
        #expect(stray != canonical && Data(base64Encoded: String(stray.dropFirst(7))) == Data(Fixture.pin(1).sha256))
        let second = Fixture.pin(2).description
        let cases: [(String, Int, String)] = [
            (stray, 0, "not canonical"),
            (" " + canonical, 0, "space"),
            (canonical + "\t", 0, "space"),
            ("sha256/" + canonical.dropFirst("sha256/".count), 0, ""),  // the canonical text itself: accepted
            ("sha256//" + canonical.dropFirst("sha256/".count), 1, "sha256/BASE64"),
        ]
        for (pin, index, expected) in cases {
            let pins = index == 0 ? [pin, second] : [second, pin]
            let text = Self.text.replacingOccurrences(
                of: "\"pins\":[\"sha256\\/\(Fixture.pin(1).description.dropFirst(7).replacingOccurrences(of: "/", with: "\\/"))\",\"sha256\\/\(second.dropFirst(7).replacingOccurrences(of: "/", with: "\\/"))\"]",
                with: "\"pins\":[\(pins.map { String(reflecting: $0) }.joined(separator: ","))]")
            #expect(text != Self.text, "the fixture changed")
            guard !expected.isEmpty else {
                _ = try PinSetDocument(json: Array(text.utf8))
                continue
            }
            #expect(throws: PinSetDocumentError.self) { try PinSetDocument(json: Array(text.utf8)) }
            do { _ = try PinSetDocument(json: Array(text.utf8)) } catch {
                guard case .badPin(let host, let at, _) = error else {
                    Issue.record("\(pin): \(error)")
                    continue
                }
                #expect(host == "api.example.com" && at == index, "\(error)")
                #expect(error.description.contains("api.example.com") && error.description.contains("pins[\(index)]"))
                #expect(error.description.contains(expected), "\(error)")
            }
        }
    }

    /// The one pin parser refuses what documents refuse, so a pins file and `--pin` read a pin as a document does.
    @Test func thePinParserRefusesStrayBitsAndSurroundingSpace() throws {
        let canonical = Fixture.pin(1).description
        #expect(throws: PinParseError.notCanonical) { try SPKIPin(String(canonical.dropLast(2)) + "F=") }
        #expect(throws: PinParseError.surroundingSpace) { try SPKIPin(" " + canonical) }
        #expect(throws: PinParseError.surroundingSpace) { try SPKIPin(canonical + "\n") }
        #expect(throws: PinsFileError.line(2, .badPin(.notCanonical))) {
            try PinsFile.parse("# pins\n" + String(canonical.dropLast(2)) + "F=\n")
        }
        #expect(try SPKIPin(canonical) == Fixture.pin(1))
    }

    // MARK: F12

    /// A set that expires the instant the document does was accepted for a baseline host: at that instant the set
    /// is expired (one rule: a time is past from the instant it names) while the document stays in force until its
    /// expiry timer puts the baseline back, so the host was unpinned in between.
    @Test func aBaselineHostsSetMustOutliveTheDocument() throws {
        let equal = Self.json([("api.example.com", false, Self.expiresAt)])
        #expect { try Self.check(equal, Self.baseline(["api.example.com"])) } throws: {
            Self.weakens("api.example.com", "expires at \(PinSetDocument.timestamp(Self.expiresAt)), when the document does")($0)
        }
        try Self.check(Self.json([("api.example.com", false, Self.expiresAt + 1)]), Self.baseline(["api.example.com"]))
        // The one rule, on both: at `expiresAt` the document is expired, and so is a set with that expiration.
        let document = try PinSetDocument(json: Self.json([("api.example.com", false, nil)]))
        #expect(document.isExpired(at: Self.expiresAt) && !document.isExpired(at: Self.expiresAt - 1))
        #expect(throws: PinSetDocumentError.expired(expiresAt: Self.expiresAt)) {
            try document.check(baseline: PinningPolicy(), currentVersion: 0, now: Self.expiresAt)
        }
    }
}

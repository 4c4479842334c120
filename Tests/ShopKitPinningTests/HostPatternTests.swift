import Testing
@testable import ShopKitPinning

@Suite(.timeLimit(.minutes(3))) struct HostPatternTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let pattern: String
        let host: String
        let matches: Bool
        var testDescription: String { "\(pattern) vs \(host): \(matches)" }
    }

    static let table: [Case] = [
        Case(pattern: "api.example.com", host: "api.example.com", matches: true),
        Case(pattern: "api.example.com", host: "API.Example.COM", matches: true),
        Case(pattern: "API.example.com", host: "api.example.com", matches: true),
        Case(pattern: "api.example.com.", host: "api.example.com", matches: true),
        Case(pattern: "api.example.com", host: "api.example.com.", matches: true),
        Case(pattern: "api.example.com", host: "www.api.example.com", matches: false),
        Case(pattern: "api.example.com", host: "example.com", matches: false),
        Case(pattern: "*.example.com", host: "api.example.com", matches: true),
        Case(pattern: "*.example.com", host: "example.com", matches: false),
        Case(pattern: "*.example.com", host: "a.b.example.com", matches: false),
        Case(pattern: "*.example.com", host: "apiexample.com", matches: false),
        Case(pattern: "**.example.com", host: "example.com", matches: true),
        Case(pattern: "**.example.com", host: "api.example.com", matches: true),
        Case(pattern: "**.example.com", host: "a.b.c.example.com", matches: true),
        Case(pattern: "**.example.com", host: "badexample.com", matches: false),
        Case(pattern: "**.example.com", host: "example.com.evil.net", matches: false),
        Case(pattern: "xn--bcher-kva.example", host: "XN--BCHER-KVA.example", matches: true),
        Case(pattern: "127.0.0.1", host: "127.0.0.1", matches: true),
        Case(pattern: "127.0.0.1", host: "127.0.0.2", matches: false),
        Case(pattern: "::1", host: "0:0:0:0:0:0:0:1", matches: true),
        Case(pattern: "[::1]", host: "::1", matches: true),
        Case(pattern: "2001:db8::1", host: "2001:DB8:0::1", matches: true),
        Case(pattern: "::ffff:10.0.0.1", host: "::ffff:a00:1", matches: true),
        Case(pattern: "::1", host: "localhost", matches: false),
    ]

    @Test(arguments: table)
    func matching(_ row: Case) throws {
        #expect(try HostPattern(row.pattern).matches(row.host) == row.matches)
    }

    @Test(arguments: [
        ("", HostPatternError.empty),
        ("bücher.example", .notPunycode("bücher.example")),
        // Non-ASCII that lowercases to ASCII (KELVIN SIGN → k, U+0130 → i + a combining dot) is still non-ASCII.
        ("api.example.co\u{212A}", .notPunycode("api.example.co\u{212A}")),
        ("API.EXAMPLE.COM\u{212A}", .notPunycode("API.EXAMPLE.COM\u{212A}")),
        ("\u{0130}tems.example.com", .notPunycode("\u{0130}tems.example.com")),
        ("api..example.com", .emptyLabel("api..example.com")),
        (".example.com", .emptyLabel(".example.com")),
        ("example.com..", .emptyLabel("example.com..")),
        ("api.*.example.com", .misplacedWildcard("api.*.example.com")),
        ("a*.example.com", .misplacedWildcard("a*.example.com")),
        ("example.*", .misplacedWildcard("example.*")),
        ("***.example.com", .misplacedWildcard("***.example.com")),
        ("*.com", .wildcardTooBroad("*.com")),
        ("**.com", .wildcardTooBroad("**.com")),
        ("*", .wildcardTooBroad("*")),
        ("*.10.0.0.1", .wildcardOnIPAddress("*.10.0.0.1")),
        ("api example.com", .invalidCharacter("api example.com")),
        ("-api.example.com", .invalidCharacter("-api.example.com")),
        ("256.0.0.1", .invalidIPAddress("256.0.0.1")),
        ("1.2.3", .invalidIPAddress("1.2.3")),
        (String(repeating: "a", count: 64) + ".com", .labelTooLong(String(repeating: "a", count: 64) + ".com")),
    ])
    func refuses(_ text: String, _ expected: HostPatternError) {
        #expect(throws: expected) { try HostPattern(text) }
    }

    @Test func normalisesItsCanonicalForm() throws {
        #expect(try HostPattern("API.Example.com.").description == "api.example.com")
        #expect(try HostPattern("**.Example.com").description == "**.example.com")
        #expect(try HostPattern("[::1]").description == "0:0:0:0:0:0:0:1")
        #expect(try HostPattern("[::1]").kind == .ipAddress)
        #expect(try HostPattern("a.example.com") == HostPattern("A.EXAMPLE.COM."))
    }

    @Test func specificityOrdersExactOverOneLabelOverAnyLabels() throws {
        let exact = try HostPattern("api.example.com").specificity
        let one = try HostPattern("*.example.com").specificity
        let any = try HostPattern("**.example.com").specificity
        let deeperAny = try HostPattern("**.api.example.com").specificity
        #expect(exact > one)
        #expect(one > any)
        #expect(deeperAny > any)
    }

    @Test func nonASCIIErrorTellsToUsePunycode() {
        #expect(HostPatternError.notPunycode("bücher.example").description.contains("punycode"))
    }

    /// A Kelvin sign prints like `K`: the message names the pattern escaped, so the reader sees what it holds.
    @Test func nonASCIIErrorNamesThePatternEscaped() {
        let message = HostPatternError.notPunycode("api.example.co\u{212A}").description
        #expect(message.contains(#""api.example.co\u{212A}""#), "\(message)")
        #expect(!message.unicodeScalars.contains("\u{212A}"), "\(message)")
    }
}

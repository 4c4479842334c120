import ShopKitPinning
import Testing

/// One canonical server name, so that what OpenSSL checks is what the pins are looked up under.
@Suite(.timeLimit(.minutes(3))) struct ServerNameTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1", true),
        ("127.0.0.1.", "127.0.0.1", true),  // OpenSSL checks the address; the pins must be looked up by it too
        ("0.0.0.0", "0.0.0.0", true),
        ("10.20.255.199", "10.20.255.199", true),  // one-, two- and three-digit octets written back as given
        ("[::1]", "::1", true),
        ("::1", "::1", true),
        ("0:0:0:0:0:0:0:1", "::1", true),
        ("[2001:DB8:0:0:0:0:0:1]", "2001:db8::1", true),
        ("API.Example.COM", "api.example.com", false),
        ("api.example.com.", "api.example.com", false),
        ("localhost", "localhost", false),
        ("xn--bcher-kva.example", "xn--bcher-kva.example", false),
        ("a-b.c-d.test", "a-b.c-d.test", false),
        ("1password.com", "1password.com", false),
    ])
    func canonicalForms(_ host: String, _ canonical: String, _ isIP: Bool) throws {
        let name = try ServerName(host)
        #expect(name.text == canonical)
        #expect(name.isIPAddress == isIP)
        #expect(try ServerName(name.text) == name, "the canonical form parses to itself")
    }

    @Test(arguments: [
        "", ".", "[]", "..", "a..b", "\0", "a\0b.test", "localhost\0",
        "localhost\r\nx", "localhost\nX-Injected: 1", "a b", "host_name.test", "bücher.de",
        "-a.test", "a-.test", "a.-b.test", "127.1", "0x7f.1", "2130706433", "127.0.0.1.1.", "[127.0.0.1]",
        "fe80::1%eth0", "[fe80::1%25eth0]", "01.2.3.4",
        String(repeating: "a", count: 64) + ".test",
        Array(repeating: "abcdefghi", count: 26).joined(separator: "."),
    ])
    func refused(_ host: String) {
        #expect(throws: ServerNameError.self, "\(host.debugDescription)") { try ServerName(host) }
    }

    @Test func theErrorNamesTheHostWithControlBytesEscaped() {
        do {
            _ = try ServerName("localhost\r\nx")
            Issue.record("must be refused")
        } catch {
            #expect(error.description.contains(#""localhost\r\nx""#))
            #expect(!error.description.contains("\r"))
        }
    }
}

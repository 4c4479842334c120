import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing

/// A client connection always has the caller's whole name to check: OpenSSL's `SSL_set1_host` with an empty
/// name clears the list and checks none, and a NUL byte would cut the name short on its way to C. The name is a
/// ``ServerName``, so OpenSSL gets the canonical text the pins are looked up under.
@Suite(.timeLimit(.minutes(3))) struct ClientHostNameTests {
    static let context = try! OpenSSLContext.client(
        trust: .pem(TestCertificates.certificate("root"), addingToSystem: false), minimumVersion: .tls12)

    @Test(arguments: ["", ".", "[]", "a\0b.test", "localhost\0", "\0"])
    func emptyOrNULNamesAreRefused(_ host: String) {
        #expect {
            _ = try OpenSSLConnection.client(context: Self.context, host: host)
        } throws: { error in
            guard let error = error as? OpenSSLError else { return false }
            // The refusal says what is wrong with the name (ServerName's reason: empty, or a byte no name has).
            let why: String
            do {
                _ = try ServerName(host)
                return false
            } catch {
                why = "\(error)"
            }
            return error.operation == "client host name" && error.description.contains(why)
                && (why.contains("is empty") || why.contains("no host name has") || why.contains("not an IPv6 address"))
        }
    }

    @Test func aNameCutShortAtANULByteIsNotCheckedInstead() throws {
        // C would see "api.other.test" and accept that certificate for a name the caller never asked for.
        #expect(throws: OpenSSLError.self) {
            try BackToBack(
                serverChain: ["leaf-other-host", "intermediate-2", "intermediate-1"], serverKey: "leaf-other-host",
                host: "api.other.test\0.localhost")
        }
    }

    @Test(arguments: ["localhost", "localhost.", "127.0.0.1", "[::1]", "api.example.test"])
    func ordinaryNamesAreAccepted(_ host: String) throws {
        _ = try OpenSSLConnection.client(context: Self.context, host: host)
    }
}

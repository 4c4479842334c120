@testable import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing

/// subjectAltName entries of every kind are read by their kind: only DNS, IP, email and URI values are strings.
@Suite(.timeLimit(.minutes(3))) struct SubjectAltNameTests {
    /// What `leaf-san-kinds` and `self-signed-san-kinds` carry, as ShopKit shows it.
    static let expected = [
        "localhost", "127.0.0.1", "email:ops@example.test", "URI:https://shop.example.test/",
        "othername:1.3.6.1.4.1.311.20.2.3", "DirName:CN=ShopKit Directory Name,O=ShopKit Test", "RID:1.2.3.4",
    ]

    @Test(arguments: ["leaf-san-kinds", "self-signed-san-kinds"])
    func everyKindIsReadSafely(name: String) throws {
        let certificate = try #require(try OpenSSLCertificate.parsePEM(TestCertificates.certificate(name)).first)
        // A fresh cache, so the names are computed here and not taken from another test's run.
        let info = try CertificateInfoCache(capacity: 4).info(for: certificate)
        #expect(info.subjectAlternativeNames == Self.expected)
    }

    @Test func verifiedChainOfATrustedServerShowsEveryKind() throws {
        let pair = try BackToBack(
            serverChain: ["leaf-san-kinds", "intermediate-2", "intermediate-1"], serverKey: "leaf-san-kinds")
        #expect(pair.handshake() == .complete)
        #expect(try pair.client.verifiedChain()?.leaf?.subjectAlternativeNames == Self.expected)
        #expect(try pair.client.presentedChain()?.certificates.first?.subjectAlternativeNames == Self.expected)
    }

    @Test func presentedChainOfARefusedServerShowsEveryKind() throws {
        let pair = try BackToBack(serverChain: ["self-signed-san-kinds"], serverKey: "self-signed-san-kinds")
        guard case .failed = pair.handshake() else {
            Issue.record("a self-signed server must be refused")
            return
        }
        #expect(try pair.client.verifiedChain() == nil)
        #expect(try pair.client.presentedChain()?.certificates.first?.subjectAlternativeNames == Self.expected)
    }

    @Test func controlBytesAreEscapedForDisplay() {
        #expect(CertificateInfoCache.printable(Array("a\u{1b}[31mb\0".utf8)) == "a\\x1b[31mb\\x00")
    }
}

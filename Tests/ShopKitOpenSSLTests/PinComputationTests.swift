@testable import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(3))) struct PinComputationTests {
    /// ShopKit's SPKI pins equal `openssl pkey -pubout -outform DER | openssl dgst -sha256` (pins.txt).
    @Test(arguments: [
        ("leaf-localhost-rsa", "RSA 2048"), ("leaf-localhost-ecdsa", "ECDSA P-256"), ("leaf-p384", "ECDSA P-384"),
        ("leaf-ed25519", "Ed25519"), ("leaf-rsa1024", "RSA 1024"), ("root", "RSA 2048"),
    ])
    func certificatePinMatchesOpenSSLCLI(name: String, key: String) throws {
        let certificate = try #require(try OpenSSLCertificate.parsePEM(TestCertificates.certificate(name)).first)
        let info = try certificate.info
        #expect(info.spkiPin == TestCertificates.pin(name))
        #expect(info.keyDescription == key)
    }

    @Test func pemHelperReadsCertificatesAndPublicKeys() throws {
        let chain = try PEMPins.pins(pem: TestCertificates.standardChain())
        #expect(chain.map(\.pin) == ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"].map(TestCertificates.pin))
        let publicKeyPEM = """
            -----BEGIN PUBLIC KEY-----
            MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=
            -----END PUBLIC KEY-----
            """
        let keys = try PEMPins.pins(pem: publicKeyPEM)
        #expect(keys.count == 1)
        #expect(keys.first?.keyDescription == "Ed25519")
    }

    @Test func garbageIsATypedError() {
        #expect(throws: OpenSSLError.self) { try PEMPins.pins(pem: "not a pem") }
        #expect(throws: OpenSSLError.self) {
            try OpenSSLCertificate.parsePEM("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        }
    }

    @Test func datesAndSignatureAlgorithmsAreRead() throws {
        let expired = try #require(try OpenSSLCertificate.parsePEM(TestCertificates.certificate("leaf-expired")).first).info
        #expect(expired.notAfter.timeIntervalSince1970 == 1_609_459_200)  // 2021-01-01T00:00:00Z
        let sha1 = try #require(try OpenSSLCertificate.parsePEM(TestCertificates.certificate("leaf-sha1")).first).info
        #expect(sha1.signatureAlgorithm == "ecdsa-with-SHA1")
    }
}

@Suite(.timeLimit(.minutes(3))) struct CertificateInfoCacheTests {
    @Test func infoIsComputedOncePerCertificate() throws {
        let cache = CertificateInfoCache(capacity: 2)
        let pem = TestCertificates.certificate("leaf-p384")
        let first = try #require(try OpenSSLCertificate.parsePEM(pem).first)
        let second = try #require(try OpenSSLCertificate.parsePEM(pem).first)  // a different X509 object
        let a = try cache.info(for: first)
        let b = try cache.info(for: second)
        #expect(a == b)
        #expect(cache.count == 1)
        for name in ["root", "intermediate-1", "intermediate-2"] {
            _ = try cache.info(for: try #require(try OpenSSLCertificate.parsePEM(TestCertificates.certificate(name)).first))
        }
        #expect(cache.count <= 2)  // bounded
    }
}

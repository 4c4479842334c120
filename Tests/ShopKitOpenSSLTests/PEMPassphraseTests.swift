@testable import ShopKitOpenSSL
import TestSupport
import Testing

/// Encrypted PEM is refused with a message that says to decrypt it, and OpenSSL is never left to ask for a
/// passphrase (its default prompts on the controlling terminal and blocks: found by the `pem` fuzz target).
/// The no-prompt half is shown on a real terminal by ShopKitFuzzTests' `encryptedPEMNeverPromptsOnATerminal`.
@Suite(.timeLimit(.minutes(3))) struct PEMPassphraseTests {
    /// `block` (a PEM text) with legacy encryption headers after its BEGIN line.
    static func withEncryptionHeaders(_ block: String) -> String {
        var lines = block.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.insert(contentsOf: ["Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF", ""], at: 1)
        return lines.joined(separator: "\n")
    }

    static func expectEncryptedRefusal(_ error: OpenSSLError?) {
        #expect(error?.queue == [PEMBlocks.encryptedReason], "\(String(describing: error))")
        #expect(error?.description.contains("decrypt it first") == true)
    }

    @Test func certificateWithEncryptionHeadersIsRefused() {
        let pem = Self.withEncryptionHeaders(TestCertificates.certificate("leaf-localhost-ecdsa"))
        Self.expectEncryptedRefusal(#expect(throws: OpenSSLError.self) { try OpenSSLCertificate.parsePEM(pem) })
        Self.expectEncryptedRefusal(#expect(throws: OpenSSLError.self) { try PEMPins.pins(pem: pem) })
    }

    @Test func publicKeyWithEncryptionHeadersIsRefused() throws {
        #expect(try OpenSSLKey.publicKeys(pem: Self.p384PublicKey).count == 1)
        let pem = Self.withEncryptionHeaders(Self.p384PublicKey)
        Self.expectEncryptedRefusal(#expect(throws: OpenSSLError.self) { try OpenSSLKey.publicKeys(pem: pem) })
    }

    @Test func encryptedPrivateKeysAreRefused() {
        let legacy = Self.withEncryptionHeaders(TestCertificates.privateKey("leaf-localhost-ecdsa"))
        Self.expectEncryptedRefusal(#expect(throws: OpenSSLError.self) { try OpenSSLKey.privateKey(pem: legacy) })
        Self.expectEncryptedRefusal(#expect(throws: OpenSSLError.self) {
            try OpenSSLKey.privateKey(pem: Self.pkcs8EncryptedKey)
        })
    }

    @Test func unencryptedPEMStillLoads() throws {
        #expect(try OpenSSLCertificate.parsePEM(TestCertificates.certificate("leaf-localhost-ecdsa")).count == 1)
        _ = try OpenSSLKey.privateKey(pem: TestCertificates.privateKey("leaf-localhost-ecdsa"))
    }

    /// leaf-p384's public key (`openssl x509 -pubkey -noout`).
    static let p384PublicKey = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAErtD+TFdENv12W/VU5M4387iFY+nMmTFF
        BSj7HsbnwFaCDryDVN+chrjFt/1MEH9mxZRXYtTS0uIzjpYVF3i/7nMjRdDoUakA
        qn+2kr4OnE8KBbEwZgkzSQemfXV3I3r7
        -----END PUBLIC KEY-----
        """

    /// leaf-localhost-ecdsa.key as PKCS#8 encrypted with AES-128 (`openssl pkey -aes128`), passphrase "secret".
    static let pkcs8EncryptedKey = """
        -----BEGIN ENCRYPTED PRIVATE KEY-----
        MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAhAKdG31OmGiAICCAAw
        DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEEIJ4GaGz9uzWVss1d83nN7oEgZB/
        OVq1SuFx9BzxRknHxLU+QaSBY6t2wAMIBsczWxoj5Wuw7Gb5LiIiYvKjx5+ujwVs
        y88cxb6ggBX9kizm+kxrqO5h+U7UF0sY19vMoScGZdoSFYredYsgXpfCoI8+duHI
        STg+nNq+7WbhmnU5pdllYd1SZDBrRagVs7deZA7BtEZ+/ZGnvjwDevz9JZpxCJU=
        -----END ENCRYPTED PRIVATE KEY-----
        """
}

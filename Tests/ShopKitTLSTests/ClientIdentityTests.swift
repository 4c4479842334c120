import Foundation
import ShopKitTLS
import TestSupport
import Testing

/// Loading client identities: PEM (plain and encrypted), PKCS#12, every key type, and each way it can go wrong,
/// with errors that say what to fix and never show the key.
@Suite(.timeLimit(.minutes(3))) struct ClientIdentityTests {
    static func path(_ file: String) -> String { MutualTLSNginxTests.path(file) }
    static let passphrase = MutualTLSNginxTests.passphrase

    /// SHA-256 of the leaf's DER, computed by the openssl CLI (a real child process), not by ShopKit.
    static func opensslFingerprint(_ name: String) async throws -> String {
        let outcome = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/sh")).run(
            ["-c", "openssl x509 -in \"$0\" -outform DER | openssl dgst -sha256 -r", path("\(name).pem")])
        return String(outcome.stdout.prefix(64))
    }

    @Test(arguments: ["client-ecdsa", "client-rsa", "client-ed25519"])
    func pemIdentitiesLoadWithTheirLeafFingerprint(name: String) async throws {
        let identity = try MutualTLSNginxTests.pemIdentity(name)
        let expected = try await Self.opensslFingerprint(name)
        #expect(expected.count == 64 && identity.fingerprint == expected)
        #expect(identity.subject == "O=ShopKit Test,CN=shopkit-\(name)")
        #expect(identity.issuer == "O=ShopKit Test,CN=ShopKit Test Client Intermediate")
    }

    @Test func encryptedPEMAndPKCS12GiveTheSameIdentity() throws {
        let plain = try MutualTLSNginxTests.pemIdentity("client-ecdsa")
        let encrypted = try ClientIdentity.pemFiles(
            certificateChain: Self.path("client-ecdsa-chain.pem"), privateKey: Self.path("client-ecdsa-encrypted.key"),
            passphrase: Self.passphrase)
        let bundle = try ClientIdentity.pkcs12File(Self.path("client-ecdsa.p12"), passphrase: Self.passphrase)
        #expect(encrypted == plain && bundle == plain)
        #expect(plain != (try MutualTLSNginxTests.pemIdentity("client-rsa")))
    }

    @Test func inMemoryPEMLoads() throws {
        let identity = try ClientIdentity.pem(
            certificateChain: TestCertificates.chain(["client-ed25519", "client-intermediate"]),
            privateKey: Array(TestCertificates.privateKey("client-ed25519").utf8))
        #expect(identity.subject == "O=ShopKit Test,CN=shopkit-client-ed25519")
    }

    @Test func anEncryptedKeyWithoutOrWithAWrongPassphraseFailsWithoutPrompting() {
        for passphrase in [nil, Array("wrong".utf8)] {
            #expect {
                try ClientIdentity.pemFiles(
                    certificateChain: Self.path("client-ecdsa-chain.pem"),
                    privateKey: Self.path("client-ecdsa-encrypted.key"), passphrase: passphrase)
            } throws: { error in
                guard let error = error as? TLSContextError else { return false }
                return error.kind == .invalidInput && error.message.contains("passphrase")
            }
        }
        #expect(throws: TLSContextError.self) {
            try ClientIdentity.pkcs12File(Self.path("client-ecdsa.p12"), passphrase: Array("wrong".utf8))
        }
    }

    @Test func aKeyThatDoesNotBelongToTheCertificateIsRefused() {
        #expect {
            try ClientIdentity.pemFiles(certificateChain: Self.path("client-ecdsa-chain.pem"), privateKey: Self.path("client-rsa.key"))
        } throws: { error in
            (error as? TLSContextError)?.message.contains("does not belong to the first certificate") == true
        }
    }

    @Test func missingFilesAndGarbageAreTypedErrors() {
        #expect(throws: TLSContextError.self) {
            try ClientIdentity.pemFiles(certificateChain: "/nonexistent/chain.pem", privateKey: Self.path("client-ecdsa.key"))
        }
        #expect(throws: TLSContextError.self) {
            try ClientIdentity.pemFiles(certificateChain: Self.path("client-ecdsa-chain.pem"), privateKey: "/nonexistent/key")
        }
        #expect(throws: TLSContextError.self) {
            try ClientIdentity.pem(certificateChain: "not a pem", privateKey: Array("not a key".utf8))
        }
        #expect(throws: TLSContextError.self) { try ClientIdentity.pkcs12(Array("not a bundle".utf8)) }
    }

    @Test func neitherTheDescriptionNorAnErrorShowsTheKey() throws {
        let key = TestCertificates.privateKey("client-ecdsa")
        let body = key.split(separator: "\n").dropFirst().first.map(String.init) ?? key
        let identity = try MutualTLSNginxTests.pemIdentity("client-ecdsa")
        #expect(!"\(identity)".contains(body) && "\(identity)".contains(identity.fingerprint))
        do {
            _ = try ClientIdentity.pem(
                certificateChain: TestCertificates.chain(["client-rsa"]), privateKey: Array(key.utf8))
            Issue.record("a mismatched key loaded")
        } catch {
            #expect(!"\(error)".contains(body))
        }
    }
}

import Foundation
import ShopKitTLS
import TestSupport
import Testing

/// Loading client identities: PEM (plain and encrypted), PKCS#12, every key type, and each way it can go wrong,
/// with errors that say what to fix and never show the key.
@Suite struct ClientIdentityTests {
    static func path(_ file: String) -> String { MutualTLSNginxTests.path(file) }
    static let passphrase = MutualTLSNginxTests.passphrase

    /// SHA-256 of the leaf's DER, computed by the openssl CLI (a real child process), not by ShopKit.
    static func opensslFingerprint(_ name: String) throws -> String {
        let der = Process()
        der.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        der.arguments = ["x509", "-in", path("\(name).pem"), "-outform", "DER"]
        let pipe = Pipe()
        der.standardOutput = pipe
        try der.run()
        let bytes = pipe.fileHandleForReading.readDataToEndOfFile()
        der.waitUntilExit()
        let digest = Process()
        digest.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        digest.arguments = ["dgst", "-sha256", "-r"]
        let input = Pipe(), output = Pipe()
        digest.standardInput = input
        digest.standardOutput = output
        try digest.run()
        input.fileHandleForWriting.write(bytes)
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        digest.waitUntilExit()
        return String(text.prefix(64))
    }

    @Test(arguments: ["client-ecdsa", "client-rsa", "client-ed25519"])
    func pemIdentitiesLoadWithTheirLeafFingerprint(name: String) throws {
        let identity = try MutualTLSNginxTests.pemIdentity(name)
        #expect(identity.fingerprint == (try Self.opensslFingerprint(name)))
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

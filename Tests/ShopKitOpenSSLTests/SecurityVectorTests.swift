@testable import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing

/// The security-review certificates against OpenSSL's verification as ShopKit configures it.
@Suite(.timeLimit(.minutes(3))) struct SecurityVectorTests {
    private func chain(_ leaf: String) -> [String] { [leaf, "intermediate-2", "intermediate-1"] }

    /// Runs a handshake that must fail, returning OpenSSL's verify result.
    private func refused(
        _ serverChain: [String], key: String, host: String = "localhost", serverSecurityLevel: Int? = nil
    ) throws -> VerifyResult? {
        let pair = try BackToBack(
            serverChain: serverChain, serverKey: key, host: host, serverSecurityLevel: serverSecurityLevel)
        guard case .failed = pair.handshake() else {
            Issue.record("the handshake with \(serverChain[0]) for \(host) should fail")
            return nil
        }
        return pair.client.verifyResult
    }

    @Test func notYetValidLeafIsRefused() throws {
        let result = try refused(chain("leaf-not-yet-valid"), key: "leaf-not-yet-valid")
        #expect(result?.reason.contains("not yet valid") == true)
    }

    @Test func weakRSAKeyIsRefused() throws {
        let result = try refused(chain("leaf-rsa1024"), key: "leaf-rsa1024", serverSecurityLevel: 0)
        #expect(result?.reason.contains("too weak") == true || result?.reason.contains("too small") == true)
    }

    @Test func sha1SignedLeafIsRefused() throws {
        let result = try refused(chain("leaf-sha1"), key: "leaf-sha1", serverSecurityLevel: 0)
        #expect(result?.reason.contains("too weak") == true)
    }

    @Test func leafUnderANonCAIntermediateIsRefused() throws {
        let result = try refused(["leaf-under-not-ca", "intermediate-not-ca", "intermediate-2", "intermediate-1"],
            key: "leaf-under-not-ca")
        #expect(result?.isOK == false)
        #expect(result?.isHostnameMismatch == false)
    }

    @Test func clientAuthOnlyLeafIsRefused() throws {
        let result = try refused(chain("leaf-client-auth"), key: "leaf-client-auth")
        #expect(result?.reason.contains("purpose") == true)
    }

    @Test func wildcardCoversExactlyOneLabel() throws {
        let good = try BackToBack(serverChain: chain("leaf-wildcard"), serverKey: "leaf-wildcard", host: "api.example.test")
        #expect(good.handshake() == .complete)
        #expect(try refused(chain("leaf-wildcard"), key: "leaf-wildcard", host: "a.b.example.test")?.isHostnameMismatch == true)
        #expect(try refused(chain("leaf-wildcard"), key: "leaf-wildcard", host: "example.test")?.isHostnameMismatch == true)
    }

    @Test(arguments: ["leaf-p384", "leaf-ed25519", "leaf-localhost-rsa"])
    func otherKeyTypesHandshakeAndPin(leaf: String) throws {
        let pair = try BackToBack(serverChain: chain(leaf), serverKey: leaf)
        #expect(pair.handshake() == .complete)
        #expect(try pair.client.verifiedChain()?.leaf?.spkiPin == TestCertificates.pin(leaf))
    }

    @Test(arguments: [OpenSSLContext.Trust.system, .pem(TestCertificates.certificate("root"), addingToSystem: false)])
    func clientContextsRunAtSecurityLevelTwoOrHigher(trust: OpenSSLContext.Trust) throws {
        // Upstream OpenSSL 3 defaults to level 1 (RSA-1024 and SHA-1 accepted); ShopKit raises it to 2.
        let context = try OpenSSLContext.client(trust: trust, minimumVersion: .tls12)
        #expect(context.securityLevel >= 2)
        #expect(OpenSSLContext.minimumClientSecurityLevel == 2)
    }

    @Test(arguments: [(0, 2), (1, 2), (2, 2), (3, 3)])
    func securityLevelIsRaisedNeverLowered(from start: Int, to expected: Int) throws {
        // A server context can start at any level; the client's raise applies the same rule to it.
        let context = try OpenSSLContext.server(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"), securityLevel: start)
        #expect(context.securityLevel == start)
        context.raiseSecurityLevel(to: OpenSSLContext.minimumClientSecurityLevel)
        #expect(context.securityLevel == expected)
    }

    @Test func trustAddedToTheSystemStoreStillTrustsTheTestRoot() throws {
        let serverContext = try OpenSSLContext.server(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let clientContext = try OpenSSLContext.client(
            trust: .pem(TestCertificates.certificate("root"), addingToSystem: true), minimumVersion: .tls13)
        let client = try OpenSSLConnection.client(context: clientContext, host: "localhost")
        let server = try OpenSSLConnection.server(context: serverContext)
        var clientResult = client.handshake()
        for _ in 0..<5 where clientResult != .complete {
            if let bytes = client.takeCiphertext() { server.feedCiphertext(bytes) }
            _ = server.handshake()
            if let bytes = server.takeCiphertext() { client.feedCiphertext(bytes) }
            clientResult = client.handshake()
        }
        #expect(clientResult == .complete)
    }
}

import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(3))) struct MemoryBIOHandshakeTests {
    @Test func handshakeSucceedsAndCarriesData() throws {
        let pair = try BackToBack(
            serverChain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], serverKey: "leaf-localhost-ecdsa")
        #expect(pair.handshake() == .complete)
        #expect(pair.client.verifyResult.isOK)
        #expect(pair.client.alpnProtocol == "http/1.1")
        #expect(pair.client.protocolVersion == "TLSv1.3")
        #expect(!pair.client.sessionReused)
        #expect(pair.send("ping", from: pair.client, to: pair.server) == "ping")
        #expect(pair.send("pong", from: pair.server, to: pair.client) == "pong")
    }

    @Test func untrustedRootFailsAsUntrustedChain() throws {
        let pair = try BackToBack(
            serverChain: ["other-leaf-localhost", "other-intermediate"], serverKey: "other-leaf-localhost")
        guard case .failed = pair.handshake() else { Issue.record("handshake should fail"); return }
        let result = pair.client.verifyResult
        #expect(!result.isOK)
        #expect(!result.isHostnameMismatch)
        #expect(result.reason.contains("local issuer"))
        #expect(try pair.client.verifiedChain() == nil)
    }

    @Test func otherHostnameFailsAsHostnameMismatch() throws {
        let pair = try BackToBack(
            serverChain: ["leaf-other-host", "intermediate-2", "intermediate-1"], serverKey: "leaf-other-host")
        guard case .failed = pair.handshake() else { Issue.record("handshake should fail"); return }
        #expect(pair.client.verifyResult.isHostnameMismatch)
    }

    @Test func commonNameIsNeverUsedAsHostname() throws {
        let pair = try BackToBack(
            serverChain: ["leaf-cn-only", "intermediate-2", "intermediate-1"], serverKey: "leaf-cn-only")
        guard case .failed = pair.handshake() else { Issue.record("a CN-only certificate must not match"); return }
        #expect(pair.client.verifyResult.isHostnameMismatch)
    }

    @Test func ipAddressHostIsCheckedAgainstIPSANs() throws {
        let good = try BackToBack(
            serverChain: ["leaf-localhost-rsa", "intermediate-2", "intermediate-1"], serverKey: "leaf-localhost-rsa",
            host: "127.0.0.1")
        #expect(good.handshake() == .complete)
        let bad = try BackToBack(
            serverChain: ["leaf-localhost-rsa", "intermediate-2", "intermediate-1"], serverKey: "leaf-localhost-rsa",
            host: "127.0.0.2")
        guard case .failed = bad.handshake() else { Issue.record("wrong IP should fail"); return }
        #expect(bad.client.verifyResult.isHostnameMismatch)
    }

    @Test func expiredLeafFails() throws {
        let pair = try BackToBack(
            serverChain: ["leaf-expired", "intermediate-2", "intermediate-1"], serverKey: "leaf-expired")
        guard case .failed = pair.handshake() else { Issue.record("expired leaf should fail"); return }
        #expect(pair.client.verifyResult.reason.contains("expired"))
    }

    @Test func verifiedChainOmitsUnrelatedCertificatesThePeerSent() throws {
        // The server sends an unrelated certificate after a valid chain; OpenSSL's verified path skips it.
        let pair = try BackToBack(
            serverChain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1", "other-root"],
            serverKey: "leaf-localhost-ecdsa")
        #expect(pair.handshake() == .complete)
        let verified = try #require(try pair.client.verifiedChain())
        let presented = try #require(try pair.client.presentedChain())
        #expect(verified.certificates.map(\.spkiPin) == [
            TestCertificates.pin("leaf-localhost-ecdsa"), TestCertificates.pin("intermediate-2"),
            TestCertificates.pin("intermediate-1"), TestCertificates.pin("root"),
        ])
        #expect(presented.certificates.map(\.spkiPin).contains(TestCertificates.pin("other-root")))
        #expect(!verified.certificates.map(\.spkiPin).contains(TestCertificates.pin("other-root")))
        let leaf = try #require(verified.leaf)
        #expect(leaf.subjectAlternativeNames == ["localhost", "127.0.0.1"])
        #expect(leaf.subject == "CN=localhost")
        #expect(leaf.keyDescription == "ECDSA P-256")
        #expect(leaf.signatureAlgorithm == "ecdsa-with-SHA256")
        #expect(verified.certificates.last?.keyDescription == "RSA 2048")
    }

    @Test func shutdownExchangesCloseNotify() throws {
        let pair = try BackToBack(
            serverChain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], serverKey: "leaf-localhost-ecdsa")
        #expect(pair.handshake() == .complete)
        #expect(pair.client.shutdown() == .wantRead)
        pair.server.feedCiphertext(try #require(pair.client.takeCiphertext()))
        var plaintext: [UInt8] = []
        #expect(pair.server.readPlaintext(into: &plaintext) == .closed)
    }
}

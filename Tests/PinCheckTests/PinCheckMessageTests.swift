import Foundation
import ShopKitInspector
import ShopKitTLS
import TestSupport
import Testing

/// Issue 25, pin-check messages: each common failure reads as one plain sentence in text mode, never as NIO's
/// internal types or a bare OpenSSL string, and a chain that was not the problem is not called "NOT trusted".
@Suite(.timeLimit(.minutes(3))) struct PinCheckMessageTests {
    static let internalNames = ["SingleConnectionFailure", "NIOConnectionError", "SocketAddressError", "IOError", "UnknownHost"]

    static func run(server: TLSServerContext, _ extra: [String] = []) async throws -> PinCheckBinary.Outcome {
        let server = try await LoopbackTLSServer.start(tlsContext: server)
        let caFile = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", caFile.path] + extra)
        try await server.shutdown()
        return outcome
    }

    @Test func aClosedPortIsOneSentenceLikeCurl() async throws {
        let closed = try BoundClosedPort()
        defer { closed.release() }
        let outcome = try await PinCheckBinary.run(["127.0.0.1:\(closed.port)"])
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains(
            "  could not connect to 127.0.0.1 port \(closed.port): Connection refused (nothing is listening there)\n"))
        for name in Self.internalNames { #expect(!(outcome.stdout + outcome.stderr).contains(name)) }
    }

    @Test func anUnknownHostIsOneSentenceLikeCurl() async throws {
        // .invalid never resolves (RFC 6761).
        let outcome = try await PinCheckBinary.run(["shopkit-test.invalid:443", "--timeout", "5"])
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("  could not resolve host shopkit-test.invalid (check the name and DNS)"))
        for name in Self.internalNames { #expect(!(outcome.stdout + outcome.stderr).contains(name)) }
    }

    @Test func aTLS10OnlyServerIsProtocolTooOld() async throws {
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
            legacy: .onlyTLS10)
        let outcome = try await Self.run(server: server)
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("  the server speaks only a TLS version older than 1.2 (protocol too old)"))
    }

    @Test func aCertificateListOver100KiBIsNamed() async throws {
        // The standard chain, then the intermediate again and again: some 300 KiB of certificates.
        let padding = String(repeating: TestCertificates.certificate("intermediate-1"), count: 400)
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain() + padding,
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let outcome = try await Self.run(server: server)
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("  the server's certificate list is over 100 KiB"))
    }

    @Test func noCipherInCommonIsNamed() async throws {
        let outcome = try await PinCheckLegacyKeyExchangeTests.run([])
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("  no cipher suite in common: the server offers none of ShopKit's"))
        #expect(outcome.stdout.contains("pass --allow-static-rsa"))
    }

    /// The server's chain was verified; the handshake stopped at its certificate request: the chain is shown, but
    /// not as "NOT trusted".
    @Test func aClientCertificateRequestIsNamedAndTheChainIsNotCalledUntrusted() async throws {
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
            maximumVersion: .tls12, requiringClientCertificatesFrom: TestCertificates.certificate("client-ca"))
        let outcome = try await Self.run(server: server)
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("the server requires a client certificate issued by"))
        #expect(outcome.stdout.contains("pass --cert FILE --key FILE"))
        #expect(!outcome.stdout.contains("NOT trusted"))
    }

    /// A DH key too small cannot be met by a ShopKit client any more (it offers no DHE suite), so the wording is
    /// checked on OpenSSL's text directly: a key-exchange failure, not a certificate one.
    @Test func aDHKeyTooSmallIsAKeyExchangeFailure() {
        let hint = FailureWording.handshakeHint("SSL_do_handshake: error:0A00018A:SSL routines::dh key too small")
        #expect(hint?.contains("Diffie-Hellman key is too small: a key exchange failure, not a certificate problem") == true)
        #expect(FailureWording.handshakeHint("SSL_do_handshake: error:0A000126:SSL routines::unexpected eof") == nil)
    }
}

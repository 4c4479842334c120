import Foundation
import NIOCore
import NIOPosix
import ShopKitInspector
import ShopKitTLS
import TestSupport
import Testing

/// Issue 39, item 2: messages that point the user the right way. Each runs the built `pin-check` against a real
/// server (or, where no ShopKit client can meet the failure, checks the wording on OpenSSL's own text).
@Suite(.timeLimit(.minutes(3))) struct PinCheckWordingTests {
    /// Text mode's lines must carry no OpenSSL error-queue internals and no NIO type or errno text.
    static let internals = ["SSL_do_handshake", "error:0A", "SSL routines", "errno", "(error set)", "IOError", "NIOConnectionError"]

    static func expectPlain(_ outcome: PinCheckBinary.Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        for text in Self.internals {
            #expect(!outcome.stdout.contains(text), "stdout leaks \(text):\n\(outcome.stdout)", sourceLocation: sourceLocation)
        }
    }

    /// Satisfies the issue's "the static-RSA warning names a Swift API": the CLI names its own option.
    @Test func theStaticRSAWarningNamesTheOptionNotASwiftAPI() async throws {
        let allowed = try await PinCheckLegacyKeyExchangeTests.run(["--allow-static-rsa"])
        #expect(allowed.status == 0)
        #expect(allowed.stdout.contains("connected only because of --allow-static-rsa"))
        #expect(!allowed.stdout.contains("TLSClientConfiguration"), "\(allowed.stdout)")
    }

    @Test func aHandshakeFailureIsPlainInTextAndFullWithVerboseAndInJSON() async throws {
        let text = try await PinCheckLegacyKeyExchangeTests.run(["--timeout", "60"])
        #expect(text.status == 4)
        #expect(text.stdout.contains("no cipher suite in common"))
        Self.expectPlain(text)
        let verbose = try await PinCheckLegacyKeyExchangeTests.run(["--timeout", "60", "--verbose"])
        #expect(verbose.status == 4)
        #expect(verbose.stdout.contains("  OpenSSL: SSL_do_handshake"), "\(verbose.stdout)")
        let json = try await PinCheckLegacyKeyExchangeTests.run(["--timeout", "60", "--json"])
        #expect(json.reason?.contains("SSL_do_handshake") == true, "\(json.stdout)")
    }

    /// A proxy port where nothing listens: one sentence, NIO's text and errno kept out, parentheses balanced.
    @Test func aProxyThatRefusesTheTCPConnectionIsOneSentence() async throws {
        let closed = try BoundClosedPort()
        defer { closed.release() }
        let outcome = try await PinCheckBinary.run(
            ["localhost:443", "--timeout", "60", "--proxy", "http://127.0.0.1:\(closed.port)"])
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains(
            "could not open a tunnel through the proxy 127.0.0.1:\(closed.port): Connection refused (nothing is listening there)\n"),
            "\(outcome.stdout)")
        Self.expectPlain(outcome)
        let line = try #require(outcome.stdout.split(separator: "\n").first { $0.contains("could not open a tunnel") })
        #expect(line.filter { $0 == "(" }.count == line.filter { $0 == ")" }.count, "\(line)")
    }

    /// A server that reads the ClientHello and resets the connection (`SO_LINGER` 0, then close).
    @Test func aResetDuringTheHandshakeIsOneSentence() async throws {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Resetter()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        let outcome = try await PinCheckBinary.run(["127.0.0.1:\(port)", "--servername", "localhost", "--timeout", "60"])
        try await channel.close()
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("the connection was reset during the TLS handshake"), "\(outcome.stdout)")
        Self.expectPlain(outcome)
    }

    /// Error 20 told apart by the chain pin-check shows: only the leaf sent (an intermediate left out), or a chain
    /// that ends at a CA certificate whose issuer is not trusted here.
    @Test func aMissingIntermediateIsNamed() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(chain: ["leaf-localhost-ecdsa"], key: "leaf-localhost-ecdsa", [])
        #expect(outcome.status == 2)
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("unable to get local issuer certificate (20)"))
        #expect(verdict.contains("the server did not send the certificate of O=ShopKit Test,CN=ShopKit Test Intermediate 2"), "\(verdict)")
        #expect(verdict.contains("an intermediate certificate is missing"), "\(verdict)")
    }

    @Test func anUntrustedIssuerIsNamed() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(
            chain: ["other-leaf-localhost", "other-intermediate"], key: "other-leaf-localhost", [])
        #expect(outcome.status == 2)
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("unable to get local issuer certificate (20)"))
        #expect(verdict.contains("the chain the server sent ends at O=ShopKit Other,CN=ShopKit Unrelated Intermediate"), "\(verdict)")
        #expect(verdict.contains("which is not a trusted root here"), "\(verdict)")
    }

    /// Error 20 with the first intermediate sent and the second left out, under a trusted root: the chain sent
    /// ends at a CA whose issuer was not sent, as for an untrusted CA, and nothing pin-check sees tells the two
    /// apart. The hint names both, not only "the server's CA is not trusted", which is false here.
    @Test func aLeftOutSecondIntermediateIsNotOnlyCalledAnUntrustedCA() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(
            chain: ["leaf-localhost-ecdsa", "intermediate-2"], key: "leaf-localhost-ecdsa", [])
        #expect(outcome.status == 2)
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("unable to get local issuer certificate (20)"))
        #expect(verdict.contains("the chain the server sent ends at O=ShopKit Test,CN=ShopKit Test Intermediate 2"), "\(verdict)")
        #expect(verdict.contains("which is not a trusted root here"), "\(verdict)")
        #expect(
            verdict.contains(
                "or O=ShopKit Test,CN=ShopKit Test Intermediate 1 is an intermediate certificate that the server leaves out"),
            "\(verdict)")
    }

    /// Error 20 with only the leaf sent: most likely a missing intermediate, but a private CA that issues server
    /// certificates itself looks the same, and its fix is --ca-file.
    @Test func aLeafWhoseIssuerWasNotSentNamesBothCauses() {
        let hint = FailureWording.untrustedHint(
            code: 20, presented: [(subject: "CN=localhost", issuer: "O=Corp,CN=Corp Root", signature: "ecdsa-with-SHA256")])
        #expect(hint?.contains("an intermediate certificate is missing") == true, "\(hint ?? "nil")")
        #expect(hint?.contains("if O=Corp,CN=Corp Root is a private CA's root") == true, "\(hint ?? "nil")")
        #expect(hint?.contains("pass its certificate with --ca-file") == true, "\(hint ?? "nil")")
    }

    @Test func aSHA1SignatureNamesTheCertificate() async throws {
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.chain(["leaf-sha1", "intermediate-2", "intermediate-1"]),
            privateKeyPEM: TestCertificates.privateKey("leaf-sha1"), legacy: .weakCertificates)
        let outcome = try await PinCheckMessageTests.run(server: server, ["--timeout", "60"])
        #expect(outcome.status == 2)
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("(68)"))
        #expect(verdict.contains("is signed with SHA-1"), "\(verdict)")
        #expect(verdict.contains("CN=localhost"), "\(verdict)")
    }

    /// Error 19: a chain sent up to a self-signed root that is not trusted here.
    @Test func anUntrustedSelfSignedRootIsSaidInWords() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1", "root"], key: "leaf-localhost-ecdsa")
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", MutualTLSFixtures.path("other-root.pem"),
             "--timeout", "60"])
        try await server.shutdown()
        #expect(outcome.status == 2)
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("self-signed certificate in certificate chain (19)"))
        #expect(verdict.contains("ends at the self-signed root O=ShopKit Test,CN=ShopKit Test Root CA, which is not trusted here"), "\(verdict)")
    }

    /// Error 26: a leaf issued for TLS clients only.
    @Test func anUnsuitablePurposeIsSaidInWords() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(
            chain: ["leaf-client-auth", "intermediate-2", "intermediate-1"], key: "leaf-client-auth", [])
        #expect(outcome.status == 2)
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("(26)"))
        #expect(verdict.contains("may not be used by a TLS server"), "\(verdict)")
    }

    static func sServer(_ ciphers: String) async throws -> PinCheckBinary.Outcome {
        // Two connections: the check, then pin-check's static-RSA probe; s_server exits after both.
        let server = try await OpenSSLSServer.start(leaf: "leaf-localhost-rsa", connections: 2, ["-tls1_2", "-cipher", ciphers])
        defer { server.stop() }
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", MutualTLSFixtures.path("root.pem"),
             "--timeout", "60"])
        // s_server exits only after its second connection: the probe ran.
        _ = try await server.waitForExit("s_server to serve the check and the probe")
        return outcome
    }

    /// badssl's `dh2048`: finite-field DHE only. No `--allow-static-rsa` hint: it would not help.
    @Test func aDHEOnlyServerGetsNoStaticRSAHint() async throws {
        let outcome = try await Self.sServer("DHE-RSA-AES128-GCM-SHA256")
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("no cipher suite in common"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("only finite-field DHE suites or only CBC suites"), "\(outcome.stdout)")
        #expect(!outcome.stdout.contains("--allow-static-rsa"), "\(outcome.stdout)")
        Self.expectPlain(outcome)
    }

    /// ECDHE with CBC only: the same, as ShopKit offers no CBC suite.
    @Test func anECDHECBCOnlyServerGetsNoStaticRSAHint() async throws {
        let outcome = try await Self.sServer("ECDHE-RSA-AES128-SHA256:ECDHE-RSA-AES128-SHA")
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("only finite-field DHE suites or only CBC suites"), "\(outcome.stdout)")
        #expect(!outcome.stdout.contains("--allow-static-rsa"), "\(outcome.stdout)")
    }

    /// A 512-bit RSA server that speaks TLS 1.3: no signature algorithm fits the key, so the server ends the
    /// handshake with a handshake-failure alert. The message names the key, not the TLS 1.2 cipher suites.
    @Test func a512BitRSAServerOnTLS13IsToldItsKeyIsTooSmall() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-rsa512-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))
        let request = try await openssl.run(
            ["req", "-new", "-newkey", "rsa:512", "-nodes", "-keyout", path("leaf.key"), "-subj", "/CN=localhost",
             "-out", path("leaf.csr")])
        #expect(request.status == 0, "\(request.stderr)")
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: path("ext"), atomically: true, encoding: .utf8)
        let certs = TestCertificates.directory
        let signed = try await openssl.run(
            ["x509", "-req", "-in", path("leaf.csr"), "-CA", certs.appendingPathComponent("intermediate-2.pem").path,
             "-CAkey", certs.appendingPathComponent("intermediate-2.key").path, "-set_serial", "512", "-days", "30",
             "-extfile", path("ext"), "-out", path("leaf.pem")])
        #expect(signed.status == 0, "\(signed.stderr)")
        // Security level 0, or s_server refuses to load the key; TLS 1.2 and 1.3, as such a server would.
        let server = try await OpenSSLSServer.start(
            leafFiles: (path("leaf.pem"), path("leaf.key")), connections: 2, ["-cipher", "DEFAULT@SECLEVEL=0"])
        defer { server.stop() }
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", MutualTLSFixtures.path("root.pem"),
             "--timeout", "60"])
        _ = try await server.waitForExit("s_server to serve the check and the probe")
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("the server's key (RSA 512) is too small"), "\(outcome.stdout)")
        #expect(!outcome.stdout.contains("--allow-static-rsa"), "\(outcome.stdout)")
        #expect(!outcome.stdout.contains("only finite-field DHE"), "\(outcome.stdout)")
    }

    /// badssl's `cbc` (ECDHE-CBC and RSA-CBC): `--allow-static-rsa` would connect with static RSA and CBC, so the
    /// hint says exactly that instead of recommending it.
    @Test func aCBCServerIsToldWhatStaticRSAWouldCost() async throws {
        let outcome = try await Self.sServer("ECDHE-RSA-AES128-SHA256:AES128-SHA256")
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("accepts only static RSA key exchange with a CBC cipher (AES128-SHA256)"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("neither forward secrecy nor AEAD"), "\(outcome.stdout)")
    }
}

/// Reads once, then resets the connection: `SO_LINGER` with a zero timeout makes the close an RST.
private final class Resetter: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let channel = context.channel
        guard let provider = channel as? SocketOptionProvider else { return channel.close(promise: nil) }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }
}

import ShopKitOpenSSL
import ShopKitTLS
import TestSupport
import Testing

/// Client certificates back to back with a strict server (`SSL_VERIFY_FAIL_IF_NO_PEER_CERT`), which refuses with
/// a TLS alert: during the handshake in TLS 1.2, after the client's handshake is done in TLS 1.3. Either way the
/// client reports the client certificate, never a bare handshake failure.
@Suite(.timeLimit(.minutes(3))) struct MutualTLSHandlerTests {
    static let versions: [TLSClientConfiguration.MinimumVersion] = [.tls12, .tls13]

    static func server(version: TLSClientConfiguration.MinimumVersion, namingCAs: Bool = true) throws -> TLSServerContext {
        try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
            maximumVersion: version, requiringClientCertificatesFrom: TestCertificates.certificate("client-ca"),
            namingCAs: namingCAs)
    }

    static func client(
        _ identity: String?, policy: TLSClientConfiguration.CertificateRequestPolicy = .fail
    ) throws -> TLSClientContext {
        try MutualTLSNginxTests.context(identity.map(MutualTLSNginxTests.pemIdentity), policy: policy)
    }

    /// Connects, runs the handshake, and sends one line from the client (which carries a TLS 1.3 alert back).
    static func run(_ pair: EmbeddedTLSPair) throws {
        try pair.connect()
        try pair.shuttle()
        if pair.client.isActive { _ = pair.write("ping\n", on: pair.client) }
        try pair.shuttle()
    }

    @Test(arguments: versions)
    func theRightIdentityIsAccepted(version: TLSClientConfiguration.MinimumVersion) throws {
        let pair = try EmbeddedTLSPair(client: Self.client("client-rsa"), server: Self.server(version: version))
        defer { pair.finish() }
        try Self.run(pair)
        #expect(pair.clientRecorder.errors.isEmpty)
        #expect(pair.serverRecorder.text == "ping\n")
        #expect(pair.clientRecorder.completed?.clientCertificateRequest?.answer == .sent(subject: "O=ShopKit Test,CN=shopkit-client-rsa"))
    }

    /// The server names no CA, so ShopKit cannot tell in advance: it sends the certificate and the server's alert
    /// becomes `clientCertificateRejected` with OpenSSL's alert text.
    @Test(arguments: versions)
    func aRefusalAlertNamesTheClientCertificate(version: TLSClientConfiguration.MinimumVersion) throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client("client-wrong-ca"), server: Self.server(version: version, namingCAs: false))
        defer { pair.finish() }
        try Self.run(pair)
        let error = try #require(pair.clientRecorder.tlsErrors.first)
        guard error.code == .clientCertificateRejected, let reason = error.reason else {
            Issue.record("expected clientCertificateRejected, got \(error)")
            return
        }
        #expect(reason.contains("the server refused the client certificate O=ShopKit Test,CN=shopkit-client-wrong-ca"))
        #expect(reason.contains("alert"))
        #expect(!error.isRetryable)
    }

    /// A client allowed to go on without a certificate meets a server that requires one: its alert becomes
    /// `clientCertificateRequired` with the names from the request.
    @Test(arguments: versions)
    func goingOnWithoutIdentityEndsInClientCertificateRequired(version: TLSClientConfiguration.MinimumVersion) throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client(nil, policy: .continueWithoutCertificate), server: Self.server(version: version))
        defer { pair.finish() }
        try Self.run(pair)
        #expect(pair.clientRecorder.tlsErrors.first == .clientCertificateRequired(acceptedIssuers: [MutualTLSNginxTests.clientCA]))
    }

    @Test(arguments: versions)
    func withoutIdentityTheClientStopsAtTheRequest(version: TLSClientConfiguration.MinimumVersion) throws {
        let pair = try EmbeddedTLSPair(client: Self.client(nil), server: Self.server(version: version))
        defer { pair.finish() }
        try Self.run(pair)
        #expect(pair.clientRecorder.tlsErrors == [.clientCertificateRequired(acceptedIssuers: [MutualTLSNginxTests.clientCA])])
        #expect(pair.clientRecorder.completed == nil)
        #expect(pair.serverRecorder.plaintext.isEmpty)
    }

    /// A server that asks for no certificate is unaffected by an identity or by its absence.
    @Test func serversThatDoNotAskSeeNoChange() throws {
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        for identity in [nil, "client-ecdsa"] {
            let pair = try EmbeddedTLSPair(client: Self.client(identity), server: server)
            defer { pair.finish() }
            try Self.run(pair)
            #expect(pair.clientRecorder.errors.isEmpty)
            #expect(pair.clientRecorder.completed?.clientCertificateRequest == nil)
            #expect(pair.serverRecorder.text == "ping\n")
        }
    }
}

import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Issue 25, defect 2: pins are checked inside OpenSSL's verification of the server's chain, so a server whose
/// verified chain matches no pin never receives the client's certificate, nor a signature made with its key.
///
/// The server asks for a client certificate (and requires one); the client holds a valid identity from the CA the
/// server names. Back to back over TLS 1.2 and 1.3: with wrong pins the server's count of received client
/// certificates stays at zero, and the client sees `TLSError.pinMismatch` with the full report.
@Suite(.timeLimit(.minutes(3))) struct PinsBeforeClientCertificateTests {
    static func client(pins: [String], reporter: CollectingReporter? = nil) throws -> TLSClientContext {
        var configuration = try Probe.configuration(pins: pins, reporter: reporter)
        configuration.clientIdentity = try MutualTLSNginxTests.pemIdentity("client-rsa")
        return try TLSClientContext(configuration: configuration)
    }

    @Test(arguments: MutualTLSHandlerTests.versions)
    func aPinMismatchEndsTheHandshakeBeforeTheClientCertificateIsSent(
        version: TLSClientConfiguration.MinimumVersion
    ) throws {
        let reporter = CollectingReporter()
        let server = try MutualTLSHandlerTests.server(version: version)
        let pair = try EmbeddedTLSPair(
            client: Self.client(pins: ["other-leaf-localhost", "other-intermediate"], reporter: reporter), server: server)
        defer { pair.finish() }
        try MutualTLSHandlerTests.run(pair)

        #expect(server.statistics.clientCertificates == 0, "the server received the client certificate")
        #expect(pair.serverRecorder.serverCompleted == nil)
        #expect(pair.serverRecorder.plaintext.isEmpty)
        #expect(pair.clientRecorder.completed == nil)
        let error = try #require(pair.clientRecorder.tlsErrors.first)
        guard let report = error.pinFailureReport else {
            Issue.record("expected pinMismatch, got \(error)")
            return
        }
        // The same report as a mismatch found after the handshake: host, port, both pin lists, the verified chain.
        #expect(report.host == "localhost")
        #expect(report.port == 443)
        #expect(report.enforced)
        #expect(report.configuredPins == ["other-leaf-localhost", "other-intermediate"].map(TestCertificates.pin))
        #expect(report.chainPins.map(\.pin) == ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1", "root"].map(TestCertificates.pin))
        #expect(report.validatedChainPEM.count == 4)
        #expect(report.validatedChainPEM.allSatisfy { $0.hasPrefix("-----BEGIN CERTIFICATE-----") })
        #expect(reporter.reports.map(\.host) == ["localhost"], "the mismatch is reported exactly once")
    }

    /// The control: with a matching pin the same server receives the certificate, so the count above means
    /// something.
    @Test(arguments: MutualTLSHandlerTests.versions)
    func aMatchingPinSendsTheClientCertificate(version: TLSClientConfiguration.MinimumVersion) throws {
        let server = try MutualTLSHandlerTests.server(version: version)
        let pair = try EmbeddedTLSPair(client: Self.client(pins: ["intermediate-2", "other-intermediate"]), server: server)
        defer { pair.finish() }
        try MutualTLSHandlerTests.run(pair)
        #expect(pair.clientRecorder.errors.isEmpty)
        #expect(server.statistics.clientCertificates == 1)
        #expect(pair.serverRecorder.text == "ping\n")
        #expect(pair.clientRecorder.completed?.pinVerdict == .matched(pin: TestCertificates.pin("intermediate-2"), certificateIndex: 1))
    }

    /// Strict mode refuses an unpinned host inside verification too: no certificate reaches it either.
    @Test(arguments: MutualTLSHandlerTests.versions)
    func strictModeRefusesAnUnpinnedHostBeforeTheClientCertificateIsSent(
        version: TLSClientConfiguration.MinimumVersion
    ) throws {
        var configuration = try Probe.configuration()
        configuration.pinning = PinningPolicy(
            pinSets: [try PinSet(hostPattern: HostPattern("api.example.com"), pins: [TestCertificates.pin("root"), TestCertificates.pin("other-root")])],
            unpinnedHosts: .refuse)
        configuration.clientIdentity = try MutualTLSNginxTests.pemIdentity("client-rsa")
        let server = try MutualTLSHandlerTests.server(version: version)
        let pair = try EmbeddedTLSPair(client: TLSClientContext(configuration: configuration), server: server)
        defer { pair.finish() }
        try MutualTLSHandlerTests.run(pair)
        #expect(server.statistics.clientCertificates == 0, "the server received the client certificate")
        #expect(pair.clientRecorder.tlsErrors.first == .hostNotPinned(host: "localhost", patterns: ["api.example.com"]))
    }
}

/// The issue's reproduction with a real `openssl s_server -Verify 2` child process on 127.0.0.1 (``OpenSSLSServer``:
/// one connection, so its output ends when it exits): with wrong pins, s_server never verifies a client certificate
/// (no `verify return` line from its verify callback), over TLS 1.2 and 1.3.
@Suite(.timeLimit(.minutes(3))) struct PinsBeforeClientCertificateSServerTests {
    @Test(arguments: ["-tls1_2", "-tls1_3"])
    func sServerSeesNoClientCertificateWhenThePinsDoNotMatch(version: String) async throws {
        let server = try await OpenSSLSServer.start(
            [version, "-Verify", "2", "-CAfile", TestCertificates.directory.appendingPathComponent("client-ca.pem").path])
        defer { server.stop() }

        let context = try PinsBeforeClientCertificateTests.client(pins: ["other-leaf-localhost", "other-intermediate"])
        do {
            _ = try await Probe.get(context: context, port: server.port)
            Issue.record("connected with wrong pins")
        } catch let error as TLSError {
            guard error.code == .pinMismatch else {
                Issue.record("expected pinMismatch, got \(error); s_server:\n\(server.log)")
                return
            }
        }
        // To its end: s_server exits after its one connection.
        let log = try await server.waitForExit("s_server to exit after its one connection")
        #expect(!log.contains("verify return"), "s_server verified a client certificate:\n\(log)")
        #expect(!log.contains("CN=shopkit-client-rsa") && !log.contains("CN = shopkit-client-rsa"))
    }
}

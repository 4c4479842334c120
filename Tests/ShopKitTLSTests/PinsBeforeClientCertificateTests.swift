import Foundation
#if canImport(Glibc)
import Glibc
#endif
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
        guard case .pinMismatch(let report) = error else {
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

/// The issue's reproduction with a real `openssl s_server -Verify 2` child process on 127.0.0.1 (one connection,
/// `-naccept 1`, so its output ends when it exits; `-www`, so it does not read its empty stdin): with wrong pins, s_server never verifies a client
/// certificate (no `verify return` line from its verify callback), over TLS 1.2 and 1.3.
@Suite(.timeLimit(.minutes(3))) struct PinsBeforeClientCertificateSServerTests {
    @Test(arguments: ["-tls1_2", "-tls1_3"])
    func sServerSeesNoClientCertificateWhenThePinsDoNotMatch(version: String) async throws {
        let certs = TestCertificates.directory
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-s_server-\(UUID()).pem")
        // s_server sends the -cert file's first certificate only; the intermediates go in -cert_chain.
        try TestCertificates.chain(["intermediate-2", "intermediate-1"]).write(to: chain, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: chain) }
        let fds = try TiedChild.socketPair()
        let writeEnd = fds.1
        let server: TiedChild
        do {
            defer { close(writeEnd) }
            server = try TiedChild(
                "/usr/bin/openssl",
                arguments: [
                    "s_server", "-www", "-accept", "0", "-naccept", "1", version, "-cert", certs.appendingPathComponent("leaf-localhost-ecdsa.pem").path, "-cert_chain", chain.path,
                    "-key", certs.appendingPathComponent("leaf-localhost-ecdsa.key").path, "-Verify", "2",
                    "-CAfile", certs.appendingPathComponent("client-ca.pem").path,
                ],
                environment: ProcessInfo.processInfo.environment, stopSignal: "KILL"
            ) { actions in
                posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
                posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
            }
        }
        defer { server.stop() }
        let reader = OutputReader(fd: fds.0)
        try await reader.wait(until: { $0.contains("ACCEPT") && $0.hasSuffix("\n") }, for: "s_server's ACCEPT line")
        let output = reader.text
        let port = try #require(
            output.split(separator: "\n").first { $0.hasPrefix("ACCEPT") }?.split(separator: ":").last.flatMap { Int($0) },
            "no ACCEPT line from s_server: \(output)")

        let context = try PinsBeforeClientCertificateTests.client(pins: ["other-leaf-localhost", "other-intermediate"])
        do {
            _ = try await Probe.get(context: context, port: port)
            Issue.record("connected with wrong pins")
        } catch let error as TLSError {
            guard case .pinMismatch = error else {
                Issue.record("expected pinMismatch, got \(error); s_server:\n\(reader.text)")
                return
            }
        }
        // To its end: s_server exits after its one connection.
        let log = try await reader.waitForEnd("s_server to exit after its one connection")
        #expect(!log.contains("verify return"), "s_server verified a client certificate:\n\(log)")
        #expect(!log.contains("CN=shopkit-client-rsa") && !log.contains("CN = shopkit-client-rsa"))
    }
}

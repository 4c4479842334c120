import NIOCore
import NIOEmbedded
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// The client and server `TLSHandler`s back to back in embedded channels (no sockets): when the client's
/// handshake event fires, what plaintext may pass, buffered writes, close_notify and resumption.
@Suite(.timeLimit(.minutes(3))) struct BackToBackHandlerTests {
    static let server = try! TLSServerContext(
        certificateChainPEM: TestCertificates.standardChain(),
        privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))

    static func client(pins: [String]) throws -> TLSClientContext {
        try TLSClientContext(configuration: Probe.configuration(pins: pins))
    }

    @Test func handshakeEventFiresOnlyAfterTheChecksPassedAndDataFlowsBothWays() throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client(pins: ["leaf-localhost-ecdsa", "backup-intermediate"]), server: Self.server)
        defer { pair.finish() }
        try pair.connect()
        try pair.shuttle()
        let info = try #require(pair.clientRecorder.completed)
        #expect(info.pinVerdict == .matched(pin: TestCertificates.pin("leaf-localhost-ecdsa"), certificateIndex: 0))
        #expect(info.verifiedChain.certificates.map(\.spkiPin).last == TestCertificates.pin("root"))
        #expect(info.host == "localhost")
        #expect(!info.resumed)
        #expect(pair.serverRecorder.serverCompleted != nil)

        _ = pair.write("ping", on: pair.client)
        try pair.shuttle()
        #expect(pair.serverRecorder.text == "ping")
        _ = pair.write("pong", on: pair.server)
        try pair.shuttle()
        #expect(pair.clientRecorder.text == "pong")
        #expect(pair.clientRecorder.errors.isEmpty)
    }

    @Test(arguments: [
        // A trusted chain for the wrong name, then an untrusted chain: OpenSSL refuses both before any pin.
        (["leaf-other-host", "intermediate-2", "intermediate-1"], "leaf-other-host"),
        (["other-leaf-localhost", "other-intermediate", "other-root"], "other-leaf-localhost"),
    ])
    func chainOrHostnameFailureNeverFiresTheEvent(chain: [String], key: String) throws {
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.chain(chain), privateKeyPEM: TestCertificates.privateKey(key))
        // The pins match the sent leaf: they must not rescue a chain OpenSSL refused.
        let pair = try EmbeddedTLSPair(client: Self.client(pins: [key, "other-root"]), server: server)
        defer { pair.finish() }
        try pair.connect()
        let early = pair.write("GET /secret", on: pair.client)
        try pair.shuttle()
        #expect(pair.clientRecorder.completed == nil)
        #expect(pair.clientRecorder.tlsErrors.count == 1)
        switch pair.clientRecorder.tlsErrors.first?.code {
        case .hostnameMismatch, .untrustedChain: break
        default: Issue.record("expected a hostname or chain error, got \(pair.clientRecorder.errors)")
        }
        #expect(pair.clientRecorder.failureDetails?.verifyResult.isOK == false)
        #expect(pair.serverRecorder.plaintext.isEmpty)
        #expect(!pair.client.isActive)
        if case .success? = early.value { Issue.record("the early write must fail") }
    }

    @Test func pinMismatchLetsNoPlaintextThroughEitherWayAndCloses() throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client(pins: ["other-root", "other-intermediate"]), server: Self.server)
        defer { pair.finish() }
        pair.serverRecorder.replyOnServerHandshake = "server secret"
        try pair.connect()
        let early = pair.write("GET /secret", on: pair.client)
        try pair.shuttle()

        #expect(pair.clientRecorder.completed == nil)
        guard let report = pair.clientRecorder.tlsErrors.first?.pinFailureReport else {
            Issue.record("expected a pin mismatch, got \(pair.clientRecorder.errors)")
            return
        }
        #expect(report.host == "localhost")
        #expect(pair.clientRecorder.tlsErrors.count == 1)
        guard case .failure(let writeError)? = early.value, (writeError as? TLSError)?.code == .pinMismatch else {
            Issue.record("the buffered write must fail with the pin mismatch, got \(String(describing: early.value))")
            return
        }
        // The pin check ran inside verification (issue 25, defect 2): the client ended the handshake at the
        // server's Certificate message, so the server never finished its handshake (no Finished went out).
        #expect(pair.serverRecorder.serverCompleted == nil)
        #expect(pair.serverRecorder.plaintext.isEmpty)
        #expect(pair.clientRecorder.plaintext.isEmpty)
        #expect(!pair.client.isActive)
        #expect(pair.clientRecorder.inactive)
        #expect(!pair.clientRecorder.uncleanShutdown)
    }

    @Test func writesBeforeTheHandshakeAreHeldUntilTheChecksPass() throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client(pins: ["intermediate-2", "backup-intermediate"]), server: Self.server)
        defer { pair.finish() }
        try pair.connect()
        let early = pair.write("GET / HTTP/1.1\r\n\r\n", on: pair.client)

        // Flight 1: the ClientHello only; the server decrypts nothing from it.
        #expect(try pair.deliver(from: pair.client, to: pair.server))
        #expect(pair.serverRecorder.plaintext.isEmpty)
        #expect(early.value == nil)
        // Flight 2: the server's handshake reaches the client, whose checks pass: the write goes out.
        #expect(try pair.deliver(from: pair.server, to: pair.client))
        #expect(pair.clientRecorder.completed != nil)
        guard case .success? = early.value else {
            Issue.record("the buffered write should be sent once the checks passed, got \(String(describing: early.value))")
            return
        }
        try pair.shuttle()
        #expect(pair.serverRecorder.text == "GET / HTTP/1.1\r\n\r\n")
    }

    @Test func closeNotifyEndsBothSidesCleanly() throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client(pins: ["leaf-localhost-ecdsa", "backup-intermediate"]), server: Self.server)
        defer { pair.finish() }
        try pair.connect()
        try pair.shuttle()
        #expect(pair.clientRecorder.completed != nil)

        pair.server.close(promise: nil)
        #expect(pair.server.isActive == false)
        try pair.deliver(from: pair.server, to: pair.client)  // the server's close_notify
        #expect(!pair.client.isActive)
        #expect(pair.clientRecorder.inactive)
        #expect(!pair.clientRecorder.uncleanShutdown)
        #expect(pair.clientRecorder.errors.isEmpty)
        #expect(!pair.serverRecorder.uncleanShutdown)
    }

    @Test func transportCloseWithoutCloseNotifyIsReportedAsUnclean() throws {
        let pair = try EmbeddedTLSPair(
            client: Self.client(pins: ["leaf-localhost-ecdsa", "backup-intermediate"]), server: Self.server)
        defer { pair.finish() }
        try pair.connect()
        try pair.shuttle()
        // The connection goes away below the client's TLS handler, as when a FIN arrives.
        try pair.client.pipeline.syncOperations.context(handlerType: TLSHandler.self).close(promise: nil)
        #expect(pair.clientRecorder.inactive)
        #expect(pair.clientRecorder.uncleanShutdown)
        #expect(try EmbeddedTLSPair.written(by: pair.client).isEmpty, "no close_notify was sent")
    }

    @Test func resumedConnectionCarriesTheCachedChainAndVerdict() throws {
        let client = try Self.client(pins: ["intermediate-1", "backup-intermediate"])
        let server = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let first = try EmbeddedTLSPair(client: client, server: server)
        defer { first.finish() }
        try first.connect()
        try first.shuttle()  // includes the server's session tickets, read by the client after its checks
        let firstInfo = try #require(first.clientRecorder.completed)
        #expect(client.sessionCache.count == 1)

        let second = try EmbeddedTLSPair(client: client, server: server)
        defer { second.finish() }
        try second.connect()
        try second.shuttle()
        let secondInfo = try #require(second.clientRecorder.completed)
        #expect(secondInfo.resumed)
        #expect(secondInfo.presentedChain == nil)
        #expect(secondInfo.verifiedChain == firstInfo.verifiedChain)
        #expect(secondInfo.pinVerdict == firstInfo.pinVerdict)
        #expect(secondInfo.pinVerdict == .matched(pin: TestCertificates.pin("intermediate-1"), certificateIndex: 2))
        #expect(server.statistics.fullHandshakes == 1)
        #expect(server.statistics.resumptions == 1)
    }
}

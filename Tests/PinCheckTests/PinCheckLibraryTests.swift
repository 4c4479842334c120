import Foundation
import NIOPosix
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// The inspector's own parts: address parsing, pin syntax, the expiry warning with an injected clock, setup
/// errors, the connect and handshake timeouts.
@Suite("PinCheck library", .timeLimit(.minutes(3)))
struct PinCheckLibraryTests {
    @Test("HOST[:PORT] parsing", arguments: [
        ("example.com", "example.com", 443), ("example.com:8443", "example.com", 8443),
        ("[::1]:8443", "::1", 8443), ("[::1]", "::1", 443), ("::1", "::1", 443), ("127.0.0.1:1", "127.0.0.1", 1),
    ])
    func parsesAddresses(text: String, host: String, port: Int) throws {
        let address = try ServerAddress(parsing: text)
        #expect(address.host == host)
        #expect(address.port == port)
    }

    @Test("malformed addresses are refused", arguments: ["", "[::1", "[::1]x", "a:b:c", "host:0", "host:x", "ho st"])
    func refusesAddresses(text: String) {
        #expect(throws: ServerAddressError.self) { try ServerAddress(parsing: text) }
    }

    @Test("curl's sha256// syntax parses to the same pin")
    func curlPinSyntax() throws {
        let pin = TestCertificates.pin("root")
        #expect(try SPKIPin(pin.description.replacingOccurrences(of: "sha256/", with: "sha256//")) == pin)
        #expect(try SPKIPin(pin.description) == pin)
    }

    /// The leaf is valid until 2045-12-31T23:59:59Z; the clock says `now` (OpenSSL's own check uses the
    /// real time, so the chain still verifies).
    private func inspectStandardServer(now: String) async throws -> ServerReport {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let date = try #require(ISO8601DateFormatter().date(from: now))
        let report = try await ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port), serverName: "localhost",
            pins: [TestCertificates.pin("leaf-localhost-ecdsa"), TestCertificates.pin("backup-intermediate")],
            trustAnchorsPEM: TestCertificates.certificate("root"), timeout: .seconds(60), now: { date }
        ).inspect()
        try await server.shutdown()
        return report
    }

    @Test("a leaf expiring within 30 days (30 included) is warned about; 31 days is not", arguments: [
        ("2045-12-21T00:00:00Z", 10, true), ("2045-12-01T23:59:59Z", 30, true), ("2045-11-30T23:59:59Z", 31, false),
    ])
    func expiryWarning(now: String, daysLeft: Int, warned: Bool) async throws {
        let report = try await inspectStandardServer(now: now)
        #expect(report.verdict == .ok)
        #expect(report.verifiedChain.first?.daysLeft == daysLeft)
        let warning = report.warnings.first { $0.contains("expires within 30 days, in \(daysLeft) days") }
        #expect((warning != nil) == warned, "warnings: \(report.warnings)")
    }

    @Test("trust anchors that do not load are the caller's input; nothing is connected")
    func badAnchorsAreInputErrors() async throws {
        let inspector = ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: 1), trustAnchorsPEM: "not a certificate")
        await #expect {
            _ = try await inspector.inspect()
        } throws: { error in
            (error as? TLSContextError)?.kind == .trustAnchors
        }
        #expect(throws: TLSContextError.self) {
            _ = try TLSClientContext(configuration: TLSClientConfiguration(trustRoots: .pem("", addingToSystem: false)))
        }
        let context = try TLSClientContext(
            configuration: TLSClientConfiguration(trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false)))
        #expect(context.configuration.trustRoots != .system)
    }

    @Test("a name that cannot carry pins is an input error")
    func unpinnableNameIsAnInputError() async throws {
        let inspector = ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: 1), serverName: "not a host name",
            pins: [TestCertificates.pin("root")], trustAnchorsPEM: TestCertificates.certificate("root"))
        await #expect {
            _ = try await inspector.inspect()
        } throws: { error in
            (error as? TLSContextError)?.kind == .invalidInput
        }
    }

    @Test("the timeout says which step ran out: connect (never accepted) or handshake (no ServerHello)")
    func connectAndHandshakeTimeouts() async throws {
        let stalled = try StalledListener()
        defer { stalled.close() }
        let mute = try await VectorServer.start(for: PinCheckVector.all.first { $0.server == "mute" }!)
        // Both wait out the same short timeout, side by side; it is long enough for a loopback connect to
        // complete on a loaded machine. They run on loops of their own, as the vector tests do: NIO runs the timers
        // that came due while a loop was held up before it polls for I/O again, so a loop shared with every other
        // suite turned the mute server's completed connect into a connect timeout (seen once, under ASan).
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        func inspect(_ port: Int) async throws -> ServerReport {
            try await ServerInspector(
                address: ServerAddress(host: "127.0.0.1", port: port), serverName: "localhost",
                trustAnchorsPEM: TestCertificates.certificate("root"), timeout: .seconds(2)
            ).inspect(group: group)
        }
        async let neverAccepted = inspect(stalled.port)
        async let neverAnswered = inspect(mute.port)
        let reports: [ServerReport]
        do {
            reports = try await [neverAccepted, neverAnswered]
        } catch {
            try? await group.shutdownGracefully()  // a set-up failure: the group is not left running
            throw error
        }
        try await group.shutdownGracefully()
        await mute.stop()
        #expect(reports.map(\.verdict) == [.connectFailed, .connectFailed])
        #expect(reports.map { $0.reason ?? "" } == ["connect timeout", "handshake timeout"])
    }
}

/// The inspector offers h2 and http/1.1 in ALPN, as the transport does, so it also checks servers that speak
/// HTTP/2 only, and reports what they chose.
@Suite(.timeLimit(.minutes(3))) struct PinCheckHTTP2OnlyTests {
    @Test func anHTTP2OnlyServerIsInspectedAndItsALPNShown() async throws {
        let server = try await LoopbackHTTP2Server.start(applicationProtocols: ["h2"])
        let report = try await ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port), serverName: "localhost",
            pins: [TestCertificates.pin("leaf-localhost-ecdsa")], trustAnchorsPEM: TestCertificates.certificate("root"),
            timeout: .seconds(60)
        ).inspect()
        #expect(report.verdict == .ok)
        #expect(report.alpn == "h2")
        try await server.shutdown()
    }
}

import Foundation
import HTTPTypes
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// The public HTTPS transport end to end over real TLS: ShopKit's OpenSSL handler in both roles on 127.0.0.1.
@Suite(.timeLimit(.minutes(3))) struct PinnedTransportTests {
    private static func transport(pins: [String]) throws -> HTTPSTransport {
        let pinSets = [try PinSet(hostPattern: HostPattern("localhost"), pins: pins.map(TestCertificates.pin))]
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: pinSets))
        return try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: tls, timeouts: .wide()))
    }

    private static func startServer() async throws -> LoopbackTLSServer {
        try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
    }

    @Test func keptAliveRequestsCostOneHandshake() async throws {
        let server = try await Self.startServer()
        let transport = try Self.transport(pins: ["leaf-localhost-ecdsa", "backup-intermediate"])
        let base = URL(string: "https://localhost:\(server.port)")!
        for _ in 0..<5 {
            let (response, body) = try await transport.fetch(baseURL: base)
            #expect(response.status == .ok)
            #expect(body == Array("hello".utf8))
        }
        #expect(server.fullHandshakes == 1)
        #expect(server.resumptions == 0)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func backupIntermediatePinIsEnough() async throws {
        let server = try await Self.startServer()
        let transport = try Self.transport(pins: ["intermediate-2", "backup-intermediate"])
        let (response, _) = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        #expect(response.status == .ok)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func mismatchingPinsFailWithTheReport() async throws {
        let server = try await Self.startServer()
        let transport = try Self.transport(pins: ["other-root", "other-intermediate"])
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        } throws: { error in
            guard let report = (error as? TLSError)?.pinFailureReport else { return false }
            return report.host == "localhost"
                && report.chainPins.first?.pin == TestCertificates.pin("leaf-localhost-ecdsa")
                && report.configuredPins == [TestCertificates.pin("other-root"), TestCertificates.pin("other-intermediate")]
        }
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func untrustedAnchorsFailBeforeAnyPin() async throws {
        let server = try await Self.startServer()
        let tls = TLSClientConfiguration(trustRoots: .pem(TestCertificates.certificate("other-root"), addingToSystem: false))
        let transport = try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: tls, timeouts: .wide()))
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        } throws: { error in
            guard (error as? TLSError)?.code == .untrustedChain else { return false }
            return true
        }
        await transport.shutdown()
        try await server.shutdown()
    }
}

/// The trust path's one canonical server name (issue: the name OpenSSL checks is the name the pins are looked up
/// under).
@Suite(.timeLimit(.minutes(3))) struct CanonicalServerNameTransportTests {
    /// Defect: `https://127.0.0.1.:PORT/` with pins that do not match connected and returned 200: OpenSSL checked
    /// the address 127.0.0.1, while the pins were looked up under `127.0.0.1.`, which no pin set covered.
    @Test func anIPAddressWithATrailingDotIsPinnedAsTheAddress() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let pins = ["other-root", "other-intermediate"].map(TestCertificates.pin)
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins)]))
        // A resolver that answers the dotted name with the address, as DNS does for `203.0.113.5.`.
        let transport = try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide(), connectAddresses: ["127.0.0.1.": "127.0.0.1"]))
        for host in ["127.0.0.1", "127.0.0.1."] {
            await #expect("\(host)") {
                _ = try await transport.fetch(baseURL: URL(string: "https://\(host):\(server.port)/")!)
            } throws: { error in
                guard let report = (error as? TLSError)?.pinFailureReport else { return false }
                return report.host == "127.0.0.1"
            }
        }
        #expect(server.counts.requests == 0, "no request byte went to a server whose pins did not match")
        await transport.shutdown()
        await server.stop()
    }

    /// Defect: a CR LF in the URL's host reached the proxy's CONNECT line, next to Proxy-Authorization.
    @Test func aHostWithCRLFIsTheCallersErrorAndReachesNoProxy() async throws {
        let proxy = try await LoopbackHTTPServer.start { _ in .closeWithoutResponse }
        let configuration = try ProxyConfiguration(
            url: URL(string: "http://127.0.0.1:\(proxy.port)")!, credentials: .init(username: "u", password: "p"))
        let transport = try HTTPSTransport(configuration: .init(tls: loopbackClientTLS, timeouts: .wide(), proxy: configuration))
        for base in ["https://localhost%0D%0AX:443/", "https://localhost%0AX-Injected:%201/", "https://a%20b/"] {
            guard let url = URL(string: base) else { continue }
            await #expect("\(base)") {
                _ = try await transport.fetch(baseURL: url)
            } throws: { error in
                guard (error as? HTTPSTransportError)?.code == .invalidURL else { return false }
                return true
            }
        }
        #expect(proxy.counts.accepted == 0, "nothing reached the proxy")
        await transport.shutdown()
        await proxy.stop()
    }
}

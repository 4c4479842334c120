import Foundation
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// An `https://` proxy: TLS to the proxy (its own trust, never the origin's pins), then the origin's TLS inside
/// the tunnel (TLS in TLS), against the in-process TLS proxy (tinyproxy cannot speak TLS to its clients).
@Suite(.timeLimit(.minutes(3))) struct HTTPSProxyTests {
    /// A proxy whose RSA leaf is on none of the origin's pins: were pins applied to it, every test would fail.
    private static func startProxy() async throws -> LoopbackTLSProxy {
        try await LoopbackTLSProxy.start(
            chain: ["leaf-localhost-rsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-rsa")
    }

    private static func proxyConfiguration(
        port: Int, anchor: String = "root", credentials: ProxyConfiguration.Credentials? = nil
    ) throws -> ProxyConfiguration {
        try ProxyConfiguration(
            url: URL(string: "https://127.0.0.1:\(port)")!, credentials: credentials,
            trustRoots: .pem(TestCertificates.certificate(anchor), addingToSystem: false))
    }

    @Test func theOriginIsPinnedInsideTheProxysTLS() async throws {
        let proxy = try await Self.startProxy()
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok(Array("tls in tls".utf8)) }
        let credentials = ProxyConfiguration.Credentials(username: "ci", password: "inside-tls")
        let transport = try HTTPSTransport(
            configuration: HTTPSTransport.Configuration(
                tls: loopbackClientTLS, timeouts: .wide(), proxy: Self.proxyConfiguration(port: proxy.port, credentials: credentials)))
        for _ in 0..<2 {
            let (response, body) = try await transport.fetch(baseURL: origin.baseURL)
            #expect(response.status == .ok)
            #expect(body == Array("tls in tls".utf8))
        }
        // One tunnel, kept alive; the credentials went to the proxy (inside its TLS), not to the origin.
        #expect(proxy.requests.count == 1)
        #expect(proxy.requests.first?.contains("Proxy-Authorization: \(credentials.authorizationValue)") == true)
        #expect(origin.counts.accepted == 1)
        #expect(!(origin.requests.first?.headers.contains { $0.name.lowercased().hasPrefix("proxy-") } ?? true))
        await transport.shutdown()
        await origin.stop()
        try await proxy.shutdown()
    }

    @Test func anUntrustedProxyIsTheProxysTLSError() async throws {
        let proxy = try await Self.startProxy()
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = try HTTPSTransport(
            configuration: HTTPSTransport.Configuration(
                tls: loopbackClientTLS, timeouts: .wide(), proxy: Self.proxyConfiguration(port: proxy.port, anchor: "other-root")))
        await #expect {
            _ = try await transport.fetch(baseURL: origin.baseURL)
        } throws: { error in
            guard (error as? HTTPSTransportError)?.proxyTLSError?.code == .untrustedChain else { return false }
            return true
        }
        #expect(proxy.requests.isEmpty)
        #expect(origin.counts.accepted == 0)
        await transport.shutdown()
        await origin.stop()
        try await proxy.shutdown()
    }

    @Test func anOriginPinMismatchInsideTheProxysTLSIsTheOriginsError() async throws {
        let proxy = try await Self.startProxy()
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let pins = ["other-root", "other-intermediate"].map(TestCertificates.pin)
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins)]))
        let transport = try HTTPSTransport(
            configuration: HTTPSTransport.Configuration(tls: tls, timeouts: .wide(), proxy: Self.proxyConfiguration(port: proxy.port)))
        await #expect {
            _ = try await transport.fetch(baseURL: origin.baseURL)
        } throws: { error in
            guard let report = (error as? TLSError)?.pinFailureReport else { return false }
            return report.chainPins.first?.pin == TestCertificates.pin("leaf-localhost-ecdsa")
        }
        #expect(origin.counts.requests == 0)
        await transport.shutdown()
        await origin.stop()
        try await proxy.shutdown()
    }
}

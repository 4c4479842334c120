import Foundation
import HTTPTypes
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// The public transport through a real tinyproxy (Debian's package) to the in-process pinned origins on
/// 127.0.0.1: the tunnel, pins inside it, proxy authentication, refusals, NO_PROXY and HTTP/2.
@Suite(.timeLimit(.minutes(3))) struct TinyproxyTunnelTests {
    static let user = "shopkit"
    static let password = "tunnel-s3cret"

    /// A transport built with the public initializer (real OpenSSL, pinned to the loopback chain) through `proxy`.
    private static func transport(
        through proxy: ProxyConfiguration, tls: TLSClientConfiguration = loopbackClientTLS,
        httpVersion: HTTPSTransport.HTTPVersionPolicy = .automatic
    ) throws -> HTTPSTransport {
        try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: tls, timeouts: .wide(), httpVersion: httpVersion, proxy: proxy))
    }

    @Test func requestsGoThroughTheTunnelWithPinsAndOneConnection() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok(Array("through the tunnel".utf8)) }
        let transport = try Self.transport(through: ProxyConfiguration(url: proxy.url))
        for _ in 0..<3 {
            let (response, body) = try await transport.fetch(baseURL: origin.baseURL)
            #expect(response.status == .ok)
            #expect(body == Array("through the tunnel".utf8))
        }
        try await proxy.waitForConnects(1)
        // Kept alive inside one tunnel: one CONNECT, one TLS connection at the origin.
        #expect(proxy.connectTargets == ["127.0.0.1:\(origin.port)"])
        #expect(origin.counts.accepted == 1)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func aPinMismatchThroughTheTunnelIsTheOriginsTLSError() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let pins = ["other-root", "other-intermediate"].map(TestCertificates.pin)
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins)]))
        let transport = try Self.transport(through: ProxyConfiguration(url: proxy.url), tls: tls)
        await #expect {
            _ = try await transport.fetch(baseURL: origin.baseURL)
        } throws: { error in
            guard let report = (error as? TLSError)?.pinFailureReport else { return false }
            return report.host == "127.0.0.1"
                && report.chainPins.first?.pin == TestCertificates.pin("leaf-localhost-ecdsa")
        }
        try await proxy.waitForConnects(1)
        #expect(origin.counts.requests == 0)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func rightCredentialsOpenTheTunnelAndNeverReachTheOrigin() async throws {
        let proxy = try await TinyproxyServer.start(.init(basicAuth: (Self.user, Self.password)))
        defer { proxy.stop() }
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let credentials = ProxyConfiguration.Credentials(username: Self.user, password: Self.password)
        let transport = try Self.transport(through: ProxyConfiguration(url: proxy.url, credentials: credentials))
        let (response, _) = try await transport.fetch(baseURL: origin.baseURL)
        #expect(response.status == .ok)
        let headers = try #require(origin.requests.first).headers
        #expect(!headers.contains { $0.name.lowercased().hasPrefix("proxy-") })
        #expect(!headers.contains { $0.value.contains(Credentials.encoded(Self.user, Self.password)) })
        await transport.shutdown()
        await origin.stop()
    }

    @Test func missingOrWrongCredentialsAreProxyAuthenticationRequired() async throws {
        let proxy = try await TinyproxyServer.start(.init(basicAuth: (Self.user, Self.password)))
        defer { proxy.stop() }
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        for credentials in [nil, ProxyConfiguration.Credentials(username: Self.user, password: "wrong")] {
            let transport = try Self.transport(through: ProxyConfiguration(url: proxy.url, credentials: credentials))
            await #expect(throws: HTTPSTransportError.proxyAuthenticationRequired) {
                _ = try await transport.fetch(baseURL: origin.baseURL)
            }
            await transport.shutdown()
        }
        #expect(HTTPSTransportError.proxyAuthenticationRequired.isRetryable == false)
        #expect(origin.counts.accepted == 0)
        await origin.stop()
    }

    @Test func aProxyThatRefusesConnectIsProxyRefused() async throws {
        let proxy = try await TinyproxyServer.start(.init(allowsConnect: false))
        defer { proxy.stop() }
        let origin = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = try Self.transport(through: ProxyConfiguration(url: proxy.url))
        await #expect(throws: HTTPSTransportError.proxyRefused(status: 403)) {
            _ = try await transport.fetch(baseURL: origin.baseURL)
        }
        #expect(origin.counts.accepted == 0)
        await transport.shutdown()
        await origin.stop()
    }

    @Test func noProxyHostsAreReachedDirectly() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let bypassed = try await LoopbackHTTPServer.startTLS { _ in .ok(Array("direct".utf8)) }
        let proxied = try await LoopbackHTTPServer.startTLS { _ in .ok(Array("proxied".utf8)) }
        // From the environment, opted in explicitly: only the first origin's port is excluded.
        let configuration = try #require(
            try ProxyConfiguration.fromEnvironment([
                "HTTPS_PROXY": proxy.url.absoluteString, "NO_PROXY": "example.test, 127.0.0.1:\(bypassed.port)",
            ]))
        let transport = try Self.transport(through: configuration)
        #expect(try await transport.fetch(baseURL: bypassed.baseURL).1 == Array("direct".utf8))
        #expect(try await transport.fetch(baseURL: proxied.baseURL).1 == Array("proxied".utf8))
        try await proxy.waitForConnects(1)
        // tinyproxy logs in order: had the first request gone through it, its CONNECT would come first.
        #expect(proxy.connectTargets == ["127.0.0.1:\(proxied.port)"])
        await transport.shutdown()
        await bypassed.stop()
        await proxied.stop()
    }

    @Test func http2RunsInsideTheTunnel() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let origin = try await LoopbackHTTP2Server.start()
        let transport = try Self.transport(through: ProxyConfiguration(url: proxy.url), httpVersion: .http2Only)
        let base = URL(string: "https://127.0.0.1:\(origin.port)")!
        async let first = transport.fetch(baseURL: base)
        async let second = transport.fetch(baseURL: base)
        let bodies = try await [first.1, second.1]
        #expect(bodies == [Array("h2".utf8), Array("h2".utf8)])
        try await proxy.waitForConnects(1)
        #expect(proxy.connectTargets == ["127.0.0.1:\(origin.port)"])
        #expect(origin.counts.connections == 1)
        await transport.shutdown()
        try await origin.shutdown()
    }
}

/// The proxy's own failures that tinyproxy does not produce on demand, against scripted loopback servers.
@Suite(.timeLimit(.minutes(3))) struct ScriptedProxyFailureTests {
    @Test func aProxyThatClosesDuringConnectIsProxyClosed() async throws {
        let fakeProxy = try await LoopbackHTTPServer.start { _ in .closeWithoutResponse }
        let proxy = try ProxyConfiguration(url: URL(string: "http://127.0.0.1:\(fakeProxy.port)")!)
        let transport = try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: loopbackClientTLS, timeouts: .wide(), proxy: proxy))
        await #expect(throws: HTTPSTransportError.proxyClosed) {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:1")!)
        }
        #expect(HTTPSTransportError.proxyClosed.isRetryable)
        await transport.shutdown()
        await fakeProxy.stop()
    }

    @Test func a502FromTheProxyIsProxyRefusedAndRetryable() async throws {
        let fakeProxy = try await LoopbackHTTPServer.start { _ in
            .raw(Array("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n".utf8), close: true)
        }
        let proxy = try ProxyConfiguration(url: URL(string: "http://127.0.0.1:\(fakeProxy.port)")!)
        let transport = try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: loopbackClientTLS, timeouts: .wide(), proxy: proxy))
        await #expect(throws: HTTPSTransportError.proxyRefused(status: 502)) {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:1")!)
        }
        #expect(HTTPSTransportError.proxyRefused(status: 502).isRetryable)
        await transport.shutdown()
        await fakeProxy.stop()
    }

    @Test func anUnreachableProxyIsProxyConnectFailedNotTheOrigins() async throws {
        let closed = try BoundClosedPort()
        defer { closed.release() }
        let proxy = try ProxyConfiguration(url: URL(string: "http://127.0.0.1:\(closed.port)")!)
        let transport = try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: loopbackClientTLS, timeouts: .wide(), proxy: proxy))
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:443")!)
        } throws: { error in
            guard let error = error as? HTTPSTransportError, error.code == .proxyConnectFailed, let (host, port) = error.endpoint else { return false }
            return host == "127.0.0.1" && port == closed.port
        }
        await transport.shutdown()
    }
}

/// The Basic value of `user:password`, to look for it where it must not be.
enum Credentials {
    static func encoded(_ user: String, _ password: String) -> String {
        Data("\(user):\(password)".utf8).base64EncodedString()
    }
}

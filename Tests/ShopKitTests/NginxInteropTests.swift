import Foundation
import ShopKit
import TestSupport
import Testing

/// ShopKit's stack against a real nginx on 127.0.0.1 serving the TestCerts chain.
@Suite(.timeLimit(.minutes(3))) struct NginxInteropTests {
    struct Widget: Decodable, Sendable, Equatable {
        let id: Int
        let name: String
        let tags: [String]
    }

    struct GetWidget: APIRequest {
        typealias Response = Widget
        var path: String { "/json" }
        var requiresAuth: Bool { false }
    }

    private static let oneMiB = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    private static func startNginx() throws -> NginxServer {
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-chain-\(UUID()).pem")
        try TestCertificates.standardChain().write(to: chain, atomically: true, encoding: .utf8)
        return try NginxServer(
            configuration: .init(
                certificateChainPath: chain.path,
                privateKeyPath: TestCertificates.directory.appendingPathComponent("leaf-localhost-ecdsa.key").path,
                files: ["1m.bin": oneMiB]))
    }

    private static func https(pins: [String]) throws -> HTTPSTransport.Configuration {
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [
                try PinSet(hostPattern: HostPattern("localhost"), pins: pins.map(TestCertificates.pin))
            ]))
        return HTTPSTransport.Configuration(tls: tls, timeouts: .wide())
    }

    private static let configuration = ShopKitConfiguration(
        auth: .init(
            tokenStore: InMemoryTokenStore(), tokenRefresher: CountingRefresher(returning: AuthTokens(accessToken: "unused"))))

    private static func baseURL(port: Int) -> URL { URL(string: "https://localhost:\(port)")! }

    @Test func apiClientDecodesThroughPinnedTransport() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let (client, transport) = try ShopKitFactory.makeAPIClient(
            baseURL: Self.baseURL(port: nginx.port), configuration: Self.configuration, https: Self.https(pins: ["leaf-localhost-ecdsa", "backup-intermediate"]))
        let widget = try await client.send(GetWidget())
        #expect(widget == Widget(id: 42, name: "ShopKit", tags: ["tls", "pinning"]))
        await transport.shutdown()
    }

    @Test func pinMismatchReachesTheCallerAsTransportError() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let (client, transport) = try ShopKitFactory.makeAPIClient(
            baseURL: Self.baseURL(port: nginx.port), configuration: Self.configuration, https: Self.https(pins: ["other-root", "other-intermediate"]))
        await #expect {
            _ = try await client.send(GetWidget())
        } throws: { error in
            guard case .transport(let cause)? = error as? APIError, (cause as? TLSError)?.code == .pinMismatch else {
                return false
            }
            return true
        }
        await transport.shutdown()
    }

    @Test func oneMebibyteBodyAndKeepAlive() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let transport = try HTTPSTransport(configuration: Self.https(pins: ["intermediate-2", "backup-intermediate"]))
        let base = URL(string: "https://localhost:\(nginx.port)")!
        for _ in 0..<3 {
            let (response, body) = try await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/files/1m.bin"), body: nil,
                baseURL: base, operationID: "interop")
            #expect(response.status == .ok)
            let bytes = try await [UInt8](collecting: #require(body), upTo: 2 << 20)
            #expect(bytes.count == Self.oneMiB.count && Data(bytes) == Self.oneMiB)
        }
        let (hello, helloBody) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hello"), body: nil, baseURL: base,
            operationID: "interop")
        #expect(hello.status == .ok)
        let text = try await String(collecting: #require(helloBody), upTo: 1024)
        #expect(text == NginxServer.helloBody, "\(nginx.errorLog)")
        await transport.shutdown()
    }
}

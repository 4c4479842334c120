import Foundation
import ShopKit
import TestSupport
import Testing

/// ShopKit's transport against a real nginx with `http2` on: HTTP/2 by default, pins enforced, TLS 1.2 and 1.3,
/// and HTTP/1.1 when asked for.
@Suite(.timeLimit(.minutes(3))) struct NginxHTTP2Tests {
    private static let oneMiB = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 17) })

    private static func startNginx(protocols: String = "TLSv1.2 TLSv1.3") throws -> NginxServer {
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-chain-\(UUID()).pem")
        try TestCertificates.standardChain().write(to: chain, atomically: true, encoding: .utf8)
        return try NginxServer(
            configuration: .init(
                certificateChainPath: chain.path,
                privateKeyPath: TestCertificates.directory.appendingPathComponent("leaf-localhost-ecdsa.key").path,
                protocols: protocols, files: ["1m.bin": oneMiB], http2: true))
    }

    private static func transport(
        pins: [String] = ["leaf-localhost-ecdsa", "backup-intermediate"],
        httpVersion: HTTPSTransport.HTTPVersionPolicy = .automatic, minimumVersion: TLSClientConfiguration.MinimumVersion = .tls12
    ) throws -> HTTPSTransport {
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [
                try PinSet(hostPattern: HostPattern("localhost"), pins: pins.map(TestCertificates.pin))
            ]),
            minimumVersion: minimumVersion)
        return try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide(), httpVersion: httpVersion))
    }

    private static func get(_ path: String, _ transport: HTTPSTransport, port: Int) async throws -> (HTTPResponse, [UInt8]) {
        let (response, body) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: path), body: nil,
            baseURL: URL(string: "https://localhost:\(port)")!, operationID: "h2")
        guard let body else { return (response, []) }
        return (response, try await [UInt8](collecting: body, upTo: 2 << 20))
    }

    @Test(arguments: ["TLSv1.2", "TLSv1.3"])
    func aDefaultTransportSpeaksHTTP2ToNginx(tlsVersion: String) async throws {
        let nginx = try Self.startNginx(protocols: tlsVersion)
        defer { nginx.stop() }
        let transport = try Self.transport()
        let (response, body) = try await Self.get("/protocol", transport, port: nginx.port)
        #expect(response.status == .ok)
        #expect(String(decoding: body, as: UTF8.self) == "HTTP/2.0", "\(nginx.errorLog)")
        await transport.shutdown()
    }

    @Test func oneMebibyteAndConcurrentRequestsOverHTTP2() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let transport = try Self.transport()
        let port = nginx.port
        try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 { group.addTask { try await Self.get("/files/1m.bin", transport, port: port).1 } }
            for try await bytes in group { #expect(Data(bytes) == Self.oneMiB) }
        }
        #expect(String(decoding: try await Self.get("/protocol", transport, port: port).1, as: UTF8.self) == "HTTP/2.0")
        await transport.shutdown()
    }

    @Test func pinsAreEnforcedOverHTTP2() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let transport = try Self.transport(pins: ["other-root", "other-intermediate"])
        await #expect {
            _ = try await Self.get("/protocol", transport, port: nginx.port)
        } throws: { error in
            guard (error as? TLSError)?.code == .pinMismatch else { return false }
            return true
        }
        await transport.shutdown()
    }

    @Test func http1OnlyGetsHTTP1FromAnHTTP2Server() async throws {
        let nginx = try Self.startNginx()
        defer { nginx.stop() }
        let transport = try Self.transport(httpVersion: .http1Only)
        #expect(String(decoding: try await Self.get("/protocol", transport, port: nginx.port).1, as: UTF8.self) == "HTTP/1.1")
        await transport.shutdown()
    }
}

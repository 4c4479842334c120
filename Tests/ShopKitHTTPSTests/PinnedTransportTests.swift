import Foundation
import HTTPTypes
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// The public HTTPS transport end to end over real TLS: ShopKit's OpenSSL handler in both roles on 127.0.0.1.
@Suite struct PinnedTransportTests {
    private static func transport(pins: [String]) throws -> HTTPSTransport {
        let pinSets = [try PinSet(hostPattern: HostPattern("localhost"), pins: pins.map(TestCertificates.pin))]
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: pinSets))
        return try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: tls))
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
            guard case .pinMismatch(let report)? = error as? TLSError else { return false }
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
        let transport = try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: tls))
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        } throws: { error in
            guard case .untrustedChain? = error as? TLSError else { return false }
            return true
        }
        await transport.shutdown()
        try await server.shutdown()
    }
}

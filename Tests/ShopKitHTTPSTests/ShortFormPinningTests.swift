import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

@testable import ShopKitHTTPS

/// `HTTPSTransport(pinning:)`, the short form, over real TLS on 127.0.0.1 (ShopKit's server role).
@Suite(.timeLimit(.minutes(3))) struct ShortFormPinningTests {
    static let leaf = TestCertificates.pin("leaf-localhost-ecdsa").description
    static let backup = TestCertificates.pin("backup-intermediate").description

    private static func startServer() async throws -> LoopbackTLSServer {
        try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
    }

    /// The test root as the only anchor: the short form's one other TLS input.
    static let testRoot = TLSClientConfiguration.TrustRoots.pem(TestCertificates.certificate("root"), addingToSystem: false)

    @Test func matchingPinsConnect() async throws {
        let server = try await Self.startServer()
        let transport = try HTTPSTransport(pinning: ["localhost": [Self.leaf, Self.backup]], trustRoots: Self.testRoot, timeouts: .wide())
        let (response, body) = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        #expect(response.status == .ok)
        #expect(body == Array("hello".utf8))
        #expect(transport.pinning.pinSets == [try PinSet(host: "localhost", pins: [Self.leaf, Self.backup])])
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func mismatchingPinsAreRefused() async throws {
        let server = try await Self.startServer()
        let others = ["other-root", "other-intermediate"].map { TestCertificates.pin($0).description }
        let transport = try HTTPSTransport(pinning: ["localhost": others], trustRoots: Self.testRoot, timeouts: .wide())
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        } throws: { error in
            guard let error = error as? TLSError, error.code == .pinMismatch, let report = error.pinFailureReport else {
                return false
            }
            return report.host == "localhost" && report.configuredPins.map(\.description) == others
        }
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func strictShortFormRefusesAnUnlistedHost() async throws {
        let server = try await Self.startServer()
        let transport = try HTTPSTransport(
            pinning: ["api.example.com": [Self.leaf, Self.backup]], unpinnedHosts: .refuse, trustRoots: Self.testRoot, timeouts: .wide())
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://localhost:\(server.port)")!)
        } throws: { error in
            (error as? TLSError)?.code == .hostNotPinned
        }
        await transport.shutdown()
        try await server.shutdown()
    }

    /// A literal cannot throw: the transport's one configuration error names the entry at fault.
    @Test func aOnePinSetFailsWithTheConfigurationErrorNamingTheHost() throws {
        #expect {
            _ = try HTTPSTransport(pinning: ["api.example.com": [Self.leaf, Self.backup], "shop.example.com": [Self.leaf]])
        } throws: { error in
            guard let error = error as? TLSContextError else { return false }
            return error.kind == .invalidInput && error.host == "shop.example.com"
                && error.pinning == .pinSet(.singlePin(try! HostPattern("shop.example.com")))
                && error.description.contains("shop.example.com") && error.description.contains("backup")
        }
        #expect {
            _ = try HTTPSTransport(pinning: ["shop.example.com": ["sha256/!!", Self.backup]])
        } throws: { error in
            (error as? TLSContextError)?.host == "shop.example.com"
                && (error as? TLSContextError)?.description.contains("shop.example.com") == true
        }
    }
}

import Foundation
import HTTPTypes
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// Replacing a transport's pins while requests run: 32 requests in flight over HTTP/1.1 and over HTTP/2 while the
/// policy changes from pins A (the server's chain matches) to pins B (it does not).
@Suite(.timeLimit(.minutes(3))) struct LivePinningTests {
    static let pinsA = ["leaf-localhost-ecdsa", "backup-intermediate"]
    static let pinsB = ["other-root", "other-intermediate"]

    static func policy(_ pins: [String], version: Int) -> PinningPolicy {
        PinningPolicy(
            pinSets: [try! PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins.map(TestCertificates.pin))],
            version: version)
    }

    static func transport(
        httpVersion: HTTPSTransport.HTTPVersionPolicy, maxConnections: Int = 32
    ) throws -> HTTPSTransport {
        var tls = loopbackClientTLS
        tls.pinning = policy(pinsA, version: 1)
        return try HTTPSTransport(
            configuration: .init(
                tls: tls, timeouts: .wide(), pool: .init(maxConnectionsPerHost: maxConnections), httpVersion: httpVersion))
    }

    /// Whether `error` is a pin mismatch refused by policy `version`.
    static func isMismatch(_ error: any Error, version: Int) -> Bool {
        guard let report = (error as? TLSError)?.pinFailureReport else { return false }
        return report.policyVersion == version && report.description.contains("pin policy version \(version)")
    }

    @Test func http1InFlightRequestsFinishAndNoneStartsOnAnOldConnection() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in request.uri == "/hold" ? .hold : .ok() }
        // Room for the late requests' own connections beside the 32 busy ones.
        let transport = try Self.transport(httpVersion: .http1Only, maxConnections: 64)
        // Warm the pool: one idle connection verified under A.
        #expect(try await transport.fetch(baseURL: server.baseURL).0.status == .ok)
        try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<32 {
                group.addTask { try await transport.fetch(.get, "/hold", baseURL: server.baseURL).1 }
            }
            try await server.waitUntil { $0.held == 32 }
            let before = server.counts
            #expect(before.accepted == 32)

            transport.replacePinning(Self.policy(Self.pinsB, version: 2))
            #expect(transport.pinning.version == 2)

            // After the swap no request starts on an old connection: each needs a new one, refused by B.
            await withTaskGroup(of: Bool.self) { late in
                for _ in 0..<32 {
                    late.addTask {
                        do {
                            _ = try await transport.fetch(baseURL: server.baseURL)
                            return false
                        } catch { return Self.isMismatch(error, version: 2) }
                    }
                }
                for await refused in late { #expect(refused) }
            }
            #expect(server.counts.requests == before.requests)

            // In-flight requests finish on their connections.
            server.releaseHeld()
            var bodies: [[UInt8]] = []
            for try await body in group { bodies.append(body) }
            #expect(bodies == Array(repeating: Array("released".utf8), count: 32))
        }
        // Their connections are not reused: every connection closes (the 32 verified under A once released).
        try await server.waitUntil { $0.closed == $0.accepted }
        await #expect { _ = try await transport.fetch(baseURL: server.baseURL) } throws: { Self.isMismatch($0, version: 2) }
        #expect(server.counts.requests == 33)
        await transport.shutdown()
        await server.stop()
    }

    @Test func http2InFlightStreamsFinishAndNoNewStreamOpensOnTheOldConnection() async throws {
        let server = try await LoopbackHTTP2Server.start { request in request.path == "/hold" ? .hold : .respond(body: []) }
        let transport = try Self.transport(httpVersion: .automatic)
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<32 {
                group.addTask { try await transport.fetch(.get, "/hold", baseURL: base).1 }
            }
            try await server.waitUntilHeld(32)
            #expect(server.counts.connections == 1)

            transport.replacePinning(Self.policy(Self.pinsB, version: 5))

            await withTaskGroup(of: Bool.self) { late in
                for _ in 0..<32 {
                    late.addTask {
                        do {
                            _ = try await transport.fetch(baseURL: base)
                            return false
                        } catch { return Self.isMismatch(error, version: 5) }
                    }
                }
                for await refused in late { #expect(refused) }
            }
            #expect(server.counts.requests == 32)

            server.releaseHeld()
            var bodies: [[UInt8]] = []
            for try await body in group { bodies.append(body) }
            #expect(bodies == Array(repeating: Array("released".utf8), count: 32))
        }
        #expect(server.counts.requests == 32)
        await transport.shutdown()
        try await server.shutdown()
    }

    /// Defect: when the last stream of a connection the new pins refuse was released, the pool closed the
    /// connection inside the read that carried the responses of its last streams, and the response heads held
    /// for the end of that read were lost: their callers waited for ever.
    @Test func http2StreamsAnsweredInTheReadThatClosesARefusedConnectionGetTheirResponses() async throws {
        let server = try await LoopbackHTTP2Server.start { request in request.path == "/hold" ? .hold : .respond(body: []) }
        let transport = try Self.transport(httpVersion: .automatic)
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        let held = (0..<3).map { _ in Task { try await transport.fetch(.get, "/hold", baseURL: base).1 } }
        try await server.waitUntilHeld(3)
        transport.replacePinning(Self.policy(Self.pinsB, version: 6))
        server.releaseHeldInOneWrite()
        for task in held { #expect(try await task.value == Array("released".utf8)) }
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aNewPolicyThatStillMatchesKeepsPooledConnections() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = try Self.transport(httpVersion: .http1Only)
        _ = try await transport.fetch(baseURL: server.baseURL)
        transport.replacePinning(Self.policy(["leaf-localhost-ecdsa", "intermediate-1"], version: 2))
        _ = try await transport.fetch(baseURL: server.baseURL)
        #expect(server.counts.accepted == 1)
        // Back to a policy the chain fails: the idle connection is closed at once, before any use.
        transport.replacePinning(Self.policy(Self.pinsB, version: 3))
        try await server.waitUntil { $0.closed == 1 }
        await #expect { _ = try await transport.fetch(baseURL: server.baseURL) } throws: { Self.isMismatch($0, version: 3) }
        #expect(server.counts.requests == 2)
        await transport.shutdown()
        await server.stop()
    }
}

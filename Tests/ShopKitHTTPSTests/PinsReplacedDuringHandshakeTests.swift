import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// Pins replaced while a connection's handshake runs: a relay holds the server's first flight, the test replaces
/// the pins, then lets the flight through. The handshake was started (and is verified) under the old policy; the
/// pool hands out no connection checked under pins that are no longer in force, and opens a new connection for
/// the request instead, checked under the new ones. So the request ends as it would have under the new pins
/// alone: refused with their pin mismatch, or answered on a connection they verified.
@Suite(.timeLimit(.minutes(3))) struct PinsReplacedDuringHandshakeTests {
    /// Pins the loopback chain matches (version 1 or 2, as the test says).
    static func matching(version: Int) -> PinningPolicy {
        LivePinningTests.policy(LivePinningTests.pinsA, version: version)
    }

    /// Pins the loopback chain does not match.
    static func mismatching(version: Int) -> PinningPolicy {
        LivePinningTests.policy(LivePinningTests.pinsB, version: version)
    }

    static func transport(
        pinning: PinningPolicy, httpVersion: HTTPSTransport.HTTPVersionPolicy
    ) throws -> HTTPSTransport {
        var tls = loopbackClientTLS
        tls.pinning = pinning
        return try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide(), httpVersion: httpVersion))
    }

    /// An HTTP/1.1 server with a TLS context of its own, so its handshake count is this test's alone.
    static func http1Server() async throws -> (LoopbackHTTPServer, TLSServerContext) {
        let tls = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let server = try await LoopbackHTTPServer.start(
            extraHandlers: { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(tls.makeHandler(), position: .first)
                }
            },
            script: { _ in .ok() })
        return (server, tls)
    }

    /// Starts a GET through `relay`, waits until the relay holds the server's first flight on the first
    /// connection, replaces the pins with `replacement`, releases the flight, and returns the request's outcome.
    static func fetchReplacingPinsDuringHandshake(
        _ transport: HTTPSTransport, relay: HoldingRelay, replacement: PinningPolicy
    ) async throws -> Result<[UInt8], any Error> {
        let base = URL(string: "https://127.0.0.1:\(relay.port)")!
        let request = Task { () -> Result<[UInt8], any Error> in
            do { return .success(try await transport.fetch(baseURL: base).1) } catch { return .failure(error) }
        }
        do {
            try await relay.waitUntilHolding(1)
        } catch {
            request.cancel()
            throw error
        }
        transport.replacePinning(replacement)
        relay.release(1)
        return await request.value
    }

    @Test func http1PinsThatNoLongerMatchRefuseTheRequestAndTheOldConnectionSendsNothing() async throws {
        let (server, serverTLS) = try await Self.http1Server()
        let relay = try await HoldingRelay.start(to: server.port)
        let transport = try Self.transport(pinning: Self.matching(version: 1), httpVersion: .http1Only)

        let outcome = try await Self.fetchReplacingPinsDuringHandshake(
            transport, relay: relay, replacement: Self.mismatching(version: 2))

        // Refused as under the new pins alone: their mismatch, naming their version.
        if case .failure(let error) = outcome {
            #expect(LivePinningTests.isMismatch(error, version: 2), "\(error)")
        } else {
            Issue.record("the request succeeded on a connection verified under pins no longer in force")
        }
        // The first connection finished its handshake under the old pins and carried no request; the request's
        // own connection (the second) was refused by the new pins during its handshake.
        #expect(relay.accepted == 2)
        try await server.waitUntil { $0.closed == $0.accepted }
        #expect(server.counts.accepted == 2)
        #expect(server.requests.isEmpty)
        #expect(serverTLS.statistics.fullHandshakes == 1)

        await transport.shutdown()
        await relay.stop()
        await server.stop()
    }

    @Test func http1PinsThatNowMatchAnswerOnAConnectionVerifiedUnderThem() async throws {
        let (server, serverTLS) = try await Self.http1Server()
        let relay = try await HoldingRelay.start(to: server.port)
        let transport = try Self.transport(pinning: Self.mismatching(version: 1), httpVersion: .http1Only)

        let outcome = try await Self.fetchReplacingPinsDuringHandshake(
            transport, relay: relay, replacement: Self.matching(version: 2))

        #expect(try outcome.get() == Array("ok".utf8))
        // The first connection was refused under the old pins; the request ran on the second, verified under the
        // new ones.
        #expect(relay.accepted == 2)
        #expect(server.requests.map(\.connection) == [2])
        try await server.waitUntil { $0.closed >= 1 }
        #expect(serverTLS.statistics.fullHandshakes == 1)
        // And that connection is pooled as any other.
        #expect(try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(relay.port)")!).1 == Array("ok".utf8))
        #expect(server.requests.map(\.connection) == [2, 2])

        await transport.shutdown()
        await relay.stop()
        await server.stop()
    }

    @Test func http2PinsThatNoLongerMatchRefuseTheRequestAndTheOldConnectionOpensNoStream() async throws {
        let server = try await LoopbackHTTP2Server.start()
        let relay = try await HoldingRelay.start(to: server.port)
        let transport = try Self.transport(pinning: Self.matching(version: 1), httpVersion: .automatic)

        let outcome = try await Self.fetchReplacingPinsDuringHandshake(
            transport, relay: relay, replacement: Self.mismatching(version: 7))

        if case .failure(let error) = outcome {
            #expect(LivePinningTests.isMismatch(error, version: 7), "\(error)")
        } else {
            Issue.record("the request succeeded on a connection verified under pins no longer in force")
        }
        #expect(relay.accepted == 2)
        // Once the server closed the first connection it has read all the client sent there.
        try await relay.waitUntilServerClosed(1)
        #expect(server.counts.connections == 2)
        #expect(server.counts.requests == 0)

        await transport.shutdown()
        await relay.stop()
        try await server.shutdown()
    }

    @Test func http2PinsThatNowMatchAnswerOnAConnectionVerifiedUnderThem() async throws {
        let server = try await LoopbackHTTP2Server.start()
        let relay = try await HoldingRelay.start(to: server.port)
        let transport = try Self.transport(pinning: Self.mismatching(version: 1), httpVersion: .automatic)

        let outcome = try await Self.fetchReplacingPinsDuringHandshake(
            transport, relay: relay, replacement: Self.matching(version: 2))

        #expect(try outcome.get() == Array("h2".utf8))
        #expect(relay.accepted == 2)
        #expect(server.counts.connections == 2)
        #expect(server.counts.requests == 1)
        // The stream ran on the connection verified under the new pins, which stays in the pool.
        #expect(try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(relay.port)")!).1 == Array("h2".utf8))
        #expect(relay.accepted == 2)

        await transport.shutdown()
        await relay.stop()
        try await server.shutdown()
    }
}

import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP2
import OpenAPIRuntime
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// HTTP/2 over ALPN against swift-nio-http2's server side behind ShopKit's TLS server handler: one pinned
/// connection carrying many streams, the server's stream limit, GOAWAY, RST_STREAM, cancellation, and the
/// fallback to HTTP/1.1.
@Suite(.timeLimit(.minutes(3))) struct HTTP2TransportTests {
    func url(_ server: LoopbackHTTP2Server) -> URL { URL(string: "https://127.0.0.1:\(server.port)")! }

    func transport(
        pool: HTTPSTransport.Pool = .init(), httpVersion: HTTPSTransport.HTTPVersionPolicy = .automatic,
        tls: TLSClientConfiguration = loopbackClientTLS
    ) throws -> HTTPSTransport {
        HTTPSTransport(
            configuration: .init(timeouts: .wide(), pool: pool, httpVersion: httpVersion),
            security: try HTTPSTransport.makeSecurity(for: tls, httpVersion: httpVersion))
    }

    @Test func aDefaultTransportSpeaksHTTP2WhenTheServerChoosesIt() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            .respond(body: Array("\(request.method) \(request.path)".utf8))
        }
        let transport = try transport()
        let (response, body) = try await transport.fetch(.get, "/items?page=2", baseURL: url(server))
        #expect(response.status == .ok)
        #expect(String(decoding: body, as: UTF8.self) == "GET /items?page=2")
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func twoHundredRequestsInFlightShareOnePinnedConnection() async throws {
        let server = try await LoopbackHTTP2Server.start(maxConcurrentStreams: 250) { _ in .hold }
        let transport = try transport()
        let base = url(server)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 {
                group.addTask { String(decoding: try await transport.fetch(baseURL: base).1, as: UTF8.self) }
            }
            try await server.waitUntilHeld(200)
            #expect(server.counts.maxOpenStreams == 200)
            server.releaseHeld()
            var bodies: [String] = []
            for try await body in group { bodies.append(body) }
            #expect(bodies == Array(repeating: "released", count: 200))
        }
        #expect(server.counts.connections == 1)
        #expect(server.tlsContext.statistics.fullHandshakes == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func theServersStreamLimitIsRespected() async throws {
        let server = try await LoopbackHTTP2Server.start(maxConcurrentStreams: 10) { request in
            request.index <= 10 ? .hold : .respond(body: Array("after".utf8))
        }
        let transport = try transport(pool: .init(maxConnectionsPerHost: 1))
        let base = url(server)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await transport.fetch(baseURL: base).1.count } }
            try await server.waitUntilHeld(10)
            #expect(server.counts.requests == 10)  // the other 40 wait for a free stream
            server.releaseHeld()
            var completed = 0
            for try await _ in group { completed += 1 }
            #expect(completed == 50)
        }
        #expect(server.counts.maxOpenStreams <= 10)
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aSecondConnectionOpensOnlyWhenTheFirstIsFull() async throws {
        let server = try await LoopbackHTTP2Server.start(maxConcurrentStreams: 5) { _ in .hold }
        let transport = try transport(pool: .init(maxConnectionsPerHost: 4))
        let base = url(server)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { _ = try await transport.fetch(baseURL: base) } }
            try await server.waitUntilHeld(8)
            #expect(server.counts.connections == 2)  // 5 streams on the first, 3 on the second
            server.releaseHeld()
            try await group.waitForAll()
        }
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func goAwayMidBurstRetriesTheUnprocessedStreamsOnANewConnection() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index <= 20 ? .hold : .respond(body: Array("after goaway".utf8))
        }
        let transport = try transport()
        let base = url(server)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask { String(decoding: try await transport.fetch(baseURL: base).1, as: UTF8.self) }
            }
            try await server.waitUntilHeld(20)
            server.goAway(processing: 5)
            var bodies: [String: Int] = [:]
            for try await body in group { bodies[body, default: 0] += 1 }
            #expect(bodies == ["before goaway": 5, "after goaway": 15])
        }
        #expect(server.counts.connections == 2)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aNonIdempotentRequestAboveTheGoAwayIsNotResent() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index <= 2 ? .hold : .respond(body: Array("resent".utf8))
        }
        let transport = try transport()
        let base = url(server)
        let first = Task { try await transport.fetch(.get, baseURL: base) }
        try await server.waitUntilHeld(1)
        let second = Task { try await transport.fetch(.post, baseURL: base, body: HTTPBody("order")) }
        try await server.waitUntilHeld(2)
        server.goAway(processing: 1)
        #expect(try await first.value.0.status == .ok)
        // Named for what happened: the server's GOAWAY (NO_ERROR) left it unprocessed (it was reported as the
        // stream's side effect, streamReset(CANCEL)).
        await #expect(throws: HTTPSTransportError.refusedByGoAway(code: .noError)) { _ = try await second.value }
        #expect(server.counts.requests == 2)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aStreamResetByTheServerFailsOnlyThatRequest() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.path == "/reset" ? .reset(.internalError) : .hold
        }
        let transport = try transport()
        let base = url(server)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 {
                group.addTask { String(decoding: try await transport.fetch(baseURL: base).1, as: UTF8.self) }
            }
            try await server.waitUntilHeld(5)
            await #expect(throws: HTTPSTransportError.streamReset(code: .internalError)) {
                _ = try await transport.fetch(.get, "/reset", baseURL: base)
            }
            server.releaseHeld()
            var bodies: [String] = []
            for try await body in group { bodies.append(body) }
            #expect(bodies == Array(repeating: "released", count: 5))
        }
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func cancellingOneStreamLeavesTheOthers() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index <= 5 ? .hold : .respond(body: Array("later".utf8))
        }
        let transport = try transport()
        let base = url(server)
        let others = (0..<4).map { _ in Task { try await transport.fetch(baseURL: base) } }
        let cancelled = Task { try await transport.fetch(baseURL: base) }
        try await server.waitUntilHeld(5)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
        server.releaseHeld()
        for task in others { #expect(try await task.value.0.status == .ok) }
        // The connection is still the one: a new request needs no new handshake.
        #expect(try await transport.fetch(baseURL: base).0.status == .ok)
        // The cancelled stream was reset (before this last request's HEADERS, on the same connection); the
        // completed ones were not.
        #expect(server.counts.resets == 1)
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aBodyDroppedUnreadResetsItsStreamOnly() async throws {
        let big = Array(repeating: UInt8(7), count: 512 * 1024)
        let server = try await LoopbackHTTP2Server.start { request in
            .respond(body: request.path == "/big" ? big : Array("small".utf8))
        }
        let transport = try transport()
        let base = url(server)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/big")
        var (response, body) = try await transport.send(request, body: nil, baseURL: base, operationID: "big")
        #expect(response.status == .ok)
        body = nil  // dropped unread: the stream is reset, not read to the end
        _ = body
        #expect(try await transport.fetch(.get, "/small", baseURL: base).1 == Array("small".utf8))
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    /// A stream whose response was read to its end is closed by the protocol (END_STREAM both ways), never
    /// reset: an RST_STREAM per request is wasted work for both sides, and servers that guard against rapid
    /// resets (CVE-2023-44487) may count it against the client.
    @Test func completedStreamsAreNotReset() async throws {
        let server = try await LoopbackHTTP2Server.start { request in .respond(body: Array("\(request.index)".utf8)) }
        let transport = try transport()
        let base = url(server)
        for _ in 0..<5 { #expect(try await transport.fetch(baseURL: base).0.status == .ok) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { _ = try await transport.fetch(baseURL: base) } }
            try await group.waitForAll()
        }
        // Frames on one connection arrive in order: by the time the server answers this request, any reset
        // of the 25 streams before it has been counted.
        #expect(try await transport.fetch(baseURL: base).0.status == .ok)
        #expect(server.counts.requests == 26)
        #expect(server.counts.resets == 0)
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func trailersAreDroppedAndTheBodyIsComplete() async throws {
        let server = try await LoopbackHTTP2Server.start { _ in .respond(body: Array("with trailers".utf8), trailers: true) }
        let transport = try transport()
        #expect(try await transport.fetch(baseURL: url(server)).1 == Array("with trailers".utf8))
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func pinsAreCheckedBeforeAnyHTTP2Byte() async throws {
        let server = try await LoopbackHTTP2Server.start()
        var wrong = loopbackClientTLS
        wrong.pinning = PinningPolicy(pinSets: [
            try PinSet(
                hostPattern: HostPattern("127.0.0.1"),
                pins: ["backup-intermediate", "leaf-localhost-rsa"].map(TestCertificates.pin))
        ])
        let transport = try transport(tls: wrong)
        await #expect {
            _ = try await transport.fetch(baseURL: url(server))
        } throws: { error in
            guard (error as? TLSError)?.code == .pinMismatch else { return false }
            return true
        }
        #expect(server.counts.requests == 0)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func resumedHTTP2ConnectionsArePinnedToo() async throws {
        let server = try await LoopbackHTTP2Server.start()
        let security = try HTTPSTransport.makeSecurity(for: loopbackClientTLS)
        for _ in 0..<2 {
            // A transport of its own each time: a new connection, resuming the shared context's session.
            let transport = HTTPSTransport(configuration: .init(timeouts: .wide()), security: security)
            #expect(try await transport.fetch(baseURL: url(server)).1 == Array("h2".utf8))
            await transport.shutdown()
        }
        #expect(server.tlsContext.statistics.fullHandshakes == 1)
        #expect(server.tlsContext.statistics.resumptions == 1)
        try await server.shutdown()
    }

    @Test func anHTTP1OnlyServerGetsHTTP1() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let automatic = try transport()
        #expect(try await automatic.fetch(baseURL: URL(string: "https://127.0.0.1:\(server.port)")!).1 == Array("hello".utf8))
        await automatic.shutdown()

        let strict = try transport(httpVersion: .http2Only)
        // The server serves http/1.1 only and the client offered h2 only: no ALPN agreement at all.
        await #expect(throws: HTTPSTransportError.http2NotNegotiated(alpn: nil)) {
            _ = try await strict.fetch(baseURL: URL(string: "https://127.0.0.1:\(server.port)")!)
        }
        await strict.shutdown()
        try await server.shutdown()
    }

    @Test func http1OnlyNeverOffersH2() async throws {
        let server = try await LoopbackHTTP2Server.start(applicationProtocols: ["h2"])
        let transport = try transport(httpVersion: .http1Only)
        // The server speaks only HTTP/2 and the client offered only http/1.1: no ALPN agreement, so the client
        // speaks HTTP/1.1 and the HTTP/2 server refuses the bytes.
        await #expect(throws: (any Error).self) { _ = try await transport.fetch(baseURL: url(server)) }
        #expect(server.counts.requests == 0)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aSlowReaderSlowsOnlyItsOwnStream() async throws {
        let big = Array(repeating: UInt8(1), count: 4 * 1024 * 1024)
        let server = try await LoopbackHTTP2Server.start { request in
            .respond(body: request.path == "/big" ? big : Array("small".utf8))
        }
        let transport = try transport()
        let base = url(server)
        // A body nobody reads yet: its stream's window fills and the server stops sending it.
        let (response, unread) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/big"), body: nil, baseURL: base,
            operationID: "big")
        #expect(response.status == .ok)
        // Meanwhile other streams on the same connection go on.
        for _ in 0..<5 { #expect(try await transport.fetch(.get, "/small", baseURL: base).1 == Array("small".utf8)) }
        #expect(server.counts.connections == 1)
        // And the slow one is still whole when it is finally read.
        #expect(try await [UInt8](collecting: #require(unread), upTo: .max) == big)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aConnectionThatDiesFailsOnlyItsStreamsAndTheNextRequestReconnects() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index <= 3 ? .hold : .respond(body: Array("after".utf8))
        }
        let transport = try transport()
        let base = url(server)
        let held = (0..<3).map { _ in Task { try await transport.fetch(baseURL: base) } }
        try await server.waitUntilHeld(3)
        server.closeConnections()
        for task in held {
            await #expect(throws: HTTPSTransportError.self) { _ = try await task.value }
        }
        #expect(try await transport.fetch(baseURL: base).1 == Array("after".utf8))
        #expect(server.counts.connections == 2)
        await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aHeaderBlockOverTheLimitFailsThatRequestWithATransportError() async throws {
        let huge = String(repeating: "x", count: 100 * 1024)
        let server = try await LoopbackHTTP2Server.start { request in
            request.path == "/huge" ? .respond(headers: [("x-huge", huge)], body: []) : .respond(body: Array("fine".utf8))
        }
        let transport = try transport()
        let base = url(server)
        await #expect(throws: HTTPSTransportError.self) { _ = try await transport.fetch(.get, "/huge", baseURL: base) }
        // The client is not stuck: the next request gets its answer (on this connection or a new one).
        #expect(try await transport.fetch(.get, "/fine", baseURL: base).1 == Array("fine".utf8))
        await transport.shutdown()
        try await server.shutdown()
    }
}

import Foundation
import HTTPTypes
import NIOPosix
import ShopKitTLS
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// PINGs on real HTTP/2 connections (swift-nio-http2's server side behind ShopKit's TLS server handler): a
/// quiet connection that answers is kept; one whose peer vanished is closed, its streams fail with a ping
/// timeout long before their idle-read timeout, and the next request gets a new connection. The intervals are
/// short so that the tests finish quickly; they wait for events, never for time. The acknowledgement's deadline
/// is long wherever the server does answer, so that a loaded machine cannot make an answered PING look missed.
/// Server and client each run on an event loop of their own: on the shared loops, other tests running at the same
/// time (hundreds of connections) could hold up an acknowledgement past its deadline before the test means the
/// server to go silent.
@Suite(.timeLimit(.minutes(3))) struct HTTP2KeepaliveTransportTests {
    /// The server's loop and the client's.
    let serverLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clientLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    func start(_ script: @escaping LoopbackHTTP2Server.Script) async throws -> LoopbackHTTP2Server {
        try await LoopbackHTTP2Server.start(group: serverLoop, script: script)
    }

    func transport(timeouts: HTTPSTransport.Timeouts) throws -> HTTPSTransport {
        var configuration = HTTPSTransport.Configuration(timeouts: timeouts)
        configuration.eventLoopGroup = clientLoop
        return HTTPSTransport(
            configuration: configuration,
            security: try HTTPSTransport.makeSecurity(for: loopbackClientTLS, httpVersion: .automatic))
    }

    func transport(pingInterval: Duration?, pingTimeout: Duration) throws -> HTTPSTransport {
        try transport(timeouts: HTTPSTransport.Timeouts.wide(
            idleRead: .seconds(120), request: .seconds(120), http2PingInterval: pingInterval,
            http2PingTimeout: pingTimeout))
    }

    /// Stops both loops once a test is done with them.
    func stopLoops() async throws {
        try await serverLoop.shutdownGracefully()
        try await clientLoop.shutdownGracefully()
    }

    func url(_ server: LoopbackHTTP2Server) -> URL { URL(string: "https://127.0.0.1:\(server.port)")! }

    @Test func aQuietConnectionThatAnswersPingsIsKept() async throws {
        let server = try await start { request in
            request.index == 1 ? .hold : .respond(body: Array("h2".utf8))
        }
        let transport = try transport(pingInterval: .milliseconds(50), pingTimeout: .seconds(30))
        let base = url(server)
        let held = Task { try await transport.fetch(baseURL: base) }
        try await server.waitUntilHeld(1)
        // The held stream is silent: the client checks the connection, the server answers, nothing fails.
        try await server.waitUntilPinged(3)
        server.releaseHeld(body: Array("late".utf8))
        #expect(try await held.value.1 == Array("late".utf8))
        // Idle in the pool, it is pinged too, and still the one connection the next request uses.
        let pinged = server.counts.pings
        try await server.waitUntilPinged(pinged + 2)
        #expect(try await transport.fetch(baseURL: base).1 == Array("h2".utf8))
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
        try await stopLoops()
    }

    /// The acknowledgements of the client's own PINGs are inbound control frames, which swift-nio-http2 limits to
    /// 200 in 30 s by default: with a short interval a healthy connection was killed as a flood
    /// ("ExcessiveControlFrames"; seen under load, where the test above lasted past 10 s of 50 ms PINGs). The
    /// limit now allows for them.
    @Test func ownPingsAcknowledgedAreNotAFlood() async throws {
        let server = try await start { _ in .respond(body: Array("h2".utf8)) }
        let transport = try transport(pingInterval: .milliseconds(10), pingTimeout: .seconds(30))
        let base = url(server)
        #expect(try await transport.fetch(baseURL: base).1 == Array("h2".utf8))
        try await server.waitUntilPinged(260)
        #expect(try await transport.fetch(baseURL: base).1 == Array("h2".utf8))
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
        try await stopLoops()
    }

    @Test func theControlFrameLimitAllowsForOwnPings() {
        #expect(HTTP2Connection.controlFrameRateLimit(keepalive: nil).maximumCount == 200)
        let every50ms = HTTP2Connection.Keepalive(interval: .milliseconds(50), timeout: .seconds(1))
        #expect(HTTP2Connection.controlFrameRateLimit(keepalive: every50ms).maximumCount == 200 + 600 + 1)
        let every20s = HTTP2Connection.Keepalive(interval: .seconds(20), timeout: .seconds(1))
        #expect(HTTP2Connection.controlFrameRateLimit(keepalive: every20s).maximumCount == 200 + 2 + 1)
    }

    @Test func aVanishedPeerFailsItsStreamsWithAPingTimeoutAndTheNextRequestReconnects() async throws {
        let server = try await start { request in
            request.index <= 2 ? .hold : .respond(body: Array("after".utf8))
        }
        // Until the server goes silent its acknowledgements must count, even late ones: the deadline is 2 s.
        let transport = try transport(pingInterval: .milliseconds(100), pingTimeout: .seconds(2))
        let base = url(server)
        let held = (0..<2).map { _ in Task { try await transport.fetch(baseURL: base) } }
        try await server.waitUntilHeld(2)
        server.goSilent()
        for task in held {
            await #expect(throws: HTTPSTransportError.timeout(.ping)) { _ = try await task.value }
        }
        #expect(HTTPSTransportError.timeout(.ping).isRetryable)
        #expect(HTTPSTransportError.timeout(.ping).description == "ping timeout")
        // The dead connection was closed, not reused: the next request opens a second one.
        server.speakAgain()
        #expect(try await transport.fetch(baseURL: base).1 == Array("after".utf8))
        #expect(server.counts.connections == 2)
        await transport.shutdown()
        try await server.shutdown()
        try await stopLoops()
    }

    @Test func withoutPingsAVanishedPeerIsLeftToTheIdleReadTimeout() async throws {
        let server = try await start { _ in .hold }
        let transport = try transport(timeouts: HTTPSTransport.Timeouts.wide(idleRead: .milliseconds(300), http2PingInterval: nil))
        let held = Task { try await transport.fetch(baseURL: url(server)) }
        try await server.waitUntilHeld(1)
        server.goSilent()
        await #expect(throws: HTTPSTransportError.timeout(.idleRead)) { _ = try await held.value }
        #expect(server.counts.pings == 0)
        await transport.shutdown()
        try await server.shutdown()
        try await stopLoops()
    }
}

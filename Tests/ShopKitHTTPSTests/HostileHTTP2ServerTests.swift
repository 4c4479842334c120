import Foundation
import NIOCore
import NIOPosix
import ShopKitTLS
import HTTPTypes
import TestSupport
import Testing

@testable import ShopKitHTTPS

/// A hostile HTTP/2 server (swift-nio-http2's server side behind ShopKit's TLS server handler): a connection error
/// fails the connection's streams at once, naming the server, and the connection is never used again.
@Suite(.timeLimit(.minutes(3))) struct HostileHTTP2ServerTests {
    /// A transport whose idle-read and request timers are far away: a failure must not come from them.
    static func farTimersTransport(pings: Bool = true) throws -> HTTPSTransport {
        var timeouts = HTTPSTransport.Timeouts.wide(idleRead: .seconds(100), request: .seconds(110))
        if !pings { timeouts.http2PingInterval = nil }
        return HTTPSTransport(
            configuration: .init(timeouts: timeouts), security: try HTTPSTransport.makeSecurity(for: loopbackClientTLS))
    }

    /// Fetches `path`, which must fail at once as the server's fault, then `/next`, which must be answered.
    static func expectServersFault(
        _ path: String, on transport: HTTPSTransport, base: URL, _ why: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        do {
            _ = try await transport.fetch(.get, path, baseURL: base)
            Issue.record("\(why) must fail the request", sourceLocation: sourceLocation)
        } catch {
            #expect(
                isTransportError(error, code: .malformedResponse), "the server's fault, not a timeout: \(error)",
                sourceLocation: sourceLocation)
        }
        let (_, body) = try await transport.fetch(.get, "/next", baseURL: base)
        #expect(String(decoding: body, as: UTF8.self) == "/next", sourceLocation: sourceLocation)
    }

    /// Defect: a response header block over the client's 64 KiB limit (a connection error in swift-nio-http2,
    /// which sends GOAWAY but leaves the connection open) failed the request only when `idleRead` ran out, and the
    /// next request went out on the same dead connection.
    @Test func anOversizedHeaderBlockFailsAtOnceAndTheConnectionIsNotReused() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index == 1
                ? .respond(headers: [("x-huge", String(repeating: "a", count: 80 * 1024))], body: Array("big".utf8))
                : .respond(body: Array(request.path.utf8))
        }
        let transport = try Self.farTimersTransport()
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        try await Self.expectServersFault("/huge", on: transport, base: base, "a header block over the limit")
        #expect(server.counts.connections == 2, "the connection that failed was used again")
        await transport.shutdown()
        try await server.shutdown()
    }

    /// Defect: a PING flood failed the request only when `idleRead` ran out (30 s by default). swift-nio-http2 refuses
    /// more than 200 control frames in 30 s as a connection error: the connection closes at once, and its stream
    /// fails naming the error.
    @Test func aPingFloodFailsTheRequestAtOnceAndTheConnectionIsNotReused() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index == 1 ? .floodPings(1_000) : .respond(body: Array(request.path.utf8))
        }
        let transport = try Self.farTimersTransport(pings: false)
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        try await Self.expectServersFault("/flood", on: transport, base: base, "a PING flood")
        #expect(server.counts.connections == 2, "the flooded connection was used again")
        await transport.shutdown()
        try await server.shutdown()
    }

    /// A response header block without `:status` (swift-nio-http2 takes it as a connection error) fails its
    /// request as the server's fault, at once, and the next request is answered on a new connection.
    @Test func aHeaderBlockWithoutStatusFailsItsRequestNamingTheServer() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            request.index == 1
                ? .raw { RawHTTP2Frame.headers($0, [("content-length", "0")], endStream: true) }
                : .respond(body: Array(request.path.utf8))
        }
        let transport = try Self.farTimersTransport()
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        try await Self.expectServersFault("/no-status", on: transport, base: base, "a response without :status")
        #expect(server.counts.connections == 2, "the connection that failed was used again")
        await transport.shutdown()
        try await server.shutdown()
    }

    /// A server that ignores the stream's flow-control window (more DATA than the client allowed while its
    /// reader was behind) has the stream reset, and the request's body fails as the server's fault; the client
    /// never buffers more than the window, and the next request is answered.
    @Test func dataBeyondTheStreamWindowFailsTheBodyNamingTheServer() async throws {
        let chunk = [UInt8](repeating: 0x61, count: 16_384)
        let server = try await LoopbackHTTP2Server.start { request in
            request.index == 1
                ? .raw { id in
                    RawHTTP2Frame.headers(id, [(":status", "200")], endStream: false)
                        + (0..<66).flatMap { _ in RawHTTP2Frame.data(id, chunk, endStream: false) }
                }
                : .respond(body: Array(request.path.utf8))
        }
        let transport = try Self.farTimersTransport()
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/flood")
        let (response, body) = try await transport.send(request, body: nil, baseURL: base, operationID: "flood")
        #expect(response.status == .ok)
        // The reader reads nothing until the client has reset the stream: it is behind, so no window is given.
        try await server.waitUntilReset(1)
        var received = 0
        do {
            for try await part in try #require(body) { received += part.count }
            Issue.record("a body beyond the window must fail")
        } catch {
            #expect(isTransportError(error, code: .malformedResponse), "the server's fault: \(error)")
        }
        #expect(received <= 1 << 20, "more than the stream's window reached the reader")
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: base)
        #expect(String(decoding: next, as: UTF8.self) == "/next")
        await transport.shutdown()
        try await server.shutdown()
    }
}

/// A server that completes TLS with ALPN `h2` and then says nothing: no SETTINGS ever comes.
@Suite(.timeLimit(.minutes(3))) struct HTTP2PrefaceDeadlineTests {
    /// Defect: the connection waited for the server's first SETTINGS with no deadline of its own, and every request
    /// for the host queued behind it (for ever with pings off). The handshake deadline covers the HTTP/2 preface.
    ///
    /// The subject is only met when TLS completes within the deadline (the server then reads the client's preface
    /// and answers nothing). Under load TLS alone can outlast a short deadline, which proves nothing: then the
    /// attempt is repeated with a longer one. Each attempt's request deadline stays far above its handshake
    /// deadline, so a missing preface deadline fails the attempt as a request timeout.
    @Test func aServerThatNeverSendsSettingsFailsAtTheHandshakeDeadline() async throws {
        let tls = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"), applicationProtocols: ["h2"])
        let seen = WaitableState(PrefaceWitness.Seen())
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(tls.makeHandler())
                    try child.pipeline.syncOperations.addHandler(PrefaceWitness(seen: seen))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        var testedTheSubject = false
        for (attempt, handshake) in [Duration.seconds(5), .seconds(20), .seconds(45)].enumerated() where !testedTheSubject {
            // Pings are off, so no keepalive ends the connection either.
            let transport = HTTPSTransport(
                configuration: .init(
                    timeouts: .wide(handshake: handshake, request: handshake * 4, http2PingInterval: nil),
                    pool: .init(maxConnectionsPerHost: 1)),
                security: try HTTPSTransport.makeSecurity(for: loopbackClientTLS, httpVersion: .automatic))
            await #expect(throws: TLSError.handshakeTimeout) {
                _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(port)")!)
            }
            await transport.shutdown()
            // The client closed its connection at the deadline; the server reads what came before the close.
            try await seen.wait(until: { $0.closed > attempt }, for: "the server to see connection \(attempt + 1) close")
            testedTheSubject = seen.withLockedValue { $0.closedAfterReading > 0 }
        }
        // TLS did complete on one attempt: the server read the client's HTTP/2 preface, and nothing came back.
        #expect(testedTheSubject, "TLS never completed within a 45 s handshake deadline")
        try await server.close()
    }
}

/// Counts the server's connections as they close, and those that read application data first (the client's
/// HTTP/2 preface, which it sends only once TLS completed).
final class PrefaceWitness: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    struct Seen: Sendable { var closed = 0, closedAfterReading = 0 }
    private let seen: WaitableState<Seen>
    /// Only on the connection's loop.
    private var read = false

    init(seen: WaitableState<Seen>) { self.seen = seen }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        read = true
    }

    func channelInactive(context: ChannelHandlerContext) {
        let didRead = read
        seen.withLockedValue {
            $0.closed += 1
            if didRead { $0.closedAfterReading += 1 }
        }
        context.fireChannelInactive()
    }
}

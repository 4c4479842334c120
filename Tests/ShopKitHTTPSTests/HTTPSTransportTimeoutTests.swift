import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import NIOCore
import NIOPosix
import OpenAPIRuntime
import Testing
import TestSupport
@testable import ShopKitHTTPS
import ShopKitTLS

/// Timeouts, cancellation and the TLS-only public surface. Timeouts are tiny and the server never answers;
/// the tests assert which error arrives, never how long it took.
@Suite(.timeLimit(.minutes(3))) struct HTTPSTransportTimeoutTests {
    static let long = Duration.seconds(60)

    @Test func idleReadTimeout() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .neverRespond }
        let transport = makeTransport(timeouts: .wide(idleRead: .milliseconds(50), request: Self.long))
        await #expect(throws: HTTPSTransportError.timeout(.idleRead)) { _ = try await transport.fetch(baseURL: server.baseURL) }
        await transport.shutdown()
        await server.stop()
    }

    @Test func wholeRequestTimeout() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .neverRespond }
        let transport = makeTransport(timeouts: .wide(idleRead: Self.long, request: .milliseconds(50)))
        await #expect(throws: HTTPSTransportError.timeout(.request)) { _ = try await transport.fetch(baseURL: server.baseURL) }
        await transport.shutdown()
        await server.stop()
    }

    @Test func handshakeTimeout() async throws {
        let server = try await LoopbackHTTPServer.start { _ in .ok() }
        let transport = makeTransport(
            timeouts: .wide(handshake: .milliseconds(50), request: Self.long), security: neverVerifyingSecurity)
        await #expect(throws: TLSError.handshakeTimeout) { _ = try await transport.fetch(baseURL: server.baseURL) }
        #expect(server.counts.requests == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test func handshakeTimeoutWithTheRealTLSHandler() async throws {
        // A TCP server that accepts and reads (the ClientHello) but never answers.
        let reads = EventCounter()
        let closed = EventCounter()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.closeFuture.whenComplete { _ in Task { await closed.increment() } }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(CountingSink(counter: reads))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let transport = makeTransport(timeouts: .wide(handshake: .milliseconds(100), request: Self.long))
        await #expect(throws: TLSError.handshakeTimeout) {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(port)")!)
        }
        try await reads.wait(until: 1)  // the server did get the ClientHello
        try await closed.wait(until: 1)  // and the client closed the connection when the timeout fired
        await transport.shutdown()
        try await server.close()
    }

    @Test(.timeLimit(.minutes(3)))
    func requestBodyThatNeverYieldsEndsAtTheRequestDeadlineNotAsIdleRead() async throws {
        // The upload stalls: the server rightly waits for the rest, so its silence is no idle read, and `send`
        // must still return at the request deadline although the body stream never finishes. (The deadline is
        // long enough for connecting on a busy machine; the idle-read timeout is far shorter.)
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = makeTransport(timeouts: .wide(idleRead: .milliseconds(50), request: .seconds(2)))
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        await #expect(throws: HTTPSTransportError.timeout(.request)) {
            _ = try await transport.fetch(.post, baseURL: server.baseURL, body: HTTPBody(stream, length: .unknown))
        }
        continuation.finish()
        #expect(server.counts.requests == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test func connectTimeout() async throws {
        let listener = try StalledListener()
        defer { listener.close() }
        let transport = makeTransport(timeouts: .wide(connect: .milliseconds(100), request: Self.long))
        await #expect(throws: HTTPSTransportError.timeout(.connect)) {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(listener.port)")!)
        }
        await transport.shutdown()
    }

    @Test func waitingForAPooledConnectionCountsTowardsTheRequestTimeout() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in request.uri == "/hang" ? .neverRespond : .ok() }
        let transport = makeTransport(
            timeouts: .wide(idleRead: Self.long, request: Self.long), pool: .init(maxConnectionsPerHost: 1))
        let hanging = Task { try await transport.fetch(.get, "/hang", baseURL: server.baseURL) }
        try await server.waitUntil { $0.requests == 1 }
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
        await #expect(throws: HTTPSTransportError.timeout(.request)) {
            _ = try await transport.send(
                request, body: nil, baseURL: server.baseURL, operationID: "t", requestTimeout: .milliseconds(50))
        }
        #expect(server.counts.accepted == 1)
        hanging.cancel()
        _ = await hanging.result
        await transport.shutdown()
        await server.stop()
    }

    @Test func theRequestDeadlineRunsWhileTheConnectionIsOpened() async throws {
        // The connect hangs in SYN-SENT; the request's deadline, far shorter than the connect timeout, ends it.
        let listener = try StalledListener()
        defer { listener.close() }
        let transport = makeTransport(timeouts: .wide(connect: .seconds(5), request: .milliseconds(100)))
        await #expect(throws: HTTPSTransportError.timeout(.request)) {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(listener.port)")!)
        }
        await transport.shutdown()
    }

    @Test func cancellingWhileTheConnectionIsOpenedEndsTheRequest() async throws {
        // Cancelled before it starts: the request never waits for a connection.
        let listener = try StalledListener()
        defer { listener.close() }
        let transport = makeTransport(timeouts: .wide(request: Self.long))
        let early = Task { try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(listener.port)")!) }
        early.cancel()
        await #expect(throws: CancellationError.self) { _ = try await early.value }
        // Cancelled while the handshake hangs (the server read the ClientHello and says nothing).
        let reads = EventCounter()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture { try child.pipeline.syncOperations.addHandler(CountingSink(counter: reads)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let hanging = Task { try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(port)")!) }
        try await reads.wait(until: 1)
        hanging.cancel()
        await #expect(throws: CancellationError.self) { _ = try await hanging.value }
        await transport.shutdown()
        try await server.close()
    }

    /// On a new connection the request is started on the event loop by the connection itself; on a reused one
    /// from the caller's task: cancellation must reach it either way.
    @Test(arguments: [false, true])
    func cancellationClosesTheConnection(reused: Bool) async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in request.uri == "/hang" ? .neverRespond : .ok() }
        let transport = makeTransport()
        if reused { _ = try await transport.fetch(baseURL: server.baseURL) }
        let task = Task { try await transport.fetch(.get, "/hang", baseURL: server.baseURL) }
        try await server.waitUntil { $0.requests == (reused ? 2 : 1) }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        try await server.waitUntil { $0.closed == 1 }
        _ = try await transport.fetch(baseURL: server.baseURL)
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func cancellingWhileReadingTheBodyClosesTheConnection() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.uri == "/partial"
                ? .raw(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf".utf8), close: false) : .ok()
        }
        let transport = makeTransport()
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/partial")
        let (_, body) = try await transport.send(request, body: nil, baseURL: server.baseURL, operationID: "t")
        let reader = Task { try await [UInt8](collecting: body!, upTo: .max) }
        reader.cancel()
        await #expect(throws: CancellationError.self) { _ = try await reader.value }
        try await server.waitUntil { $0.closed == 1 }
        _ = try await transport.fetch(baseURL: server.baseURL)
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func publicInitializerRequiresTLS() async throws {
        let server = try await LoopbackHTTPServer.start { _ in .ok() }
        let transport = try HTTPSTransport(configuration: .init(timeouts: .wide()))
        await #expect {
            _ = try await transport.fetch(baseURL: server.baseURL)
        } throws: { error in
            guard (error as? TLSError)?.code == .handshakeFailed else { return false }
            return true
        }
        await transport.shutdown()
        await server.stop()
    }

    @Test func plaintextURLsAreRefused() async throws {
        let transport = makeTransport()
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "http://127.0.0.1:1")!)
        } throws: { error in
            guard let error = error as? HTTPSTransportError, error.code == .invalidURL, let reason = error.reason else { return false }
            return reason.contains("https")
        }
    }

    @Test func connectionRefusedIsConnectFailed() async throws {
        // A port bound but not listening refuses connections, and nothing else can take it meanwhile.
        let closed = try BoundClosedPort()
        defer { closed.release() }
        let port = closed.port
        let transport = makeTransport()
        await #expect {
            _ = try await transport.fetch(baseURL: URL(string: "https://127.0.0.1:\(port)")!)
        } throws: { error in
            guard let error = error as? HTTPSTransportError, error.code == .connectFailed, let (host, failedPort) = error.endpoint else { return false }
            return host == "127.0.0.1" && failedPort == port
        }
    }
}

/// Counts the reads that reach it and drops them: a peer that listens and never says anything.
final class CountingSink: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let counter: EventCounter

    init(counter: EventCounter) { self.counter = counter }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let counter = self.counter
        Task { await counter.increment() }
    }
}

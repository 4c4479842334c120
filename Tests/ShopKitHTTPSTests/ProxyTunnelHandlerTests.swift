import NIOCore
import NIOEmbedded
import Testing
@testable import ShopKitHTTPS

/// ``ProxyTunnelHandler`` on an embedded channel: what it writes, when it removes itself, and its deadline.
@Suite(.timeLimit(.minutes(3))) struct ProxyTunnelHandlerTests {
    private func start() throws -> (EmbeddedChannel, EventLoopFuture<Void>) {
        let channel = EmbeddedChannel()
        _ = try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).wait()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let handler = ProxyTunnelHandler(
            host: "api.shop.test", port: 443, proxyHost: "proxy.test", proxyPort: 3128, authorization: "Basic eDp5",
            timeout: .seconds(5), promise: promise)
        try channel.pipeline.syncOperations.addHandler(handler)
        return (channel, promise.futureResult)
    }

    @Test func sendsConnectAndRemovesItselfOnceOpen() throws {
        let (channel, opened) = try start()
        let sent = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(
            String(buffer: sent)
                == "CONNECT api.shop.test:443 HTTP/1.1\r\nHost: api.shop.test:443\r\nProxy-Authorization: Basic eDp5\r\n\r\n")
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n"))
        try opened.wait()
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ProxyTunnelHandler.self) }
        // The deadline was cancelled with success: nothing happens when it would have fired.
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test func aSilentProxyFailsAtTheDeadlineAndIsClosed() throws {
        let (channel, opened) = try start()
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(throws: HTTPSTransportError.timeout(.connect)) { try opened.wait() }
        #expect(!channel.isActive)
    }

    @Test func aRefusalFailsAndCloses() throws {
        let (channel, opened) = try start()
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
        #expect(throws: HTTPSTransportError.proxyRefused(status: 403)) { try opened.wait() }
        #expect(!channel.isActive)
        // The embedded loop keeps a cancelled timer (and what it captured) until its time comes: let it pass.
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
    }
}

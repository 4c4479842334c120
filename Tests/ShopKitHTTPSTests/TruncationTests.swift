import Foundation
import NIOCore
import Testing
import TestSupport
@testable import ShopKitHTTPS
import ShopKitTLS

/// Placed right behind a server's `TLSHandler`: a close asked for by the handlers behind it skips the TLS
/// handler, so the TCP connection ends without close_notify, which is what a forged FIN looks like.
final class CloseWithoutCloseNotify: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard let tls = try? context.pipeline.syncOperations.context(handlerType: TLSHandler.self) else {
            context.close(mode: mode, promise: promise)
            return
        }
        tls.close(mode: mode, promise: promise)  // goes to the socket, past the TLS handler's close_notify
    }
}

extension LoopbackHTTPServer {
    /// The scripted TLS server, whose closes end the TCP connection without close_notify.
    static func startTLSWithoutCloseNotify(script: @escaping Script) async throws -> LoopbackHTTPServer {
        try await start(
            extraHandlers: { child in
                child.eventLoop.makeCompletedFuture {
                    let sync = child.pipeline.syncOperations
                    try sync.addHandler(CloseWithoutCloseNotify(), position: .first)
                    try sync.addHandler(loopbackServerTLS.makeHandler(), position: .first)
                }
            },
            script: script)
    }
}

/// A response body framed by the end of the connection (no Content-Length, not chunked) is complete only if
/// the TLS session ended with close_notify: a bare TCP close can be forged by anyone on the path.
@Suite(.timeLimit(.minutes(3))) struct TruncationTests {
    static let body = Array("the first half of a longer bo".utf8)
    static let eofFramed = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".utf8) + body

    @Test func eofFramedBodyEndedWithoutCloseNotifyFails() async throws {
        let server = try await LoopbackHTTPServer.startTLSWithoutCloseNotify { _ in .raw(Self.eofFramed, close: true) }
        let transport = makeTransport()
        await #expect(throws: HTTPSTransportError.connectionClosed) { _ = try await transport.fetch(baseURL: server.baseURL) }
        #expect(server.counts.requests == 1)
        await transport.shutdown()
        await server.stop()
    }

    @Test func eofFramedBodyEndedWithCloseNotifyCompletes() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .raw(Self.eofFramed, close: true) }
        let transport = makeTransport()
        let (response, body) = try await transport.fetch(baseURL: server.baseURL)
        #expect(response.status == .ok)
        #expect(body == Self.body)
        await transport.shutdown()
        await server.stop()
    }

    @Test func contentLengthResponseIsUnaffectedByAnUncleanCloseAfterIt() async throws {
        // The response is complete by its framing before the connection goes; the next request reconnects.
        let server = try await LoopbackHTTPServer.startTLSWithoutCloseNotify { _ in
            .respond(status: 200, headers: [], body: Self.body, chunked: false, close: true)
        }
        let transport = makeTransport()
        for _ in 0..<2 { #expect(try await transport.fetch(baseURL: server.baseURL).1 == Self.body) }
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }
}

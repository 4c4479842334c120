import NIOCore
import NIOEmbedded
import NIOHTTP2
import NIOConcurrencyHelpers
import ShopKitTLS
import Testing
@testable import ShopKitHTTPS

/// A connection closing for a connection error takes no new stream from that moment, and tells the pool at once
/// (before the close completes): found by the adversarial pass, where the next request was handed the connection
/// the client had just sent GOAWAY on, and failed unsent as `connectionClosed`.
@Suite(.timeLimit(.minutes(3))) struct HTTP2ClosingConnectionTests {
    @Test func aConnectionErrorStopsNewStreamsAndTellsThePoolAtOnce() throws {
        let channel = EmbeddedChannel()
        let loop = channel.embeddedEventLoop
        let told = NIOLockedValueBox(0)
        let handler = HTTP2ConnectionHandler(
            eventLoop: loop, logger: TLSClientConfiguration.disabledLogger,
            observer: .init(settings: { _ in }, goAway: { told.withLockedValue { $0 += 1 } }))
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
        try channel.pipeline.syncOperations.addHandler(handler)
        loop.run()
        #expect(handler.openStream() != nil)
        let waiting = try #require(handler.openStream())
        // A connection error (what swift-nio-http2 reports for a frame on a closed stream, say); the close is
        // held back, as a TLS close_notify would hold it.
        handler.errorCaught(context: try channel.pipeline.syncOperations.context(handler: handler), error: Refused())
        #expect(told.withLockedValue { $0 } == 1)
        #expect(handler.openStream() == nil, "a stream was opened on a connection closing for an error")
        #expect(handler.assignID(to: waiting) == nil, "a stream took an id on a connection closing for an error")
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    private struct Refused: Error {}
}

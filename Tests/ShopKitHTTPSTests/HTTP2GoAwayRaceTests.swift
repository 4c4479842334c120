import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTP2
import ShopKitTLS
import Testing
@testable import ShopKitHTTPS

/// A stream is opened on the connection's loop when the pool hands a request a slot, and its request starts on a
/// later turn of the loop; a GOAWAY read in between refuses the stream while it has no id.
@Suite(.timeLimit(.minutes(3))) struct HTTP2GoAwayRaceTests {
    /// Found by the model-based hostile test (seed 132245488737302): a streamed POST whose stream the GOAWAY
    /// refused before its request started was started anyway; it wrote nothing, heard nothing, and ended at its
    /// 60 s request timeout while every other refused request was resent at once. It must fail at once, with its
    /// slot released, as a request nothing of which was written (``ConnectionNotQuiet``): it goes out on another
    /// connection whatever its method, and that is not an attempt.
    @Test func aStreamRefusedByGoAwayBeforeItsRequestStartsFailsAtOnceUnwritten() throws {
        let channel = EmbeddedChannel()
        let loop = channel.embeddedEventLoop
        let handler = HTTP2ConnectionHandler(
            eventLoop: loop, logger: TLSClientConfiguration.disabledLogger, observer: .init(settings: { _ in }, goAway: {}))
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
        try channel.pipeline.syncOperations.addHandler(
            NIOHTTP2Handler(mode: .client, initialSettings: HTTP2ConnectionHandler.initialSettings))
        try channel.pipeline.syncOperations.addHandler(handler)
        loop.run()
        // The server's SETTINGS, then (after the stream is opened) its GOAWAY: last stream 0, ENHANCE_YOUR_CALM.
        try channel.writeInbound(channel.allocator.buffer(bytes: [0, 0, 0, 4, 0, 0, 0, 0, 0]))
        let stream = try #require(handler.openStream())
        try channel.writeInbound(
            channel.allocator.buffer(bytes: [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0B]))
        loop.run()

        let head = loop.makePromise(of: HTTPResponseHead.self)
        let releases = NIOLoopBoundBox<[Bool]>([], eventLoop: loop)
        let exchange = ExchangeRecorder(
            id: .init(raw: 1),
            limits: .init(deadline: loop.now + .seconds(60), idleReadTimeout: .seconds(30), maxResponseBodyBytes: 1024),
            head: head, released: { releases.value.append($0) })
        stream.start(exchange, id: exchange.id)
        loop.run()
        let outcome = NIOLoopBoundBox<Result<HTTPResponseHead, any Error>?>(nil, eventLoop: loop)
        head.futureResult.assumeIsolated().whenComplete { outcome.value = $0 }
        loop.run()
        guard case .failure(let error) = outcome.value else {
            Issue.record("the request did not end at once: \(String(describing: outcome.value))")
            _ = try? channel.finish(acceptAlreadyClosed: true)
            return
        }
        let failure = try #require(error as? ExchangeFailure)
        #expect(failure.error is ConnectionNotQuiet)
        #expect(failure.noResponseBytes)
        #expect(releases.value == [false])
        // Nothing of the request reached the wire after the GOAWAY (only the client's preface and settings).
        while let frame = try channel.readOutbound(as: ByteBuffer.self) {
            #expect(!HTTP2GoAwayRaceTests.containsHeadersFrame(frame), "a HEADERS frame was written after the GOAWAY")
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    /// Whether `buffer` holds an HTTP/2 HEADERS frame (type 1) at a frame boundary, skipping the client preface.
    static func containsHeadersFrame(_ buffer: ByteBuffer) -> Bool {
        var bytes = Array(buffer.readableBytesView)
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        if bytes.starts(with: preface) { bytes.removeFirst(preface.count) }
        var offset = 0
        while bytes.count - offset >= 9 {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            if bytes[offset + 3] == 1 { return true }
            offset += 9 + length
        }
        return false
    }
}

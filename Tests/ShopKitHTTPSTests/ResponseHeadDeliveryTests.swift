import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS

/// The response head is handed to the caller at the end of the read that carried it, after the body parts of
/// that same read: the caller is woken once and finds a small body complete, instead of waking for the head,
/// finding no body yet and waiting to be woken again. A failure in the same read still comes after the head.
@Suite(.timeLimit(.minutes(3))) struct ResponseHeadDeliveryTests {
    /// An embedded channel with the HTTP handler and one started exchange whose request was written.
    struct Running {
        let channel: EmbeddedChannel
        let exchange: ExchangeRecorder
        /// What had happened when the head was handed over: the releases so far.
        let releasedAtHead: NIOLoopBoundBox<[Bool]?>
        let released: NIOLoopBoundBox<[Bool]>

        init(maxResponseBodyBytes: Int = 1_000) throws {
            let embedded = try EmbeddedExchange(maxResponseBodyBytes: maxResponseBodyBytes)
            let (handler, released) = (embedded.handler, embedded.released)
            (channel, exchange, self.released) = (embedded.channel, embedded.exchange, released)
            let loop = channel.embeddedEventLoop
            let releasedAtHead = NIOLoopBoundBox<[Bool]?>(nil, eventLoop: loop)
            self.releasedAtHead = releasedAtHead
            embedded.head.futureResult.whenSuccess { _ in releasedAtHead.value = released.value }
            handler.start(exchange, id: exchange.id)
            handler.requestSent(exchange.id)
        }

        /// One read of the server's bytes.
        func read(_ bytes: String) {
            channel.pipeline.syncOperations.fireChannelRead(NIOAny(ByteBuffer(string: bytes)))
        }

        /// The read's end, and then the tasks it scheduled (a hand-over is a task of its own), as a real event
        /// loop runs them next.
        func readComplete() {
            channel.pipeline.syncOperations.fireChannelReadComplete()
            channel.embeddedEventLoop.run()
        }

        var headDelivered: Bool { releasedAtHead.value != nil }

        /// Closes the channel (the handler may have closed it already) and runs what its teardown scheduled,
        /// so the pipeline lets go of the handler.
        func finish() throws {
            _ = try channel.finish(acceptAlreadyClosed: true)
        }

        func body() async throws -> [UInt8] {
            // Read after the channel's events: the body has ended by then.
            try #require(try exchange.endedBody())
        }
    }

    static let head = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"

    @Test func theHeadWaitsForTheEndOfItsReadAndTheBodyOfThatReadIsThenComplete() async throws {
        let running = try Running()
        running.read(Self.head)
        #expect(!running.headDelivered)
        running.read("abc")  // the body, and so the response's end
        #expect(!running.headDelivered)
        running.readComplete()
        // When the caller got the head, the exchange had already ended (released reusable, body finished).
        #expect(running.releasedAtHead.value == [true])
        #expect(try await running.body() == Array("abc".utf8))
        try running.finish()
    }

    @Test func aHeadWhoseBodyComesInALaterReadIsHandedOverAtTheEndOfItsOwn() async throws {
        let running = try Running()
        running.read(Self.head)
        running.readComplete()
        #expect(running.releasedAtHead.value == [])
        running.read("abc")  // the body, and so the response's end
        running.readComplete()
        #expect(try await running.body() == Array("abc".utf8))
        try running.finish()
    }

    @Test func aFailureInTheSameReadComesAfterTheHead() async throws {
        let running = try Running(maxResponseBodyBytes: 2)
        running.read("HTTP/1.1 200 OK\r\n\r\n")  // a body framed by the connection's end
        running.read("abc")  // over the limit: the exchange fails
        #expect(running.headDelivered)
        #expect(running.released.value == [false])
        await #expect(throws: HTTPSTransportError.responseBodyTooLarge(limit: 2)) { _ = try await running.body() }
        try running.finish()
    }

    @Test func aConnectionThatClosesBeforeTheEndOfTheReadStillHandsOverTheHead() async throws {
        let running = try Running()
        running.read(Self.head)
        running.read("abc")  // the response ends: the close that follows fails nothing
        running.channel.pipeline.fireChannelInactive()
        #expect(running.releasedAtHead.value == [true])
        #expect(try await running.body() == Array("abc".utf8))
        try running.finish()
    }

    /// An early response (it ended before the request did) is released when the request's end is written, and
    /// then only once that event is over: the pool never starts the next request from inside the write's
    /// completion.
    @Test func anEarlyResponseIsReleasedAfterTheEventThatWroteTheRequestsEnd() async throws {
        let embedded = try EmbeddedExchange()
        let (channel, handler, exchange) = (embedded.channel, embedded.handler, embedded.exchange)
        handler.start(exchange, id: exchange.id)
        channel.pipeline.syncOperations.fireChannelRead(NIOAny(ByteBuffer(string: Self.head + "abc")))
        channel.pipeline.syncOperations.fireChannelReadComplete()
        #expect(embedded.released.value == [])  // the request is still being written
        handler.requestSent(exchange.id)
        #expect(embedded.released.value == [])  // not from inside the event that wrote the end
        channel.embeddedEventLoop.run()
        #expect(embedded.released.value == [true])
        #expect(try await embedded.head.futureResult.get().status == .ok)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}

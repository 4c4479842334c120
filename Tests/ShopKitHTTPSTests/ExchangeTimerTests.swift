import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// The exchange's timers on the embedded event loop's clock (no waiting): the idle-read clock starts only
/// once the request has been written to its end; the whole-request deadline runs from the start.
@Suite(.timeLimit(.minutes(3))) struct ExchangeTimerTests {
    /// A connected embedded channel with the HTTP handler and one started exchange.
    struct Running {
        let channel: EmbeddedChannel
        let handler: HTTP1ConnectionHandler
        let exchange: ExchangeRecorder
        let head: EventLoopPromise<HTTPResponseHead>
        let failure: NIOLoopBoundBox<(any Error)?>
        let released: NIOLoopBoundBox<[Bool]>

        init(deadlineIn: TimeAmount, idleRead: TimeAmount) throws {
            let embedded = try EmbeddedExchange(deadlineIn: deadlineIn, idleRead: idleRead)
            (channel, handler, exchange, head, released) = (
                embedded.channel, embedded.handler, embedded.exchange, embedded.head, embedded.released
            )
            let loop = channel.embeddedEventLoop
            let failure = NIOLoopBoundBox<(any Error)?>(nil, eventLoop: loop)
            head.futureResult.whenFailure { failure.value = ($0 as? ExchangeFailure)?.error ?? $0 }
            self.failure = failure
            handler.start(exchange, id: exchange.id)
        }

        var timeout: HTTPSTransportError.Timeout? {
            guard let which = (failure.value as? HTTPSTransportError)?.timeout else { return nil }
            return which
        }

        func advance(by amount: TimeAmount) { channel.embeddedEventLoop.advanceTime(by: amount) }

        func finish() {
            head.fail(HTTPSTransportError.connectionClosed)
            _ = try? channel.finish()
        }
    }

    @Test func aSlowUploadIsNotAnIdleRead() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(1))
        defer { running.finish() }
        running.advance(by: .seconds(30))  // the request body is still being written
        #expect(running.failure.value == nil)
        running.handler.requestSent(running.exchange.id)
        running.advance(by: .milliseconds(999))
        #expect(running.failure.value == nil)
        running.advance(by: .milliseconds(1))
        #expect(running.timeout == .idleRead)
        running.channel.embeddedEventLoop.run()
        #expect(running.released.value == [false])
    }

    /// A bodiless request written whole (no write promise) is sent once its end is handed on: its idle-read clock
    /// runs from there, and its bytes are on the channel.
    @Test func aRequestWrittenWholeStartsTheIdleClockAtOnce() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(1))
        defer { running.finish() }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a")
        head.headers.add(name: "Host", value: "127.0.0.1")
        running.handler.writeWhole(head, id: running.exchange.id)
        #expect(try running.channel.readOutbound(as: HTTPClientRequestPart.self) == .head(head))
        #expect(try running.channel.readOutbound(as: HTTPClientRequestPart.self) == .end(nil))
        running.advance(by: .milliseconds(999))
        #expect(running.failure.value == nil)
        running.advance(by: .milliseconds(1))
        #expect(running.timeout == .idleRead)
    }

    /// The connection closing after a request was written whole fails that request at once, as not answered,
    /// and the connection is not reused: the close, not a write promise, ends the request.
    @Test func aConnectionClosedAfterAWholeWriteFailsTheRequestAtOnce() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(30))
        defer { running.finish() }
        let failure = NIOLoopBoundBox<ExchangeFailure?>(nil, eventLoop: running.channel.embeddedEventLoop)
        running.head.futureResult.whenFailure { failure.value = $0 as? ExchangeFailure }
        running.handler.writeWhole(
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a"), id: running.exchange.id)
        running.channel.pipeline.fireChannelInactive()
        #expect(failure.value?.noResponseBytes == true)
        #expect(failure.value?.error as? HTTPSTransportError == .connectionClosed)
        running.channel.embeddedEventLoop.run()
        #expect(running.released.value == [false])
    }

    @Test func bytesAfterTheRequestRestartTheIdleClock() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(1))
        defer { running.finish() }
        running.handler.requestSent(running.exchange.id)
        running.advance(by: .milliseconds(900))
        // A first byte of the response: not a whole part, but the server is not silent.
        running.channel.pipeline.fireChannelRead(NIOAny(ByteBuffer(string: "H")))
        running.advance(by: .milliseconds(900))
        #expect(running.failure.value == nil)
        running.advance(by: .milliseconds(100))
        #expect(running.timeout == .idleRead)
    }

    @Test func theRequestDeadlineRunsWhileUploading() throws {
        let running = try Running(deadlineIn: .seconds(10), idleRead: .seconds(1))
        defer { running.finish() }
        running.advance(by: .milliseconds(9_999))
        #expect(running.failure.value == nil)
        running.advance(by: .milliseconds(1))
        #expect(running.timeout == .request)
    }

    @Test func aLateRequestSentForAnEndedExchangeChangesNothing() throws {
        let running = try Running(deadlineIn: .seconds(10), idleRead: .seconds(1))
        defer { running.finish() }
        running.handler.requestSent(.init(raw: 99))  // another exchange
        running.advance(by: .seconds(5))
        #expect(running.failure.value == nil)
    }

    /// A kept-alive connection keeps its timer from one request to the next; each request still ends on its own
    /// clock: when the kept timer fires early the machine arms it again, and a request that needs an earlier
    /// firing gets one.
    @Test(arguments: [
        // The first request's timer (armed for 0 s + 10 s) fires before the second needs it (5 s + 10 s): kept.
        (secondIdleRead: TimeAmount.seconds(10), failsAt: TimeAmount.seconds(15)),
        // The second needs it at 5 s + 2 s, before the kept timer: armed again, earlier.
        (secondIdleRead: TimeAmount.seconds(2), failsAt: TimeAmount.seconds(7)),
    ])
    func theNextRequestOnTheConnectionEndsOnItsOwnClock(secondIdleRead: TimeAmount, failsAt: TimeAmount) throws {
        let first = try Running(deadlineIn: .seconds(60), idleRead: .seconds(10))
        defer { first.finish() }
        let (channel, handler) = (first.channel, first.handler)
        let loop = channel.embeddedEventLoop
        let start = loop.now
        handler.requestSent(first.exchange.id)
        first.advance(by: .seconds(1))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"))
        loop.run()  // the hand-over is a task of its own
        #expect(first.released.value == [true])
        #expect(first.failure.value == nil)

        first.advance(by: .seconds(4))
        let failure = NIOLoopBoundBox<(any Error)?>(nil, eventLoop: loop)
        let secondHead = loop.makePromise(of: HTTPResponseHead.self)
        let second = ExchangeRecorder(
            id: .init(raw: 2),
            limits: .init(deadline: loop.now + .seconds(60), idleReadTimeout: secondIdleRead, maxResponseBodyBytes: 1_000),
            head: secondHead, released: { _ in })
        secondHead.futureResult.whenFailure { failure.value = ($0 as? ExchangeFailure)?.error ?? $0 }
        handler.start(second, id: second.id)
        handler.requestSent(second.id)
        loop.advanceTime(to: start + failsAt - .milliseconds(1))
        #expect(failure.value == nil)
        loop.advanceTime(by: .milliseconds(1))
        guard (failure.value as? HTTPSTransportError) == .timeout(.idleRead) else {
            Issue.record("the second request did not fail with an idle-read timeout at \(failsAt): \(String(describing: failure.value))")
            return
        }
    }
}

import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import ShopKitTLS

/// The exchange's timers on the embedded event loop's clock (no waiting): the idle-read clock starts only
/// once the request has been written to its end; the whole-request deadline runs from the start.
@Suite struct ExchangeTimerTests {
    /// A connected embedded channel with the HTTP handler and one started exchange.
    struct Running {
        let channel: EmbeddedChannel
        let handler: HTTPClientConnectionHandler
        let exchange: ResponseExchange
        let failure: NIOLoopBoundBox<(any Error)?>

        init(deadlineIn: TimeAmount, idleRead: TimeAmount) throws {
            channel = EmbeddedChannel()
            handler = HTTPClientConnectionHandler()
            try channel.pipeline.syncOperations.addHandler(handler)
            channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
            let loop = channel.embeddedEventLoop
            exchange = ResponseExchange(
                head: loop.makePromise(), body: BodyStream(), done: loop.makePromise(), requestKeepAlive: true,
                deadline: loop.now + deadlineIn, idleReadTimeout: idleRead, maxBodySize: 1_000, isHead: false)
            let failure = NIOLoopBoundBox<(any Error)?>(nil, eventLoop: loop)
            exchange.head.futureResult.whenFailure { failure.value = ($0 as? ExchangeFailure)?.error ?? $0 }
            self.failure = failure
            handler.start(exchange)
        }

        var timeout: TLSError.Timeout? {
            guard case .timeout(let which)? = failure.value as? TLSError else { return nil }
            return which
        }

        func advance(by amount: TimeAmount) { channel.embeddedEventLoop.advanceTime(by: amount) }

        func finish() {
            exchange.head.fail(TLSError.connectionClosed)
            exchange.done.succeed(false)
            _ = try? channel.finish()
        }
    }

    @Test func aSlowUploadIsNotAnIdleRead() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(1))
        defer { running.finish() }
        running.advance(by: .seconds(30))  // the request body is still being written
        #expect(running.failure.value == nil)
        running.handler.requestSent(running.exchange.done.futureResult)
        running.advance(by: .milliseconds(999))
        #expect(running.failure.value == nil)
        running.advance(by: .milliseconds(1))
        #expect(running.timeout == .idleRead)
    }

    @Test func bytesAfterTheRequestRestartTheIdleClock() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(1))
        defer { running.finish() }
        running.handler.requestSent(running.exchange.done.futureResult)
        running.advance(by: .milliseconds(900))
        running.handler.noteBytesRead()
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
        running.handler.requestSent(running.channel.embeddedEventLoop.makeSucceededFuture(true))  // another exchange
        running.advance(by: .seconds(5))
        #expect(running.failure.value == nil)
    }
}

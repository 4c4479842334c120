import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// The exchange's timers on the embedded event loop's clock (no waiting): the idle-read clock starts only
/// once the request has been written to its end; the whole-request deadline runs from the start.
@Suite struct ExchangeTimerTests {
    /// A connected embedded channel with the HTTP handler and one started exchange.
    struct Running {
        let channel: EmbeddedChannel
        let handler: HTTP1ConnectionHandler
        let exchange: RequestContext
        let failure: NIOLoopBoundBox<(any Error)?>
        let released: NIOLoopBoundBox<[Bool]>

        init(deadlineIn: TimeAmount, idleRead: TimeAmount) throws {
            let embedded = try EmbeddedExchange(deadlineIn: deadlineIn, idleRead: idleRead)
            (channel, handler, exchange, released) = (embedded.channel, embedded.handler, embedded.exchange, embedded.released)
            let loop = channel.embeddedEventLoop
            let failure = NIOLoopBoundBox<(any Error)?>(nil, eventLoop: loop)
            exchange.head.futureResult.whenFailure { failure.value = ($0 as? ExchangeFailure)?.error ?? $0 }
            self.failure = failure
            handler.start(exchange)
        }

        var timeout: HTTPSTransportError.Timeout? {
            guard case .timeout(let which)? = failure.value as? HTTPSTransportError else { return nil }
            return which
        }

        func advance(by amount: TimeAmount) { channel.embeddedEventLoop.advanceTime(by: amount) }

        func finish() {
            exchange.head.fail(HTTPSTransportError.connectionClosed)
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

    @Test func bytesAfterTheRequestRestartTheIdleClock() throws {
        let running = try Running(deadlineIn: .seconds(60), idleRead: .seconds(1))
        defer { running.finish() }
        running.handler.requestSent(running.exchange.id)
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
        running.handler.requestSent(.init(raw: 99))  // another exchange
        running.advance(by: .seconds(5))
        #expect(running.failure.value == nil)
    }
}

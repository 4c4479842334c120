import NIOCore
import NIOHTTP1

/// One request's response side, owned by the handler on the event loop.
struct ResponseExchange {
    /// Succeeds with the response head, or fails with an ``ExchangeFailure``.
    let head: EventLoopPromise<HTTPResponseHead>
    /// Receives the body bytes.
    let body: BodyStream
    /// Succeeds when the response is complete, with whether the connection may be kept alive.
    let done: EventLoopPromise<Bool>
    /// Whether the request allows keep-alive (no `Connection: close`).
    let requestKeepAlive: Bool
    /// The whole-request deadline.
    let deadline: NIODeadline
    /// The longest wait for the next inbound bytes.
    let idleReadTimeout: TimeAmount
    /// The most body bytes accepted.
    let maxBodySize: Int
    /// Whether the request was HEAD (its response has no body even with a Content-Length).
    let isHead: Bool
}

/// Why an exchange failed, and whether a retry on a fresh connection is safe as far as the wire is concerned.
struct ExchangeFailure: Error {
    /// The error to report.
    let error: any Error
    /// No response byte was read before the failure.
    let noResponseBytes: Bool
}

/// Counts that any byte arrived on the connection, before the HTTP decoder sees it.
final class InboundByteObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let onRead: () -> Void

    init(onRead: @escaping () -> Void) { self.onRead = onRead }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onRead()
        context.fireChannelRead(data)
    }
}

/// Runs one HTTP/1.1 exchange at a time on a connection: response head, body streaming with the size limit,
/// keep-alive decision, idle-read and whole-request timers. Every method runs on the channel's event loop.
///
/// Timers: the whole-request deadline runs from the start; the idle-read clock only once the request's end
/// has been written (``requestSent(_:)``), so a slow upload is never the server's silence. Time is read from
/// the event loop's clock (`EventLoop.now`), so tests can drive it.
///
/// Truncation: a TCP close without TLS close_notify (``TLSUncleanShutdown``) fails the exchange in progress,
/// so a body framed by the connection's end is never accepted as complete on a FIN anyone could forge.
///
/// Backpressure: when the body stream holds more unread bytes than its high watermark, the handler holds back
/// the channel's next `read`, and lets it through once the reader has drained the stream (``resumeReading()``).
/// So a slow reader bounds the memory of a large body, and the event loop does not race ahead of the reader
/// (freshly allocated buffers freed by another thread made malloc trim and re-fault its heap on every read).
final class HTTPClientConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private enum State {
        case idle
        case awaitingHead(ResponseExchange)
        case streamingBody(ResponseExchange, received: Int, keepAlive: Bool)
        case closed
    }

    private var state = State.idle
    private var context: ChannelHandlerContext?
    private var bytesRead = false
    /// When bytes last arrived during the current exchange (or when it started).
    private var lastRead = NIODeadline.uptimeNanoseconds(0)
    /// The one timer of the current exchange: it fires at the earlier of the request deadline and the idle-read
    /// deadline, and re-arms itself if bytes arrived meanwhile (so a read never touches the timer queue).
    private var timer: Scheduled<Void>?
    /// The body reader is behind: the channel's reads are held back until it catches up.
    private var readingPaused = false
    /// A read the channel asked for while reading was paused.
    private var pendingRead = false
    /// The current exchange's request has been written to its end: the idle-read clock runs.
    private var requestWritten = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Called by ``InboundByteObserver`` for every inbound read.
    func noteBytesRead() {
        bytesRead = true
        if case .idle = state { return }
        lastRead = now
    }

    /// The event loop's current time.
    private var now: NIODeadline { context?.eventLoop.now ?? .now() }

    /// Starts an exchange; the caller then writes the request.
    func start(_ exchange: ResponseExchange) {
        guard case .idle = state, let context, context.channel.isActive else {
            // Nothing was read for this exchange: a retry is safe as far as the wire is concerned.
            exchange.head.fail(ExchangeFailure(error: TLSError.connectionClosed, noResponseBytes: true))
            exchange.body.finish(throwing: TLSError.connectionClosed)
            exchange.done.succeed(false)
            return
        }
        bytesRead = false
        requestWritten = false
        state = .awaitingHead(exchange)
        lastRead = now
        armTimer()
    }

    /// The request of the exchange whose completion is `done` has been written to its end: the idle-read clock
    /// starts now. Does nothing when that exchange is over. The running timer needs no change: it fires no
    /// later than an idle-read period from now, and re-arms for the deadline it finds then.
    func requestSent(_ done: EventLoopFuture<Bool>) {
        switch state {
        case .awaitingHead(let exchange), .streamingBody(let exchange, _, _):
            guard exchange.done.futureResult === done, !requestWritten else { return }
            requestWritten = true
            lastRead = now
        case .idle, .closed:
            break
        }
    }

    /// Abandons the exchange whose completion is `done` (task cancelled, body dropped): the connection is
    /// closed, never reused. Does nothing when that exchange is over (a later one may be running).
    func cancel(_ done: EventLoopFuture<Bool>) {
        switch state {
        case .awaitingHead(let exchange), .streamingBody(let exchange, _, _):
            if exchange.done.futureResult === done { fail(CancellationError()) }
        case .idle, .closed:
            break
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .awaitingHead(let exchange)):
            if head.status.code >= 100 && head.status.code < 200 && head.status.code != 101 { return }
            if !exchange.isHead, let length = HTTPConversion.contentLength(head), length > exchange.maxBodySize {
                fail(Self.tooLarge(exchange.maxBodySize))
                return
            }
            state = .streamingBody(exchange, received: 0, keepAlive: head.isKeepAlive && exchange.requestKeepAlive)
            exchange.head.succeed(head)
        case (.body(let buffer), .streamingBody(let exchange, let received, let keepAlive)):
            let total = received + buffer.readableBytes
            guard total <= exchange.maxBodySize else {
                fail(Self.tooLarge(exchange.maxBodySize))
                return
            }
            state = .streamingBody(exchange, received: total, keepAlive: keepAlive)
            if !exchange.body.yield(ArraySlice(buffer.readableBytesView)) { readingPaused = true }
        case (.end, .streamingBody(let exchange, _, let keepAlive)):
            cancelTimers()
            resumeReading()
            state = keepAlive ? .idle : .closed
            exchange.done.succeed(keepAlive)
            exchange.body.finish()
            if !keepAlive { context.close(promise: nil) }
        case (_, .idle):
            // Bytes nobody asked for: the connection cannot be trusted for another request.
            state = .closed
            context.close(promise: nil)
        default:
            fail(TLSError.malformedResponse("unexpected HTTP response part"))
        }
    }

    func read(context: ChannelHandlerContext) {
        if readingPaused {
            pendingRead = true
        } else {
            context.read()
        }
    }

    /// The body reader drained the stream below its low watermark (or the exchange ended): let reads through.
    func resumeReading() {
        guard readingPaused else { return }
        readingPaused = false
        // Time spent waiting for the reader is not the server's silence.
        lastRead = now
        if pendingRead, let context {
            pendingRead = false
            context.read()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSUncleanShutdown {
            // The peer's TCP close came without close_notify: anyone on the path can send that FIN. A body
            // framed by the connection's end (no Content-Length, not chunked) would look complete to the HTTP
            // decoder when it processes the close next, so the exchange in progress fails first.
            switch state {
            case .awaitingHead, .streamingBody: fail(TLSError.connectionClosed)
            case .idle, .closed: break
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case let error as TLSError: fail(error)
        case let error as HTTPParserError: fail(TLSError.malformedResponse("\(error)"))
        case is NIOTooManyBytesError: fail(TLSError.malformedResponse("response head too large"))
        default: fail(TLSError.connectionClosed)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(TLSError.connectionClosed)
        state = .closed
        context.fireChannelInactive()
    }

    /// Fails the current exchange with `error` and closes the connection.
    private func fail(_ error: any Error) {
        cancelTimers()
        let previous = state
        state = .closed
        switch previous {
        case .awaitingHead(let exchange):
            exchange.head.fail(ExchangeFailure(error: error, noResponseBytes: !bytesRead))
            exchange.body.finish(throwing: error)
            exchange.done.succeed(false)
        case .streamingBody(let exchange, _, _):
            exchange.body.finish(throwing: error)
            exchange.done.succeed(false)
        case .idle, .closed:
            break
        }
        context?.close(promise: nil)
    }

    /// Schedules the exchange's timer for the earlier of the request deadline and the idle-read deadline.
    private func armTimer() {
        guard let context else { return }
        let exchange: ResponseExchange
        switch state {
        case .awaitingHead(let current), .streamingBody(let current, _, _): exchange = current
        case .idle, .closed: return
        }
        let fireAt = min(exchange.deadline, lastRead + exchange.idleReadTimeout)
        let this = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: fireAt) { this.value.timerFired() }
    }

    /// The timer fired: fail the exchange if a deadline passed, else re-arm for the next one.
    private func timerFired() {
        timer = nil
        let exchange: ResponseExchange
        switch state {
        case .awaitingHead(let current), .streamingBody(let current, _, _): exchange = current
        case .idle, .closed: return
        }
        let now = self.now
        // Waiting for the body reader, or for the request to be written, is not the server's silence.
        if readingPaused || !requestWritten { lastRead = now }
        if now >= exchange.deadline {
            fail(TLSError.timeout(.request))
        } else if now >= lastRead + exchange.idleReadTimeout {
            fail(TLSError.timeout(.idleRead))
        } else {
            armTimer()
        }
    }

    private func cancelTimers() {
        timer?.cancel()
        timer = nil
    }

    private static func tooLarge(_ limit: Int) -> TLSError {
        .malformedResponse(
            "response body exceeds the \(limit)-byte limit; raise HTTPSTransport.Configuration.maxResponseBodySize if it is expected")
    }
}

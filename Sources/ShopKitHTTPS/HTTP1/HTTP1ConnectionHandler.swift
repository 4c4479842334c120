import Logging
import NIOCore
import NIOHTTP1
import ShopKitTLS

/// Runs HTTP/1.1 requests on one connection by carrying out ``HTTP1ConnectionStateMachine``'s actions: it
/// delivers the head, streams the body, arms the one timer, holds reads back, closes the connection and gives
/// it back to the pool. Every decision is the state machine's; every method runs on the channel's event loop.
/// Time is the event loop's clock (`EventLoop.now`), so tests can drive it.
///
/// Responses are framed by ``HTTP1ResponseDecoder`` from the connection's bytes: each ends exactly where its
/// framing says, and a byte after that end (in the same read, a later one, or on an idle connection) is never
/// decoded for anyone; it makes the connection doubtful, so it is closed and never reused.
///
/// The connection goes back to the pool in a new event-loop task, never inside the read or the write completion
/// that ended the exchange, and only if nothing arrived and the channel is still open by then.
///
/// Backpressure: when the body stream holds more unread bytes than its high watermark, the handler holds back
/// the channel's next `read`, and lets it through once the reader has drained the stream (``resumeReading()``).
/// So a slow reader bounds the memory of a large body, and the event loop does not race ahead of the reader.
package final class HTTP1ConnectionHandler: ChannelDuplexHandler, RequestHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundIn = HTTPClientRequestPart
    package typealias OutboundOut = HTTPClientRequestPart

    private var machine = HTTP1ConnectionStateMachine()
    private var decoder = HTTP1ResponseDecoder()
    /// The request running, until the machine releases the connection.
    private var current: (any ExchangeEvents)?
    private var delivery = ResponseDelivery()
    /// A hand-over to the pool is scheduled (``handOver(endingBody:)``): the held head waits for it.
    private var handOverScheduled = false
    /// Where the handler logs what it drops (the transport's logger; names only, never values).
    private let logger: Logger

    private var context: ChannelHandlerContext?
    /// The connection's one timer, for the request running. It outlives a request that ends normally: the next
    /// request keeps it when it fires no later than that request needs, and a firing with no request running does
    /// nothing (so an idle connection's timer fires once and is gone). Cancelled when the connection closes.
    private var timer = RequestTimer()

    /// A handler with no request yet; `logger` gets what it drops (trailers).
    package init(logger: Logger = TLSClientConfiguration.disabledLogger) {
        self.logger = logger
    }

    package func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    package func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
        delivery.handOverHeldHead()
        self.context = nil
    }

    /// The event loop's current time.
    private var now: NIODeadline { context?.eventLoop.now ?? .now() }

    // MARK: From the request's caller (on the event loop)

    package func start(_ exchange: any ExchangeEvents, id: HTTP1ConnectionStateMachine.RequestID) {
        let action = machine.start(
            id, limits: exchange.limits, requestKeepAlive: exchange.requestKeepAlive, isHead: exchange.isHead,
            now: now, channelActive: context?.channel.isActive ?? false)
        switch action {
        case .start(let deadline):
            current = exchange
            decoder.expectResponse(isHead: exchange.isHead)
            timer.arm(noLaterThan: deadline, on: context?.eventLoop, TimerFired(handler: self))
        case .refuse(let failed):
            delivery.fail(exchange, failed)
            exchange.release(reusable: false)
        }
    }

    package func requestSent(_ id: HTTP1ConnectionStateMachine.RequestID) {
        switch machine.requestWritten(id, now: now) {
        case .none:
            break
        case .release(let reusable):
            // An early response's request end was just written, from inside a write's completion: hand the
            // connection back once this event is over, never from inside it (no re-entrant hand-over).
            cancelTimer()
            if reusable {
                handOver(endingBody: false)
            } else {
                context?.close(promise: nil)
                release(reusable: false)
            }
        }
    }

    func requestFailed(_ id: HTTP1ConnectionStateMachine.RequestID) {
        perform(machine.requestWriteFailed(id))
    }

    func cancel(_ id: HTTP1ConnectionStateMachine.RequestID) {
        perform(machine.cancel(id))
    }

    func write(_ part: HTTPClientRequestPart, flush: Bool, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(HTTPSTransportError.connectionClosed)
            return
        }
        context.write(wrapOutboundOut(part), promise: promise)
        if flush { context.flush() }
    }

    /// No promise: below this handler a write that fails closes the connection (TLS fails the connection on
    /// plaintext it cannot take, the socket closes on a write error), and the close fails the request. So the
    /// request's end counts as written once it is handed on, and the idle-read clock starts now.
    func writeWhole(_ head: HTTPRequestHead, id: HTTP1ConnectionStateMachine.RequestID) {
        write(.head(head), flush: false, promise: nil)
        write(.end(nil), flush: true, promise: nil)
        requestSent(id)
    }

    func resumeReading() {
        if machine.readerCaughtUp(now: now) { context?.read() }
    }

    // MARK: From the channel

    /// Decodes the read's responses part by part; bytes after the expected response's end are dropped, and make
    /// the connection doubtful.
    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !machine.bytesRead(now: now) else {
            // Bytes on an idle connection: nobody asked for them.
            context.close(promise: nil)
            return
        }
        delivery.reading = true
        var buffer = unwrapInboundIn(data)
        while true {
            let event: HTTP1ResponseDecoder.Event
            do {
                event = try decoder.next(&buffer)
            } catch {
                perform(machine.errorCaught(.transport(.malformedResponse(.invalidHTTP1(error.reason)))))
                return
            }
            switch event {
            case .needMoreData:
                return
            case .stray:
                perform(machine.strayBytes())
                return
            case .part(let part):
                handle(part, context: context)
            }
        }
    }

    private func handle(_ part: HTTP1ResponseDecoder.Part, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            switch machine.responseHead(head) {
            case .none: break
            case .deliver(let head): if let current { delivery.deliver(head, to: current) }
            case .close(let close): perform(close)
            }
        case .body(let buffer):
            switch machine.responseBody(buffer) {
            case .none: break
            case .deliver(let buffer):
                if let current, !delivery.deliver(buffer, to: current) { machine.readerBehind() }
            case .close(let close): perform(close)
            }
        case .end(let trailers):
            ResponseDelivery.dropTrailers(trailers, logger: logger)
            switch machine.responseEnd() {
            case .none:
                break
            case .awaitReadComplete(let resumeRead):
                // The timer stays armed for the next request (see `timer`).
                if resumeRead { context.read() }
            case .earlyResponse(let resumeRead):
                cancelTimer()
                current?.receiveEnd()
                if resumeRead { context.read() }
            case .close(let close):
                perform(close)
            }
        }
    }

    /// The read is fully processed: a response that ended in this read is released (the pool may start the next
    /// request here, no sooner) and its body stream ends; then the held head goes to its caller, who finds the
    /// request over and the body of that read buffered.
    package func channelReadComplete(context: ChannelHandlerContext) {
        switch machine.readComplete() {
        case .none:
            break
        case .release(let reusable):
            if reusable {
                handOver(endingBody: true)
            } else {
                release(reusable: false, endingBody: true)
                context.close(promise: nil)
            }
        }
        // A head held for a hand-over goes to its caller after it (the caller finds the exchange over).
        delivery.readComplete(handingOverHead: !handOverScheduled)
        context.fireChannelReadComplete()
    }

    package func read(context: ChannelHandlerContext) {
        if machine.readRequested() { context.read() }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSUncleanShutdown { perform(machine.uncleanShutdown()) }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        perform(machine.errorCaught(ResponseDelivery.failure(for: error)))
    }

    package func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        if let end = decoder.connectionEnded() {
            // A body framed by the connection's end is complete (an unclean end failed the request before).
            handle(end, context: context)
        }
        switch machine.channelInactive() {
        case .none:
            break
        case .releaseEnded(let reusable):
            // Closed: nothing can start on it, so no hand-over is needed (the pool never reuses a closed one).
            release(reusable: reusable, endingBody: true)
        case .failRequest(let failed):
            cancelTimer()
            if let exchange = current {
                release(reusable: false)
                delivery.fail(exchange, failed)
            }
        }
        delivery.handOverHeldHead()
        context.fireChannelInactive()
    }

    // MARK: Carrying out

    /// Carries out a close: fails the request or ends its response, releases the connection, closes it.
    private func perform(_ action: HTTP1ConnectionStateMachine.CloseAction) {
        switch action {
        case .none:
            return
        case .failRequest(let failed):
            cancelTimer()
            if let exchange = current {
                release(reusable: false)
                delivery.fail(exchange, failed)
            }
        case .endResponseAndClose:
            release(reusable: false, endingBody: true)
        case .close:
            break
        }
        context?.close(promise: nil)
    }

    /// Gives the connection back to the pool for the request that ran, at once: exactly once per request, for a
    /// connection that is not reusable (or closed already). `endingBody`: the response ended, so its body stream
    /// ends right after the release (a caller that read the body to its end finds the connection released).
    private func release(reusable: Bool, endingBody: Bool = false) {
        guard let exchange = current else { return }
        current = nil
        exchange.release(reusable: reusable)
        if endingBody { exchange.receiveEnd() }
    }

    /// Gives a reusable connection back to the pool for the request that ran, in a new event-loop task: never
    /// inside the event that ended the exchange (a read, a write's completion), so the next request is never
    /// written there. By then a byte that arrived, or the channel's close, has made the connection doubtful: it is
    /// then released as not reusable. The body stream's end and a head held to the end of the read follow the
    /// release, so a caller that finds its response over finds the connection back in the pool.
    private func handOver(endingBody: Bool) {
        guard let exchange = current else { return }
        current = nil
        guard let loop = context?.eventLoop else {
            exchange.release(reusable: false)
            if endingBody { exchange.receiveEnd() }
            return
        }
        handOverScheduled = true
        loop.assumeIsolated().execute { [self] in
            handOverScheduled = false
            exchange.release(reusable: machine.isIdle && context?.channel.isActive == true)
            if endingBody { exchange.receiveEnd() }
            delivery.handOverHeldHead()
        }
    }

    private func arm(_ deadline: NIODeadline) {
        timer.arm(at: deadline, on: context?.eventLoop, TimerFired(handler: self))
    }

    private func cancelTimer() {
        timer.cancel()
    }

    /// The request's timer fired (on the event loop).
    private struct TimerFired: NIOScheduledCallbackHandler {
        let handler: HTTP1ConnectionHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.timer.didFire()
            switch handler.machine.timerFired(now: handler.now) {
            case .none: break
            case .rearm(let deadline): handler.arm(deadline)
            case .close(let close): handler.perform(close)
            }
        }
    }
}

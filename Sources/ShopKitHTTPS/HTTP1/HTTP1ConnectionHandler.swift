import Logging
import NIOCore
import NIOHTTP1
import ShopKitTLS

/// Runs HTTP/1.1 requests on one connection by carrying out ``HTTP1ConnectionStateMachine``'s actions: it
/// delivers the head, streams the body, arms the one timer, holds reads back, closes the connection and gives
/// it back to the pool. Every decision is the state machine's; every method runs on the channel's event loop.
/// Time is the event loop's clock (`EventLoop.now`), so tests can drive it.
///
/// Backpressure: when the body stream holds more unread bytes than its high watermark, the handler holds back
/// the channel's next `read`, and lets it through once the reader has drained the stream (``resumeReading()``).
/// So a slow reader bounds the memory of a large body, and the event loop does not race ahead of the reader.
package final class HTTP1ConnectionHandler: ChannelDuplexHandler, RequestHandler {
    package typealias InboundIn = HTTPClientResponsePart
    package typealias OutboundIn = HTTPClientRequestPart
    package typealias OutboundOut = HTTPClientRequestPart

    private var machine = HTTP1ConnectionStateMachine()
    /// The request running, until the machine releases the connection.
    private var current: RequestContext?
    private var delivery = ResponseDelivery()
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

    package func start(_ request: RequestContext) {
        let action = machine.start(
            request.id, limits: request.limits, requestKeepAlive: request.requestKeepAlive, isHead: request.isHead,
            now: now, channelActive: context?.channel.isActive ?? false)
        switch action {
        case .start(let deadline):
            current = request
            timer.arm(noLaterThan: deadline, on: context?.eventLoop, TimerFired(handler: self))
        case .refuse(let failed):
            delivery.fail(request, failed)
            request.release(false)
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
            guard let request = current else { return }
            current = nil
            if !reusable { context?.close(promise: nil) }
            if let loop = context?.eventLoop {
                loop.assumeIsolated().execute { request.release(reusable) }
            } else {
                request.release(reusable)
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

    /// Called by ``InboundByteObserver`` for every inbound read; returns whether the bytes go on to the decoder
    /// (not when they close the connection: nobody asked for them).
    package func noteBytesRead() -> Bool {
        guard machine.bytesRead(now: now) else { return true }
        context?.close(promise: nil)
        return false
    }

    // MARK: From the channel

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        delivery.reading = true
        switch unwrapInboundIn(data) {
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
                current?.body.finish()
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
            let ended = current
            release(reusable: reusable)
            ended?.body.finish()
            if !reusable { context.close(promise: nil) }
        }
        delivery.readComplete()
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
        switch machine.channelInactive() {
        case .none:
            break
        case .releaseEnded(let reusable):
            let ended = current
            release(reusable: reusable)
            ended?.body.finish()
        case .failRequest(let failed):
            cancelTimer()
            if let request = current {
                release(reusable: false)
                delivery.fail(request, failed)
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
            if let request = current {
                release(reusable: false)
                delivery.fail(request, failed)
            }
        case .endResponseAndClose:
            let ended = current
            release(reusable: false)
            ended?.body.finish()
        case .close:
            break
        }
        context?.close(promise: nil)
    }

    /// Gives the connection back to the pool for the request that ran: exactly once per request.
    private func release(reusable: Bool) {
        guard let request = current else { return }
        current = nil
        request.release(reusable)
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

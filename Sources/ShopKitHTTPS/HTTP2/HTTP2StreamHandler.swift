import Logging
import NIOCore
import NIOHTTP1
import ShopKitTLS

/// Runs the one request of an HTTP/2 stream by carrying out ``HTTPRequestStateMachine``'s actions directly: a
/// stream carries one request, so there is no keep-alive, no hand-over and nothing after the response to judge
/// (swift-nio-http2 refuses frames after a stream's end). Every method runs on the channel's event loop.
///
/// A stream closes itself once both sides have ended it, so a request whose response ended after the whole
/// request was written is released without a close (closing the stream channel then would send the server an
/// RST_STREAM for a finished stream). A response that ends before the request does resets the stream, which
/// stops the upload (RFC 9113 §8.1). The released "connection" is the stream's slot on its HTTP/2 connection.
final class HTTP2StreamHandler: ChannelDuplexHandler, RequestHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private var request: (context: RequestContext, machine: HTTPRequestStateMachine)?
    /// The response ended after the whole request was written, inside the current read: the slot is released
    /// when the read is over (or when the stream closes first), never inside the read.
    private var ending = false
    private var delivery = ResponseDelivery()
    private let logger: Logger
    /// Why the connection under this stream closed, when it knows better than "closed" (a missed PING
    /// acknowledgement, a connection error); read on the event loop when the stream fails.
    private let closeReason: () -> HTTPSTransportError?

    private var context: ChannelHandlerContext?
    /// The request's one timer.
    private var timer = RequestTimer()

    init(logger: Logger, closeReason: @escaping () -> HTTPSTransportError?) {
        self.logger = logger
        self.closeReason = closeReason
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) {
        delivery.handOverHeldHead()
        self.context = nil
    }

    private var now: NIODeadline { context?.eventLoop.now ?? .now() }

    // MARK: From the request's caller (on the event loop)

    func start(_ request: RequestContext) {
        guard self.request == nil, context?.channel.isActive ?? false else {
            delivery.fail(
                request,
                .init(failure: .transport(.connectionClosed), noResponseBytes: true, headDelivered: false))
            request.release(false)
            return
        }
        let machine = HTTPRequestStateMachine(
            limits: request.limits, requestKeepAlive: request.requestKeepAlive, isHead: request.isHead, now: now)
        self.request = (request, machine)
        arm(machine.firstDeadline)
    }

    func requestSent(_ id: HTTP1ConnectionStateMachine.RequestID) {
        guard case (let request, var machine)? = self.request, request.id == id else { return }
        // An early response resets its stream as it ends, so the request is never over here.
        _ = machine.requestWritten(now: now)
        self.request = (request, machine)
    }

    func requestFailed(_ id: HTTP1ConnectionStateMachine.RequestID) {
        guard let request, request.context.id == id else { return }
        fail(.transport(.connectionClosed))
    }

    func cancel(_ id: HTTP1ConnectionStateMachine.RequestID) {
        guard let request, request.context.id == id else { return }
        fail(.cancelled)
    }

    func resumeReading() {
        guard case (let request, var machine)? = self.request else { return }
        let read = machine.readerCaughtUp(now: now)
        self.request = (request, machine)
        if read { context?.read() }
    }

    /// Called by ``InboundByteObserver`` for every inbound read.
    func noteBytesRead() {
        guard case (let request, var machine)? = self.request else { return }
        machine.bytesRead(now: now)
        self.request = (request, machine)
    }

    // MARK: From the stream channel

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        delivery.reading = true
        guard case (let request, var machine)? = self.request, machine.isRunning else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            let action = machine.responseHead(head)
            self.request = (request, machine)
            switch action {
            case .none: break
            case .deliver(let head): delivery.deliver(head, to: request)
            case .fail(let failed): failRequest(failed)
            }
        case .body(let buffer):
            let action = machine.responseBody(buffer)
            switch action {
            case .deliver(let buffer): if !delivery.deliver(buffer, to: request) { machine.readerBehind() }
            case .fail: break
            }
            self.request = (request, machine)
            if case .fail(let failed) = action { failRequest(failed) }
        case .end(let trailers):
            ResponseDelivery.dropTrailers(trailers, logger: logger)
            let action = machine.responseEnd()
            self.request = (request, machine)
            switch action {
            case .complete(_, let resumeRead):
                // Both sides ended the stream: it closes by itself, and its slot is free once this read is over.
                cancelTimer()
                ending = true
                if resumeRead { context.read() }
            case .earlyResponse:
                // The server answered before the upload ended: reset the stream to stop it (RFC 9113 §8.1).
                cancelTimer()
                request.body.finish()
                end(reusable: false)
                context.close(promise: nil)
            case .fail(let failed):
                failRequest(failed)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if ending { end(reusable: true) }
        delivery.readComplete()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        guard case (let request, var machine)? = self.request else {
            context.read()
            return
        }
        let through = machine.readRequested()
        self.request = (request, machine)
        if through { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard request?.machine.isRunning == true else { return }
        let failure = ResponseDelivery.failure(for: error)
        // swift-nio-http2 closes the streams of a connection error before it reports the error on the
        // connection: look again once this event is over, so the caller hears what happened to the connection
        // (``closeReason``), not its side effect on the stream.
        context.eventLoop.assumeIsolated().execute {
            self.fail(self.closeReason().map { .transport($0) } ?? failure)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if request?.machine.isRunning == true {
            // As in `errorCaught`: a stream closed under a running request may be a connection error's doing.
            context.eventLoop.assumeIsolated().execute {
                self.fail(.transport(self.closeReason() ?? .connectionClosed))
                self.delivery.handOverHeldHead()
            }
        } else {
            if ending { end(reusable: true) }  // the stream closed itself before the read was over
            delivery.handOverHeldHead()
        }
        context.fireChannelInactive()
    }

    // MARK: Carrying out

    /// Fails the running request (if any) and resets the stream.
    private func fail(_ failure: HTTPRequestStateMachine.Failure) {
        guard case (let request, var machine)? = self.request, let failed = machine.fail(failure) else { return }
        self.request = (request, machine)
        failRequest(failed)
    }

    /// Carries out a failure the machine decided: the caller hears it, the slot is released, the stream reset.
    private func failRequest(_ failed: HTTPRequestStateMachine.Failed) {
        cancelTimer()
        guard let request else { return }
        end(reusable: false)
        delivery.fail(request.context, failed)
        context?.close(promise: nil)
    }

    /// Releases the stream's slot (exactly once) and, when reusable, ends the body stream normally.
    private func end(reusable: Bool) {
        guard let (request, _) = self.request else { return }
        self.request = nil
        ending = false
        request.release(reusable)
        if reusable { request.body.finish() }
    }

    private func arm(_ deadline: NIODeadline) {
        timer.arm(at: deadline, context: context, TimerFired(handler: self))
    }

    private func cancelTimer() {
        timer.cancel()
    }

    private struct TimerFired: NIOScheduledCallbackHandler {
        let handler: HTTP2StreamHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.timer.didFire()
            guard case (let request, var machine)? = handler.request else { return }
            let action = machine.timerFired(now: handler.now)
            handler.request = (request, machine)
            switch action {
            case .none: break
            case .rearm(let deadline): handler.arm(deadline)
            case .fail(let failed): handler.failRequest(failed)
            }
        }
    }
}

import Logging
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One HTTP/2 stream carrying one request: it carries out ``HTTPRequestStateMachine``'s actions directly (a
/// stream carries one request, so there is no keep-alive, no hand-over and nothing after the response to judge),
/// turns the request's parts into frames and the response's frames into the machine's events.
///
/// No channel of its own: ``HTTP2ConnectionHandler`` owns every stream of its connection, hands each its frames
/// and events, and writes its frames. Every method runs on the connection's event loop.
///
/// A stream closes by itself once both sides ended it, so a request whose response ended after the whole request
/// was written is released without a reset. A response that ends before the request does resets the stream,
/// which stops the upload (RFC 9113 §8.1). The released "connection" is the stream's slot on its connection.
///
/// Flow control: the stream's window is topped up as its body is handed to the reader, and not while the reader
/// is behind, so a reader that stops holds at most a window of its stream's body, and never slows the others.
package final class HTTP2Stream: RequestHandler {
    /// The stream's id, taken when its HEADERS are written (nil before: see
    /// ``HTTP2ConnectionHandler/assignID(to:)``).
    package private(set) var id: HTTP2StreamID?
    /// Held until the stream is forgotten: the connection drops its streams when it closes.
    private let connection: HTTP2ConnectionHandler

    private var request: (exchange: any ExchangeEvents, id: HTTP1ConnectionStateMachine.RequestID, machine: HTTPRequestStateMachine)?
    /// The response ended after the whole request was written, inside the current read: the slot is released
    /// when the read is over (or when the stream closes first), never inside the read.
    private var ending = false
    private var delivery = ResponseDelivery()
    /// The request's one timer.
    private var timer = RequestTimer()
    /// The request head, held until the next part so that a bodiless request is one HEADERS frame with
    /// END_STREAM.
    private var heldHead: HTTPRequestHead?
    /// Whether the request's HEADERS were written (the stream exists for swift-nio-http2 and the server).
    private var opened: Bool { id != nil }
    /// Whether swift-nio-http2 closed the stream (both ends, or a reset either way).
    private(set) var closed = false
    /// The stream's receive window as swift-nio-http2 last reported it, and whether an update is held back for
    /// a reader that is behind.
    private var window = HTTP2ConnectionHandler.streamWindowSize
    private var readerBehind = false
    /// Whether the response's final head arrived (a later HEADERS frame is the trailers).
    private var finalHeadReceived = false
    /// Set by the connection while the stream is on its list of streams to finish the current read.
    var touchedInRead = false

    init(connection: HTTP2ConnectionHandler) {
        self.connection = connection
    }

    private var now: NIODeadline { connection.now }

    // MARK: From the request's caller (RequestHandler)

    package func start(_ exchange: any ExchangeEvents, id: HTTP1ConnectionStateMachine.RequestID) {
        // A stream closed before its request starts: the server's GOAWAY refused it while it had no id, or the
        // connection closed or failed (it was opened on the loop, then that was read before the request hopped
        // on). Nothing of the request was written: it goes out on another connection, and this is no attempt.
        guard self.request == nil, !closed, connection.isActive else {
            exchange.fail(ExchangeFailure(error: ConnectionNotQuiet(), noResponseBytes: true))
            exchange.release(reusable: false)
            connection.remove(self)
            return
        }
        let machine = HTTPRequestStateMachine(
            limits: exchange.limits, requestKeepAlive: exchange.requestKeepAlive, isHead: exchange.isHead, now: now)
        self.request = (exchange, id, machine)
        arm(machine.firstDeadline)
    }

    package func write(_ part: HTTPClientRequestPart, flush: Bool, promise: EventLoopPromise<Void>?) {
        guard !closed, request != nil || opened else {
            promise?.fail(HTTPSTransportError.connectionClosed)
            return
        }
        switch part {
        case .head(let head):
            heldHead = head
            promise?.succeed()
            guard flush else { return }
            writeHeldHead(endStream: false)
        case .body(.byteBuffer(let buffer)):
            writeHeldHead(endStream: false)
            guard let id else {
                promise?.fail(HTTPSTransportError.connectionClosed)
                return
            }
            connection.write(.init(streamID: id, payload: .data(.init(data: .byteBuffer(buffer)))), promise: promise)
        case .body(.fileRegion):
            promise?.fail(HTTPSTransportError.connectionClosed)
            return
        case .end(let trailers):
            if heldHead != nil {
                writeHeldHead(endStream: trailers == nil, promise: trailers == nil ? promise : nil)
                if trailers == nil { break }
            }
            if let trailers, let id {
                connection.write(
                    .init(streamID: id, payload: .headers(.init(headers: HPACKHeaders(httpHeaders: trailers), endStream: true))),
                    promise: promise)
            } else if trailers == nil, let id {
                connection.write(
                    .init(streamID: id, payload: .data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))),
                    promise: promise)
            } else {
                promise?.fail(HTTPSTransportError.connectionClosed)
            }
        }
        if flush { connection.flush() }
    }

    /// Writes the held head as the stream's HEADERS, taking the stream's id right before: no other frame goes out
    /// in between, so ids reach the wire in the order they are taken.
    private func writeHeldHead(endStream: Bool, promise: EventLoopPromise<Void>? = nil) {
        guard let head = heldHead else { return }
        heldHead = nil
        guard let id = connection.assignID(to: self) else {
            promise?.fail(HTTPSTransportError.connectionClosed)
            return
        }
        self.id = id
        connection.write(
            .init(streamID: id, payload: .headers(.init(headers: HTTP2Headers.request(head), endStream: endStream))),
            promise: promise)
    }

    /// One HEADERS frame with END_STREAM. Its write has a promise: swift-nio-http2 can fail a frame without
    /// closing the connection (a stream it buffered over the server's limit, then refused by GOAWAY).
    func writeWhole(_ head: HTTPRequestHead, id: HTTP1ConnectionStateMachine.RequestID) {
        let written = connection.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success: requestSent(id)
            case .failure: requestFailed(id)
            }
        }
        write(.head(head), flush: false, promise: nil)
        write(.end(nil), flush: true, promise: written)
    }

    package func requestSent(_ id: HTTP1ConnectionStateMachine.RequestID) {
        guard let request, request.id == id else { return }
        // An early response resets its stream as it ends, so the request is never over here.
        _ = self.request!.machine.requestWritten(now: now)
    }

    /// Writing the request failed. Above a GOAWAY's last stream id that is the GOAWAY's refusal (the write
    /// failed because the stream was closed by it), whichever of the two is reported first.
    func requestFailed(_ id: HTTP1ConnectionStateMachine.RequestID) {
        guard let request, request.id == id else { return }
        fail(.transport(.connectionClosed), refusedBy: connection.refusal(of: self))
    }

    func cancel(_ id: HTTP1ConnectionStateMachine.RequestID) {
        guard let request, request.id == id else { return }
        fail(.cancelled)
    }

    func resumeReading() {
        guard request != nil else { return }
        _ = request!.machine.readerCaughtUp(now: now)
        readerBehind = false
        updateWindow()
        connection.flush()
    }

    // MARK: From the connection

    /// A frame for this stream (HEADERS, DATA or RST_STREAM; swift-nio-http2 validated it).
    func received(_ payload: HTTP2Frame.FramePayload) {
        guard request != nil else { return }
        request!.machine.bytesRead(now: now)
        switch payload {
        case .headers(let headers):
            if finalHeadReceived {
                guard headers.endStream else {
                    fail(.transport(.malformedResponse(.http2TrailersWithoutEndStream)))
                    return
                }
                ResponseDelivery.dropTrailers(HTTP2Headers.regularHeaders(headers.headers), logger: connection.logger)
                responseEnded()
                return
            }
            let head: HTTPResponseHead
            do {
                head = try HTTP2Headers.response(headers.headers)
            } catch {
                fail(.transport(error))
                return
            }
            if head.status.code >= 200 { finalHeadReceived = true }
            responseHead(head)
            if headers.endStream, request != nil {
                if !finalHeadReceived {
                    fail(.transport(.malformedResponse(.http2EndAfterInformational)))
                    return
                }
                responseEnded()
            }
        case .data(let data):
            guard case .byteBuffer(let buffer) = data.data else { return }
            if buffer.readableBytes > 0 || !data.endStream { responseBody(buffer) }
            if data.endStream, request != nil { responseEnded() }
        case .rstStream(let code):
            closed = true
            fail(.transport(.streamReset(code: code.transportCode)))
        default:
            break
        }
    }

    /// swift-nio-http2 reported the stream's receive window.
    func windowChanged(to size: Int) {
        window = size
        updateWindow()
    }

    /// swift-nio-http2 closed the stream: both sides ended it, or a reset either way, or the server's GOAWAY
    /// dropped it (then `refusedBy` is the GOAWAY's error code).
    func streamClosed(reason: HTTP2ErrorCode?, refusedBy goAwayCode: HTTPSTransportError.HTTP2ErrorCode?) {
        closed = true
        if request?.machine.isRunning == true {
            let failure: HTTPRequestStateMachine.Failure = .transport(.streamReset(code: (reason ?? .cancel).transportCode))
            connection.afterEvent { [self] in fail(connection.closeReason ?? failure, refusedBy: goAwayCode) }
        } else if ending {
            end(reusable: true)  // the stream closed itself before the read was over
        }
        if request == nil { connection.remove(self) }
    }

    /// swift-nio-http2 reported a protocol error of this stream (it reset the stream).
    func streamError(_ error: any Error) {
        guard request?.machine.isRunning == true else { return }
        let failure: HTTPRequestStateMachine.Failure
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            failure = .transport(.streamReset(code: closed.errorCode.transportCode))
        } else {
            failure = .transport(.malformedResponse(.http2StreamError(HTTP2ConnectionHandler.name(of: error))))
        }
        connection.afterEvent { [self] in fail(connection.closeReason ?? failure, refusedBy: connection.refusal(of: self)) }
    }

    /// The connection closed under the stream.
    func connectionClosed() {
        closed = true
        if request?.machine.isRunning == true {
            fail(connection.closeReason ?? .transport(.connectionClosed), refusedBy: connection.refusal(of: self))
        } else if ending {
            end(reusable: true)
        }
        delivery.handOverHeldHead()
    }

    /// The read is over: a response that ended in it releases its slot, then its held head goes to the caller.
    func readComplete() {
        if ending { end(reusable: true) }
        delivery.readComplete()
    }

    // MARK: The response

    private func responseHead(_ head: HTTPResponseHead) {
        delivery.reading = true
        connection.touched(self)
        let action = request!.machine.responseHead(head)
        switch action {
        case .none: break
        case .deliver(let head): delivery.deliver(head, to: request!.exchange)
        case .fail(let failed): carryOut(failed)
        }
    }

    private func responseBody(_ buffer: ByteBuffer) {
        delivery.reading = true
        connection.touched(self)
        switch request!.machine.responseBody(buffer) {
        case .deliver(let buffer):
            if !delivery.deliver(buffer, to: request!.exchange) {
                request!.machine.readerBehind()
                readerBehind = true
            }
        case .fail(let failed):
            carryOut(failed)
        }
    }

    private func responseEnded() {
        guard let request else { return }
        delivery.reading = true
        connection.touched(self)
        switch self.request!.machine.responseEnd() {
        case .complete:
            // Both sides ended the stream: it closes by itself, and its slot is free once this read is over.
            cancelTimer()
            ending = true
        case .earlyResponse:
            // The server answered before the upload ended: reset the stream to stop it (RFC 9113 §8.1).
            cancelTimer()
            request.exchange.receiveEnd()
            end(reusable: false)
            reset()
        case .fail(let failed):
            carryOut(failed)
        }
    }

    // MARK: Carrying out

    /// Fails the running request (if any) and resets the stream.
    private func fail(_ failure: HTTPRequestStateMachine.Failure, refusedBy goAwayCode: HTTPSTransportError.HTTP2ErrorCode? = nil) {
        guard request != nil, let failed = request!.machine.fail(failure) else { return }
        carryOut(failed, refusedBy: goAwayCode)
    }

    /// Carries out a failure the machine decided: the caller hears it, the slot is released, the stream reset.
    private func carryOut(_ failed: HTTPRequestStateMachine.Failed, refusedBy goAwayCode: HTTPSTransportError.HTTP2ErrorCode? = nil) {
        cancelTimer()
        guard let request else { return }
        end(reusable: false)
        delivery.fail(request.exchange, failed, refusedByGoAway: goAwayCode)
        reset()
    }

    /// Releases the stream's slot (exactly once) and, when reusable, ends the body stream normally.
    private func end(reusable: Bool) {
        guard let (exchange, _, _) = self.request else { return }
        self.request = nil
        ending = false
        exchange.release(reusable: reusable)
        if reusable { exchange.receiveEnd() }
        if closed { connection.remove(self) }
    }

    /// Resets the stream (RST_STREAM CANCEL) unless it is closed already or was never opened; the connection
    /// forgets it.
    private func reset() {
        heldHead = nil
        if let id, !closed {
            closed = true
            connection.write(.init(streamID: id, payload: .rstStream(.cancel)), promise: nil)
            connection.flush()
        }
        closed = true
        if request == nil { connection.remove(self) }
    }

    /// Tops the stream's window up to its target once half of it was used, unless the reader is behind.
    private func updateWindow() {
        guard !readerBehind, !closed, let id, let increment = HTTP2ConnectionHandler.windowIncrement(window) else { return }
        window += increment
        connection.write(.init(streamID: id, payload: .windowUpdate(windowSizeIncrement: increment)), promise: nil)
    }

    private func arm(_ deadline: NIODeadline) {
        timer.arm(at: deadline, on: connection.eventLoop, TimerFired(stream: self))
    }

    private func cancelTimer() {
        timer.cancel()
    }

    private struct TimerFired: NIOScheduledCallbackHandler {
        let stream: HTTP2Stream

        func handleScheduledCallback(eventLoop: some EventLoop) {
            stream.timer.didFire()
            guard stream.request != nil else { return }
            switch stream.request!.machine.timerFired(now: stream.now) {
            case .none: break
            case .rearm(let deadline): stream.arm(deadline)
            case .fail(let failed): stream.carryOut(failed)
            }
        }
    }
}

import NIOCore
import NIOHTTP1
import ShopKitTLS

/// One connection's HTTP/1.1 exchanges as a pure state machine: events in, actions out, no I/O, no clock of
/// its own (the caller passes `now`). ``HTTPClientConnectionHandler`` feeds it the channel's events and carries
/// the actions out.
///
/// One exchange runs at a time, identified by an explicit ``ExchangeID`` (a late event for an exchange that has
/// ended is ignored). Every exchange that starts ends in exactly one ``Actions/release`` (reusable or not),
/// emitted by the two places that leave the running state, ``finish(_:reusable:)`` and ``readComplete()``: the
/// connection goes back to the pool exactly once, whatever path ends the exchange.
///
/// No re-entrant hand-over: a response that ends inside a read (every response does) is released only once that
/// read has been fully processed (``readComplete()``), together with the end of its body stream, so the pool can
/// never start the next request on this connection while the rest of the read is still being decoded. Anything
/// that arrives meanwhile (stray bytes, a second response nobody asked for) makes the connection doubtful: it is
/// closed, never handed over.
///
/// Rules it enforces:
/// - Keep-alive: the connection is reusable only when the response ended with keep-alive on both sides
///   *and* the whole request was written.
/// - Limits: a `Content-Length` or a streamed body above the exchange's limit fails it.
/// - Timers: one timer per exchange, firing at the earlier of the whole-request deadline and the idle-read
///   deadline. The idle-read clock runs only once the request is written and while the body reader keeps up;
///   reads only move `lastRead`, the timer re-arms itself when it fires early.
/// - Truncation: a TCP close without TLS close_notify fails the exchange in progress, so a body framed by the
///   connection's end is never accepted as complete on a FIN anyone could forge.
/// - Backpressure: while the body reader is behind, the channel's reads are held back.
/// - HTTP/2 streams (``init(stream:)``): the stream closes itself once both sides have ended it, so a
///   response that ended after the whole request was written is released without a close (closing the stream
///   channel then would send the server an RST_STREAM for a finished stream). A response that ended before the
///   request did still resets the stream, which stops the upload (RFC 9113 §8.1).
package struct HTTP1ExchangeStateMachine {
    /// Identifies one exchange on a connection.
    package struct ExchangeID: Hashable, Sendable, CustomStringConvertible {
        let raw: Int
        package init(raw: Int) { self.raw = raw }
        package var description: String { "exchange #\(raw)" }
    }

    /// The limits of one exchange.
    package struct Limits: Sendable, Equatable {
        /// The whole-request deadline.
        let deadline: NIODeadline
        /// The longest silence once the request is written.
        let idleReadTimeout: TimeAmount
        /// The most response-body bytes accepted.
        let maxResponseBodyBytes: Int

        package init(deadline: NIODeadline, idleReadTimeout: TimeAmount, maxResponseBodyBytes: Int) {
            self.deadline = deadline
            self.idleReadTimeout = idleReadTimeout
            self.maxResponseBodyBytes = maxResponseBodyBytes
        }
    }

    /// Why an exchange failed, as the handler reports it.
    enum Failure: Equatable, Sendable {
        case transport(HTTPSTransportError)
        case tls(TLSError)
        /// The caller went away (task cancelled, body dropped).
        case cancelled
    }

    /// What the handler must do, carried out in the order of the fields.
    struct Actions: Equatable {
        /// What to do with the exchange's timer.
        enum Timer: Equatable {
            case keep
            case arm(NIODeadline)
            case cancel
        }

        var timer = Timer.keep
        /// Deliver this response head to the caller.
        var head: HTTPResponseHead?
        /// Hand this chunk to the body reader.
        var body: ByteBuffer?
        /// Give the connection back to the pool (reusable or not). Exactly once per exchange.
        var release: Bool?
        /// End the body stream normally.
        var finishBody = false
        /// Fail the exchange: the head (if not delivered yet) and the body stream.
        var fail: (failure: Failure, noResponseBytes: Bool, headDelivered: Bool)?
        /// Close the connection.
        var close = false
        /// Let a read through to the channel.
        var read = false

        static let none = Actions()

        static func == (lhs: Actions, rhs: Actions) -> Bool {
            lhs.timer == rhs.timer && lhs.head == rhs.head && lhs.body == rhs.body && lhs.release == rhs.release
                && lhs.finishBody == rhs.finishBody && lhs.close == rhs.close && lhs.read == rhs.read
                && lhs.fail?.failure == rhs.fail?.failure && lhs.fail?.noResponseBytes == rhs.fail?.noResponseBytes
                && lhs.fail?.headDelivered == rhs.fail?.headDelivered
        }
    }

    private enum Response: Equatable {
        case awaitingHead
        case streaming(received: Int, keepAlive: Bool)
        /// The response ended (keep-alive on both sides); the request is still being written.
        case complete
    }

    /// An exchange whose response ended inside the current read.
    private struct Ending {
        /// Whether the connection may be reused: keep-alive on both sides, the request written, and nothing
        /// arrived after the response's end.
        var reusable: Bool
    }

    private struct Exchange {
        let id: ExchangeID
        let limits: Limits
        let requestKeepAlive: Bool
        let isHead: Bool
        var requestWritten = false
        var response = Response.awaitingHead
        var bytesRead = false
        var lastRead: NIODeadline
    }

    private enum State {
        case idle
        case running(Exchange)
        /// The response ended inside a read; released at ``readComplete()`` (or when the channel closes first).
        case ending(Ending)
        case closed
    }

    private var state = State.idle
    /// The connection is one HTTP/2 stream: its exchange ends with the stream.
    private let stream: Bool
    /// The body reader is behind: the channel's reads are held back until it catches up.
    private var readingPaused = false
    /// A read the channel asked for while reading was paused.
    private var pendingRead = false

    /// A machine for an HTTP/1.1 connection, or, when `stream`, for one HTTP/2 stream.
    init(stream: Bool = false) { self.stream = stream }

    /// Whether a response ended in the current read and waits for its release.
    private var isEnding: Bool {
        if case .ending = state { return true }
        return false
    }

    /// Whether an exchange is running (its response not complete yet).
    var isRunning: Bool {
        if case .running = state { return true }
        return false
    }

    /// Whether the connection can take a new exchange.
    var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    // MARK: The caller's events

    /// Starts an exchange; the caller then writes the request. On a connection that is busy, closed or not
    /// active the exchange fails at once (no response byte was read: a retry is safe as far as the wire is
    /// concerned) and is released as not reusable.
    mutating func start(
        _ id: ExchangeID, limits: Limits, requestKeepAlive: Bool, isHead: Bool, now: NIODeadline, channelActive: Bool
    ) -> Actions {
        guard case .idle = state, channelActive else {
            if case .idle = state { state = .closed }
            var actions = Actions()
            actions.fail = (.transport(.connectionClosed), true, false)
            actions.release = false
            return actions
        }
        state = .running(
            Exchange(id: id, limits: limits, requestKeepAlive: requestKeepAlive, isHead: isHead, lastRead: now))
        var actions = Actions()
        actions.timer = .arm(min(limits.deadline, now + limits.idleReadTimeout))
        return actions
    }

    /// The request of exchange `id` was written to its end: the idle-read clock starts now (the running timer
    /// fires no later than an idle-read period from now and re-arms for what it finds then).
    mutating func requestWritten(_ id: ExchangeID, now: NIODeadline) -> Actions {
        guard case .running(var exchange) = state, exchange.id == id, !exchange.requestWritten else { return .none }
        exchange.requestWritten = true
        exchange.lastRead = now
        if case .complete = exchange.response { return finish(exchange, reusable: true) }
        state = .running(exchange)
        return .none
    }

    /// Writing the request of exchange `id` failed: the connection is in an unknown state.
    mutating func requestWriteFailed(_ id: ExchangeID) -> Actions {
        guard case .running(let exchange) = state, exchange.id == id else { return .none }
        return fail(.transport(.connectionClosed))
    }

    /// The caller abandoned exchange `id` (task cancelled, body dropped, its body stream failed): the
    /// connection is closed, never reused. Nothing happens when that exchange is over.
    mutating func cancel(_ id: ExchangeID) -> Actions {
        guard case .running(let exchange) = state, exchange.id == id else { return .none }
        return fail(.cancelled)
    }

    /// The body reader is behind (more than the stream's high watermark unread): hold reads back.
    mutating func readerBehind() {
        readingPaused = true
    }

    /// The body reader caught up (or went away): let reads through again.
    mutating func readerCaughtUp(now: NIODeadline) -> Actions {
        guard readingPaused else { return .none }
        if case .running(var exchange) = state {
            // Time spent waiting for the reader is not the server's silence.
            exchange.lastRead = now
            state = .running(exchange)
        }
        var actions = Actions()
        actions.read = resumeReads()
        return actions
    }

    /// The exchange's timer fired: fail it if a deadline passed, else re-arm for the next one.
    mutating func timerFired(now: NIODeadline) -> Actions {
        guard case .running(var exchange) = state, exchange.response != .complete else { return .none }
        // Waiting for the body reader, or for the request to be written, is not the server's silence.
        if readingPaused || !exchange.requestWritten { exchange.lastRead = now }
        state = .running(exchange)
        if now >= exchange.limits.deadline { return fail(.transport(.timeout(.request))) }
        if now >= exchange.lastRead + exchange.limits.idleReadTimeout { return fail(.transport(.timeout(.idleRead))) }
        var actions = Actions()
        actions.timer = .arm(min(exchange.limits.deadline, exchange.lastRead + exchange.limits.idleReadTimeout))
        return actions
    }

    // MARK: The channel's events

    /// Bytes arrived (before the HTTP decoder saw them).
    mutating func bytesRead(now: NIODeadline) {
        if case .ending = state {
            state = .ending(Ending(reusable: false))  // bytes after a complete response: the framing is in doubt
            return
        }
        guard case .running(var exchange) = state else { return }
        exchange.bytesRead = true
        exchange.lastRead = now
        state = .running(exchange)
    }

    /// The channel wants to read.
    mutating func readRequested() -> Actions {
        if readingPaused {
            pendingRead = true
            return .none
        }
        var actions = Actions()
        actions.read = true
        return actions
    }

    /// A decoded response head.
    mutating func responseHead(_ head: HTTPResponseHead) -> Actions {
        switch state {
        case .running(var exchange) where exchange.response == .awaitingHead:
            let code = head.status.code
            if code == 101 {
                // The client never asks for an upgrade, and the decoder stops parsing after a 101.
                return fail(.transport(.malformedResponse("101 Switching Protocols, but the request asked for no upgrade")))
            }
            if code >= 100 && code < 200 { return .none }
            if !exchange.isHead, let length = HTTPConversion.contentLength(head), length > exchange.limits.maxResponseBodyBytes {
                return fail(.transport(.responseBodyTooLarge(limit: exchange.limits.maxResponseBodyBytes)))
            }
            exchange.response = .streaming(received: 0, keepAlive: head.isKeepAlive && exchange.requestKeepAlive)
            state = .running(exchange)
            var actions = Actions()
            actions.head = head
            return actions
        case .idle, .ending, .running, .closed:
            return partOutsideAResponse()
        }
    }

    /// A decoded chunk of the response body.
    mutating func responseBody(_ buffer: ByteBuffer) -> Actions {
        switch state {
        case .running(var exchange):
            guard case .streaming(let received, let keepAlive) = exchange.response else { break }
            let total = received + buffer.readableBytes
            guard total <= exchange.limits.maxResponseBodyBytes else {
                return fail(.transport(.responseBodyTooLarge(limit: exchange.limits.maxResponseBodyBytes)))
            }
            exchange.response = .streaming(received: total, keepAlive: keepAlive)
            state = .running(exchange)
            var actions = Actions()
            actions.body = buffer
            return actions
        case .idle, .ending, .closed:
            break
        }
        return partOutsideAResponse()
    }

    /// The response ended.
    mutating func responseEnd() -> Actions {
        switch state {
        case .running(var exchange):
            guard case .streaming(_, let keepAlive) = exchange.response else { break }
            var actions = Actions()
            actions.timer = .cancel
            if !stream && keepAlive && !exchange.requestWritten {
                // An early response: the connection is reusable once the request's end is out.
                exchange.response = .complete
                state = .running(exchange)
                actions.finishBody = true
            } else {
                // Released, with the body's end, once this read is fully processed.
                state = .ending(Ending(reusable: stream ? exchange.requestWritten : keepAlive))
            }
            actions.read = resumeReads()
            return actions
        case .idle, .ending, .closed:
            break
        }
        return partOutsideAResponse()
    }

    /// The read in progress was fully processed: an exchange whose response ended in it is released now, reusable
    /// only if nothing arrived after the response's end, and its body stream ends.
    mutating func readComplete() -> Actions {
        guard case .ending(let ending) = state else { return .none }
        state = ending.reusable ? .idle : .closed
        var actions = Actions()
        actions.release = ending.reusable
        actions.finishBody = true
        actions.close = !ending.reusable
        return actions
    }

    /// The peer's TCP close came without TLS close_notify: the exchange in progress fails (its body might be
    /// framed by the connection's end, which anyone on the path can forge).
    mutating func uncleanShutdown() -> Actions {
        if case .ending = state {
            state = .ending(Ending(reusable: false))
            return .none
        }
        guard case .running = state else { return .none }
        return fail(.transport(.connectionClosed))
    }

    /// An error in the pipeline (TLS, HTTP parsing, a head too large): the exchange fails, the connection closes.
    mutating func errorCaught(_ failure: Failure) -> Actions {
        fail(failure)
    }

    /// The channel closed; a running exchange fails with `reason`.
    mutating func channelInactive(_ reason: HTTPSTransportError = .connectionClosed) -> Actions {
        // The response that ended in this read stands (a stream closes itself once both sides ended it, maybe
        // before the read completes); the pool does not reuse a closed connection.
        var actions = isEnding ? readComplete() : fail(.transport(reason))
        actions.close = false
        return actions
    }

    // MARK: Ending an exchange (the only places that leave `.running`)

    /// Ends `exchange`: cancels its timer and releases the connection, reusable or closed.
    private mutating func finish(_ exchange: Exchange, reusable: Bool) -> Actions {
        state = reusable ? .idle : .closed
        var actions = Actions()
        actions.timer = .cancel
        actions.release = reusable
        actions.close = !reusable
        return actions
    }

    /// Fails the exchange in progress (if any) with `failure` and closes the connection. An exchange whose
    /// response already ended keeps its response: it is released as not reusable, and its body ends normally.
    private mutating func fail(_ failure: Failure) -> Actions {
        if case .ending = state {
            state = .ending(Ending(reusable: false))
            var actions = readComplete()
            actions.close = true
            return actions
        }
        guard case .running(let exchange) = state else {
            state = .closed
            var actions = Actions()
            actions.close = true
            return actions
        }
        var actions = finish(exchange, reusable: false)
        let headDelivered = exchange.response != .awaitingHead
        actions.fail = (failure, !exchange.bytesRead && !headDelivered, headDelivered)
        return actions
    }

    /// Lets reads through again; whether a read the channel asked for meanwhile is now due.
    private mutating func resumeReads() -> Bool {
        guard readingPaused else { return false }
        readingPaused = false
        defer { pendingRead = false }
        return pendingRead
    }

    /// A response part where none fits: the peer does not speak HTTP as it should.
    private mutating func unexpectedPart() -> Actions {
        fail(.transport(.malformedResponse("unexpected HTTP response part")))
    }

    /// A response part that belongs to no response in progress: on an idle connection, bytes nobody asked for;
    /// after a response's end in the same read, a stray part (the connection is doubtful: released as not reusable
    /// when the read completes, the part dropped); otherwise the peer does not speak HTTP as it should.
    private mutating func partOutsideAResponse() -> Actions {
        switch state {
        case .idle:
            return unsolicited()
        case .ending:
            state = .ending(Ending(reusable: false))
            return .none
        case .running, .closed:
            return unexpectedPart()
        }
    }

    /// Bytes nobody asked for: the connection cannot be trusted for another request.
    private mutating func unsolicited() -> Actions {
        state = .closed
        var actions = Actions()
        actions.close = true
        return actions
    }
}

import NIOCore
import NIOHTTP1

/// One HTTP/1.1 connection's requests, one at a time, as a pure state machine: it composes an
/// ``HTTPRequestStateMachine`` for the request in progress with what only a connection has. Events in, one action
/// enum per event out; ``HTTP1ConnectionHandler`` carries them out.
///
/// Each request is identified by an explicit ``RequestID`` (a late event for a request that has ended is ignored).
/// Every request that starts ends in exactly one release of the connection (reusable or not): the connection goes
/// back to the pool exactly once, whatever path ends the request.
///
/// No re-entrant hand-over: a response that ends inside a read (every response does) is released only once that
/// read has been fully processed (``readComplete()``), together with the end of its body stream, so the pool can
/// never start the next request on this connection while the rest of the read is still being decoded. Anything
/// that arrives meanwhile (stray bytes, a second response nobody asked for, an unclean close) makes the
/// connection doubtful: it is closed, never handed over.
///
/// What the connection adds to the request's rules:
/// - Keep-alive: the connection is reusable only when the response ended with keep-alive on both sides *and*
///   the whole request was written.
/// - Truncation: a TCP close without TLS close_notify fails the request in progress, so a body framed by the
///   connection's end is never accepted as complete on a FIN anyone could forge.
/// - Bytes on an idle connection: nobody asked for them, so the connection is closed.
package struct HTTP1ConnectionStateMachine {
    /// Identifies one request on a connection.
    package struct RequestID: Hashable, Sendable, CustomStringConvertible {
        let raw: Int
        package init(raw: Int) { self.raw = raw }
        package var description: String { "request #\(raw)" }
    }

    typealias Failed = HTTPRequestStateMachine.Failed

    /// How the connection ends a request that failed or a read that went wrong.
    enum CloseAction: Equatable {
        case none
        /// Fail the request (cancel its timer), release the connection as not reusable, close it.
        case failRequest(Failed)
        /// The response that ended in this read stands: release the connection as not reusable, end the body
        /// stream, close the connection.
        case endResponseAndClose
        /// No request is running: close the connection.
        case close
    }

    /// What the handler does when a request starts.
    enum StartAction: Equatable {
        /// The request runs: arm its timer, then write it.
        case start(armTimer: NIODeadline)
        /// The connection is busy, closed or inactive: fail the request at once and release the connection as
        /// not reusable (no response byte was read: a retry is safe as far as the wire is concerned).
        case refuse(Failed)
    }

    /// What the handler does when the request's end was written.
    enum RequestWrittenAction: Equatable {
        case none
        /// The early response's request is over: cancel the timer and release the connection (closing it when
        /// not reusable).
        case release(reusable: Bool)
    }

    /// What the handler does with a response head.
    enum HeadAction: Equatable {
        case none
        case deliver(HTTPResponseHead)
        case close(CloseAction)
    }

    /// What the handler does with a body part.
    enum BodyAction: Equatable {
        case none
        case deliver(ByteBuffer)
        case close(CloseAction)
    }

    /// What the handler does at a response's end.
    enum EndAction: Equatable {
        case none
        /// Cancel the timer; the release waits for ``readComplete()``. `resumeRead`: let a held read through.
        case awaitReadComplete(resumeRead: Bool)
        /// An early response: cancel the timer and end the body stream; the release waits for the request's end.
        case earlyResponse(resumeRead: Bool)
        case close(CloseAction)
    }

    /// What the handler does when a read was fully processed.
    enum ReadCompleteAction: Equatable {
        case none
        /// Release the connection, end the body stream, and close the connection when not reusable.
        case release(reusable: Bool)
    }

    /// What the handler does when the timer fires.
    enum TimerAction: Equatable {
        case none
        case rearm(NIODeadline)
        case close(CloseAction)
    }

    /// What the handler does when the channel went inactive (nothing needs closing any more).
    enum InactiveAction: Equatable {
        case none
        /// The response that ended in this read stands: release the connection as the response left it (the pool
        /// never reuses a closed connection), end the body.
        case releaseEnded(reusable: Bool)
        /// Fail the request and release the connection as not reusable.
        case failRequest(Failed)
    }

    private enum State {
        case idle
        /// A request is running.
        case inRequest(RequestID, HTTPRequestStateMachine)
        /// The response ended inside a read; released at ``readComplete()`` (or when the channel closes first).
        case ending(reusable: Bool)
        case closed
    }

    private var state = State.idle

    package init() {}

    /// Whether a request is running (its response not complete yet).
    var isRunning: Bool {
        if case .inRequest = state { return true }
        return false
    }

    /// Whether the connection can take a new request.
    var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    // MARK: The caller's events

    /// Starts request `id`; the caller then writes it.
    mutating func start(
        _ id: RequestID, limits: HTTPRequestStateMachine.Limits, requestKeepAlive: Bool, isHead: Bool,
        now: NIODeadline, channelActive: Bool
    ) -> StartAction {
        guard case .idle = state, channelActive else {
            if case .idle = state { state = .closed }
            return .refuse(Failed(failure: .transport(.connectionClosed), noResponseBytes: true, headDelivered: false))
        }
        let request = HTTPRequestStateMachine(limits: limits, requestKeepAlive: requestKeepAlive, isHead: isHead, now: now)
        state = .inRequest(id, request)
        return .start(armTimer: request.firstDeadline)
    }

    /// The request `id` was written to its end: the idle-read clock starts now.
    mutating func requestWritten(_ id: RequestID, now: NIODeadline) -> RequestWrittenAction {
        guard case .inRequest(let running, var request) = state, running == id else { return .none }
        switch request.requestWritten(now: now) {
        case .none:
            state = .inRequest(id, request)
            return .none
        case .complete(let keepAlive):
            state = keepAlive ? .idle : .closed
            return .release(reusable: keepAlive)
        }
    }

    /// Writing request `id` failed: the connection is in an unknown state.
    mutating func requestWriteFailed(_ id: RequestID) -> CloseAction {
        guard case .inRequest(let running, _) = state, running == id else { return .none }
        return fail(.transport(.connectionClosed))
    }

    /// The caller abandoned request `id` (task cancelled, body dropped, its body stream failed): the connection is
    /// closed, never reused. Nothing happens when that request is over.
    mutating func cancel(_ id: RequestID) -> CloseAction {
        guard case .inRequest(let running, _) = state, running == id else { return .none }
        return fail(.cancelled)
    }

    /// The body reader is behind: hold reads back.
    mutating func readerBehind() {
        guard case .inRequest(let id, var request) = state else { return }
        request.readerBehind()
        state = .inRequest(id, request)
    }

    /// The body reader caught up (or went away); whether a read held back is now due.
    mutating func readerCaughtUp(now: NIODeadline) -> Bool {
        guard case .inRequest(let id, var request) = state else { return false }
        defer { state = .inRequest(id, request) }
        return request.readerCaughtUp(now: now)
    }

    /// The request's timer fired.
    mutating func timerFired(now: NIODeadline) -> TimerAction {
        guard case .inRequest(let id, var request) = state else { return .none }
        switch request.timerFired(now: now) {
        case .none:
            state = .inRequest(id, request)
            return .none
        case .rearm(let deadline):
            state = .inRequest(id, request)
            return .rearm(deadline)
        case .fail(let failed):
            state = .closed
            return .close(.failRequest(failed))
        }
    }

    // MARK: The channel's events

    /// Bytes arrived (before the response decoder saw them). Returns whether to close the connection: bytes on an
    /// idle connection answer nobody (a stray `302` with its `Location` and `Set-Cookie` once became the next
    /// caller's head), so they are never decoded for anyone.
    mutating func bytesRead(now: NIODeadline) -> Bool {
        switch state {
        case .ending:
            state = .ending(reusable: false)  // bytes after a complete response: the framing is in doubt
            return false
        case .inRequest(let id, var request):
            request.bytesRead(now: now)
            state = .inRequest(id, request)
            return false
        case .idle:
            state = .closed
            return true
        case .closed:
            return false
        }
    }

    /// The channel wants to read; whether to let the read through.
    mutating func readRequested() -> Bool {
        guard case .inRequest(let id, var request) = state else { return true }
        defer { state = .inRequest(id, request) }
        return request.readRequested()
    }

    /// A decoded response head.
    mutating func responseHead(_ head: HTTPResponseHead) -> HeadAction {
        guard case .inRequest(let id, var request) = state else { return .close(partOutsideARequest()) }
        switch request.responseHead(head) {
        case .none:
            state = .inRequest(id, request)
            return .none
        case .deliver(let head):
            state = .inRequest(id, request)
            return .deliver(head)
        case .fail(let failed):
            state = .closed
            return .close(.failRequest(failed))
        }
    }

    /// A decoded chunk of the response body.
    mutating func responseBody(_ buffer: ByteBuffer) -> BodyAction {
        guard case .inRequest(let id, var request) = state else { return .close(partOutsideARequest()) }
        switch request.responseBody(buffer) {
        case .deliver(let buffer):
            state = .inRequest(id, request)
            return .deliver(buffer)
        case .fail(let failed):
            state = .closed
            return .close(.failRequest(failed))
        }
    }

    /// The response ended.
    mutating func responseEnd() -> EndAction {
        guard case .inRequest(let id, var request) = state else { return .close(partOutsideARequest()) }
        switch request.responseEnd() {
        case .complete(let keepAlive, let resumeRead):
            // Released, with the body's end, once this read is fully processed.
            state = .ending(reusable: keepAlive)
            return .awaitReadComplete(resumeRead: resumeRead)
        case .earlyResponse(let resumeRead):
            state = .inRequest(id, request)
            return .earlyResponse(resumeRead: resumeRead)
        case .fail(let failed):
            state = .closed
            return .close(.failRequest(failed))
        }
    }

    /// The decoder found bytes after the expected response's end (it decoded none of them): they answer no
    /// request, and the connection is doubtful. A response that ended in this read stands, but the connection is
    /// released as not reusable and closed; a request still waiting for its own end to be written (an early
    /// response) fails as the server's fault.
    mutating func strayBytes() -> CloseAction {
        switch state {
        case .ending:
            state = .ending(reusable: false)
            return .none
        case .inRequest:
            return fail(.transport(.malformedResponse(.bytesAfterResponseEnd)))
        case .idle, .closed:
            state = .closed
            return .close
        }
    }

    /// The read in progress was fully processed: a request whose response ended in it is released now, reusable
    /// only if nothing arrived after the response's end, and its body stream ends.
    mutating func readComplete() -> ReadCompleteAction {
        guard case .ending(let reusable) = state else { return .none }
        state = reusable ? .idle : .closed
        return .release(reusable: reusable)
    }

    /// The peer's TCP close came without TLS close_notify: the request in progress fails (its body might be framed
    /// by the connection's end, which anyone on the path can forge).
    mutating func uncleanShutdown() -> CloseAction {
        switch state {
        case .ending:
            state = .ending(reusable: false)
            return .none
        case .inRequest:
            return fail(.transport(.connectionClosed))
        case .idle, .closed:
            return .none
        }
    }

    /// An error in the pipeline (TLS, HTTP parsing, a head too large): the request fails, the connection closes.
    mutating func errorCaught(_ failure: HTTPRequestStateMachine.Failure) -> CloseAction {
        fail(failure)
    }

    /// The channel closed; a running request fails with `reason`.
    mutating func channelInactive(_ reason: HTTPSTransportError = .connectionClosed) -> InactiveAction {
        switch state {
        case .ending(let reusable):
            // The response that ended in this read stands; the pool does not reuse a closed connection.
            state = .closed
            return .releaseEnded(reusable: reusable)
        case .inRequest(_, var request):
            state = .closed
            return request.fail(.transport(reason)).map(InactiveAction.failRequest) ?? .none
        case .idle, .closed:
            state = .closed
            return .none
        }
    }

    // MARK: Helpers

    /// Fails the request in progress (if any) with `failure` and closes the connection. A request whose response
    /// already ended keeps its response: it is released as not reusable, and its body ends normally.
    private mutating func fail(_ failure: HTTPRequestStateMachine.Failure) -> CloseAction {
        switch state {
        case .ending:
            state = .closed
            return .endResponseAndClose
        case .inRequest(_, var request):
            state = .closed
            return request.fail(failure).map(CloseAction.failRequest) ?? .close
        case .idle, .closed:
            state = .closed
            return .close
        }
    }

    /// A response part that belongs to no request in progress: on an idle connection, bytes nobody asked for
    /// (closed); after a response's end in the same read, a stray part (the connection is doubtful: released as
    /// not reusable when the read completes, the part dropped).
    private mutating func partOutsideARequest() -> CloseAction {
        switch state {
        case .ending:
            state = .ending(reusable: false)
            return .none
        case .idle, .closed, .inRequest:
            state = .closed
            return .close
        }
    }
}

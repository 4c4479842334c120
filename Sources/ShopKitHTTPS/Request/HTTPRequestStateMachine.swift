import NIOCore
import NIOHTTP1
import ShopKitTLS

/// One request's life, the same on an HTTP/1.1 connection and on an HTTP/2 stream: a pure state machine (events
/// in, one action enum per event out, no I/O, no clock of its own: the caller passes `now`).
///
/// ``HTTP1ConnectionStateMachine`` composes it with what only a connection has (keep-alive, stray bytes after a
/// response, the hand-over to the next request); ``HTTP2Stream`` uses it directly, one request per stream.
///
/// Rules it enforces:
/// - Framing of the parts: one final head (1xx heads are skipped; a 101 fails, since the client never asks for an
///   upgrade), body parts, one end. A part that fits nowhere fails the request as the server's fault.
/// - Limits: a `Content-Length` or a streamed body above the request's limit fails it.
/// - Timers: one timer per request, firing at the earlier of the whole-request deadline and the idle-read
///   deadline. The idle-read clock runs only once the request is written and while the body reader keeps up;
///   reads only move `lastRead`, the timer re-arms itself when it fires early.
/// - Backpressure: while the body reader is behind, the channel's reads are held back.
/// - Every request that starts ends exactly once: complete (``EndAction/complete(keepAlive:resumeRead:)`` or
///   ``RequestWrittenAction/complete(keepAlive:)``) or failed (a ``Failed``). Events after that are ignored.
package struct HTTPRequestStateMachine {
    /// The limits of one request.
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

    /// Why a request failed, as its handler reports it.
    enum Failure: Equatable, Sendable {
        case transport(HTTPSTransportError)
        case tls(TLSError)
        /// The caller went away (task cancelled, body dropped).
        case cancelled
    }

    /// A request that failed: the caller gets `failure` (through the head if it was not delivered yet, and the
    /// body stream); the timer is cancelled.
    struct Failed: Equatable {
        let failure: Failure
        /// No response byte was read: as far as the wire is concerned the server may not have seen the request.
        let noResponseBytes: Bool
        /// The response head was delivered already (only the body stream hears of the failure).
        let headDelivered: Bool
    }

    /// What the handler does after ``requestWritten(now:)``.
    enum RequestWrittenAction: Equatable {
        case none
        /// The response had already ended: the request is over (cancel the timer, release the connection).
        case complete(keepAlive: Bool)
    }

    /// What the handler does with a response head.
    enum HeadAction: Equatable {
        /// An informational (1xx) head: skipped.
        case none
        /// Deliver the final head to the caller.
        case deliver(HTTPResponseHead)
        case fail(Failed)
    }

    /// What the handler does with a body part.
    enum BodyAction: Equatable {
        /// Hand the part to the body reader.
        case deliver(ByteBuffer)
        case fail(Failed)
    }

    /// What the handler does at the response's end. The timer is cancelled in every case.
    enum EndAction: Equatable {
        /// Both sides are done: the request is over. `resumeRead`: a read held back for the reader is now due.
        case complete(keepAlive: Bool, resumeRead: Bool)
        /// The response ended before the request was fully written (an early response): end the body stream;
        /// the request is over at ``requestWritten(now:)``.
        case earlyResponse(resumeRead: Bool)
        case fail(Failed)
    }

    /// What the handler does when the timer fires.
    enum TimerAction: Equatable {
        case none
        /// No deadline passed yet: arm the timer again.
        case rearm(NIODeadline)
        case fail(Failed)
    }

    private enum Response: Equatable {
        case awaitingHead
        case streaming(received: Int, keepAlive: Bool)
        /// Ended before the request was written (early response); waits for the request's end.
        case ended(keepAlive: Bool)
    }

    private struct Running {
        let limits: Limits
        let requestKeepAlive: Bool
        let isHead: Bool
        var requestWritten = false
        var response = Response.awaitingHead
        var bytesRead = false
        var lastRead: NIODeadline
    }

    private enum State {
        case running(Running)
        case over
    }

    private var state: State
    /// The body reader is behind: the channel's reads are held back until it catches up.
    private var readingPaused = false
    /// A read the channel asked for while reading was paused.
    private var pendingRead = false

    /// A request that starts now; arm the timer for ``firstDeadline``.
    init(limits: Limits, requestKeepAlive: Bool, isHead: Bool, now: NIODeadline) {
        state = .running(Running(limits: limits, requestKeepAlive: requestKeepAlive, isHead: isHead, lastRead: now))
    }

    /// When the timer first fires: the earlier of the deadline and an idle-read period from the start.
    var firstDeadline: NIODeadline {
        guard case .running(let running) = state else { return .distantFuture }
        return min(running.limits.deadline, running.lastRead + running.limits.idleReadTimeout)
    }

    /// Whether the request is still going (neither complete nor failed).
    var isRunning: Bool {
        if case .running = state { return true }
        return false
    }

    /// Whether the response ended before the request was written (an early response still waiting).
    var awaitsRequestEnd: Bool {
        if case .running(let running) = state, case .ended = running.response { return true }
        return false
    }

    /// Whether the response's head was delivered.
    var headDelivered: Bool {
        guard case .running(let running) = state else { return true }
        return running.response != .awaitingHead
    }

    // MARK: The caller's events

    /// The request was written to its end: the idle-read clock starts now.
    mutating func requestWritten(now: NIODeadline) -> RequestWrittenAction {
        guard case .running(var running) = state, !running.requestWritten else { return .none }
        running.requestWritten = true
        running.lastRead = now
        if case .ended(let keepAlive) = running.response {
            state = .over
            return .complete(keepAlive: keepAlive)
        }
        state = .running(running)
        return .none
    }

    /// The body reader is behind (more than the stream's high watermark unread): hold reads back.
    mutating func readerBehind() {
        readingPaused = true
    }

    /// The body reader caught up (or went away); whether a read held back is now due.
    mutating func readerCaughtUp(now: NIODeadline) -> Bool {
        guard readingPaused else { return false }
        if case .running(var running) = state {
            // Time spent waiting for the reader is not the server's silence.
            running.lastRead = now
            state = .running(running)
        }
        return resumeReads()
    }

    /// The timer fired: fail the request if a deadline passed, else re-arm for the next one.
    mutating func timerFired(now: NIODeadline) -> TimerAction {
        guard case .running(var running) = state else { return .none }
        if case .ended = running.response { return .none }
        // Waiting for the body reader, or for the request to be written, is not the server's silence.
        if readingPaused || !running.requestWritten { running.lastRead = now }
        state = .running(running)
        if now >= running.limits.deadline { return fail(.transport(.timeout(.request))).map(TimerAction.fail) ?? .none }
        if now >= running.lastRead + running.limits.idleReadTimeout {
            return fail(.transport(.timeout(.idleRead))).map(TimerAction.fail) ?? .none
        }
        return .rearm(min(running.limits.deadline, running.lastRead + running.limits.idleReadTimeout))
    }

    /// Fails the request (cancellation, a write that failed, a pipeline error, the channel's close); nil when it
    /// is over already.
    mutating func fail(_ failure: Failure) -> Failed? {
        guard case .running(let running) = state else { return nil }
        state = .over
        let headDelivered = running.response != .awaitingHead
        return Failed(failure: failure, noResponseBytes: !running.bytesRead && !headDelivered, headDelivered: headDelivered)
    }

    // MARK: The channel's events

    /// Bytes arrived for this request (before the HTTP decoder saw them).
    mutating func bytesRead(now: NIODeadline) {
        guard case .running(var running) = state else { return }
        running.bytesRead = true
        running.lastRead = now
        state = .running(running)
    }

    /// The channel wants to read; whether to let the read through.
    mutating func readRequested() -> Bool {
        guard readingPaused else { return true }
        pendingRead = true
        return false
    }

    /// A decoded response head.
    mutating func responseHead(_ head: HTTPResponseHead) -> HeadAction {
        guard case .running(var running) = state, running.response == .awaitingHead else {
            return .fail(unexpectedPart())
        }
        let code = head.status.code
        if code == 101 {
            // The client never asks for an upgrade, and the HTTP/1.1 decoder stops parsing after a 101.
            return .fail(fail(.transport(.malformedResponse(.unrequestedUpgrade)))!)
        }
        if code >= 100 && code < 200 { return .none }
        if !running.isHead, let length = HTTPConversion.contentLength(head), length > running.limits.maxResponseBodyBytes {
            return .fail(fail(.transport(.responseBodyTooLarge(limit: running.limits.maxResponseBodyBytes)))!)
        }
        running.response = .streaming(received: 0, keepAlive: HTTP1ResponseDecoder.isKeepAlive(head) && running.requestKeepAlive)
        state = .running(running)
        return .deliver(head)
    }

    /// A decoded chunk of the response body.
    mutating func responseBody(_ buffer: ByteBuffer) -> BodyAction {
        guard case .running(var running) = state, case .streaming(let received, let keepAlive) = running.response else {
            return .fail(unexpectedPart())
        }
        let total = received + buffer.readableBytes
        guard total <= running.limits.maxResponseBodyBytes else {
            return .fail(fail(.transport(.responseBodyTooLarge(limit: running.limits.maxResponseBodyBytes)))!)
        }
        running.response = .streaming(received: total, keepAlive: keepAlive)
        state = .running(running)
        return .deliver(buffer)
    }

    /// The response ended.
    mutating func responseEnd() -> EndAction {
        guard case .running(var running) = state, case .streaming(_, let keepAlive) = running.response else {
            return .fail(unexpectedPart())
        }
        let resumeRead = resumeReads()
        guard running.requestWritten else {
            running.response = .ended(keepAlive: keepAlive)
            state = .running(running)
            return .earlyResponse(resumeRead: resumeRead)
        }
        state = .over
        return .complete(keepAlive: keepAlive, resumeRead: resumeRead)
    }

    // MARK: Helpers

    /// A response part where none fits: the peer does not speak HTTP as it should.
    private mutating func unexpectedPart() -> Failed {
        fail(.transport(.malformedResponse(.unexpectedResponsePart)))
            ?? Failed(failure: .transport(.malformedResponse(.unexpectedResponsePart)), noResponseBytes: false, headDelivered: true)
    }

    /// Lets reads through again; whether a read the channel asked for meanwhile is now due.
    private mutating func resumeReads() -> Bool {
        guard readingPaused else { return false }
        readingPaused = false
        defer { pendingRead = false }
        return pendingRead
    }
}

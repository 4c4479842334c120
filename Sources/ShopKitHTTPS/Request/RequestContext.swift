import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import ShopKitTLS

/// What the caller of one request waits on and how the connection goes back: owned by the handler while the
/// request runs.
package struct RequestContext {
    let id: HTTP1ConnectionStateMachine.RequestID
    let limits: HTTPRequestStateMachine.Limits
    /// Whether the request allows keep-alive (no `Connection: close`).
    let requestKeepAlive: Bool
    /// Whether the request was HEAD (its response has no body even with a Content-Length).
    let isHead: Bool
    /// Receives the response head, or the request's ``ExchangeFailure``: called exactly once, on the event loop
    /// (a callback, not a promise: no future, callback list or metadata lookup per request).
    let onHead: HeadReceiver
    /// Receives the body bytes.
    let body: BodyStream
    /// Gives the connection back to the pool; called exactly once, when the state machine says so.
    let release: @Sendable (_ reusable: Bool) -> Void

    init(
        id: HTTP1ConnectionStateMachine.RequestID, limits: HTTPRequestStateMachine.Limits, requestKeepAlive: Bool,
        isHead: Bool, onHead: @escaping HeadReceiver, body: BodyStream,
        release: @escaping @Sendable (_ reusable: Bool) -> Void
    ) {
        self.id = id
        self.limits = limits
        self.requestKeepAlive = requestKeepAlive
        self.isHead = isHead
        self.onHead = onHead
        self.body = body
        self.release = release
    }

    /// A request whose head (or failure) completes `head`; for tests and fuzz targets, which also get the
    /// receiver's contract checked: a second answer stops the process (the transport's receiver resumes a
    /// continuation, which must happen exactly once).
    package init(
        id: HTTP1ConnectionStateMachine.RequestID, limits: HTTPRequestStateMachine.Limits, requestKeepAlive: Bool,
        isHead: Bool, head: EventLoopPromise<HTTPResponseHead>, body: BodyStream,
        release: @escaping @Sendable (_ reusable: Bool) -> Void
    ) {
        let answered = NIOLockedValueBox(false)
        self.init(
            id: id, limits: limits, requestKeepAlive: requestKeepAlive, isHead: isHead,
            onHead: { result in
                let again = answered.withLockedValue { wasAnswered in
                    defer { wasAnswered = true }
                    return wasAnswered
                }
                precondition(!again, "request \(id.raw)'s response head was answered twice")
                head.completeWith(result.map(\.head).mapError { $0 })
            },
            body: body, release: release)
    }
}

/// Receives a request's response head (with its id and body stream: all the caller needs), or the
/// ``ExchangeFailure`` that ended the request first.
typealias HeadReceiver = @Sendable (Result<HTTPClientConnection.Exchange, ExchangeFailure>) -> Void

/// Why an exchange failed, and whether a retry on a fresh connection is safe as far as the wire is concerned.
struct ExchangeFailure: Error {
    /// The error to report.
    let error: any Error
    /// No response byte was read before the failure.
    let noResponseBytes: Bool
    /// The error code of the server's GOAWAY that said it did not process the request (an HTTP/2 stream above
    /// the GOAWAY's last stream id), or nil.
    var refusedByGoAway: String? = nil
}

/// What both request handlers (``HTTP1ConnectionHandler``, ``HTTP2Stream``) do alike for the request they
/// run: start it, hand its head to the caller at the end of the read that brought it, feed its body, fail it.
/// The seam behind which ``HTTPClientConnection`` starts every request, whatever the protocol.
protocol RequestHandler: AnyObject {
    /// Starts a request; the caller then writes it.
    func start(_ request: RequestContext)
    /// The request `id` has been written to its end: the idle-read clock starts now.
    func requestSent(_ id: HTTP1ConnectionStateMachine.RequestID)
    /// Writing request `id` failed.
    func requestFailed(_ id: HTTP1ConnectionStateMachine.RequestID)
    /// Abandons request `id` (task cancelled, body dropped or failed); nothing happens when it is over.
    func cancel(_ id: HTTP1ConnectionStateMachine.RequestID)
    /// Writes a part of the request, and flushes when `flush` is set.
    func write(_ part: HTTPClientRequestPart, flush: Bool, promise: EventLoopPromise<Void>?)
    /// Writes bodiless request `id` whole (its head and end, flushed), then reports its end written, or failed.
    func writeWhole(_ head: HTTPRequestHead, id: HTTP1ConnectionStateMachine.RequestID)
    /// The body reader drained the stream below its low watermark (or went away): let reads through.
    func resumeReading()
}

/// Hands a request's response to its caller, the same way on an HTTP/1.1 connection and an HTTP/2 stream.
///
/// A response head decoded inside a read is handed over when the read is complete, so that the caller, woken
/// once, finds the body parts of the same read (a small response's whole body) already buffered instead of
/// waking, finding no body yet, and waiting to be woken again.
struct ResponseDelivery {
    /// Inside a read (between `channelRead` and `channelReadComplete`).
    var reading = false
    /// A head held back until the end of its read. One slot, one request: never overwrites another one's head.
    private var heldHead: (receiver: HeadReceiver, exchange: HTTPClientConnection.Exchange)?

    /// Delivers `head` to `request`'s caller (at the end of the read, when inside one).
    mutating func deliver(_ head: HTTPResponseHead, to request: RequestContext) {
        guard reading else {
            request.onHead(.success(.init(id: request.id, head: head, body: request.body)))
            return
        }
        handOverHeldHead()
        heldHead = (request.onHead, .init(id: request.id, head: head, body: request.body))
    }

    /// Hands `buffer` to the body reader; false when the reader is behind (hold reads back).
    func deliver(_ buffer: ByteBuffer, to request: RequestContext) -> Bool {
        request.body.yield(ArraySlice(buffer.readableBytesView))
    }

    /// The read is over: the held head goes to its caller, unless `handingOverHead` is false (the handler hands
    /// it over later, with ``handOverHeldHead()``).
    mutating func readComplete(handingOverHead: Bool = true) {
        reading = false
        if handingOverHead { handOverHeldHead() }
    }

    /// Fails `request`'s caller: the head (if it was not delivered yet), then the body stream. `refusedByGoAway`:
    /// the error code of the server's GOAWAY that said it never processed the request (HTTP/2).
    mutating func fail(
        _ request: RequestContext, _ failed: HTTPRequestStateMachine.Failed, refusedByGoAway: String? = nil
    ) {
        handOverHeldHead()  // the caller gets the head, then the body's error
        let error: any Error
        switch failed.failure {
        case .transport(let transport): error = transport
        case .tls(let tls): error = tls
        case .cancelled: error = CancellationError()
        }
        if !failed.headDelivered {
            request.onHead(
                .failure(
                    ExchangeFailure(
                        error: error, noResponseBytes: failed.noResponseBytes, refusedByGoAway: refusedByGoAway)))
        }
        request.body.finish(throwing: error)
    }

    /// Hands over a head held back until the end of its read.
    mutating func handOverHeldHead() {
        guard let (receiver, exchange) = heldHead else { return }
        heldHead = nil
        receiver(.success(exchange))
    }

    /// The failure a pipeline error means for the request.
    static func failure(for error: any Error) -> HTTPRequestStateMachine.Failure {
        switch error {
        case let error as TLSError: return .tls(error)
        case let error as NIOHTTP2Errors.StreamClosed: return .transport(.streamReset(code: error.errorCode.name))
        case let error as HTTPParserError: return .transport(.malformedResponse("\(error)"))
        case is NIOTooManyBytesError: return .transport(.malformedResponse("response head too large"))
        default: return .transport(.connectionClosed)
        }
    }

    /// Logs dropped trailers (OpenAPI's HTTPBody has no place for them): names only, never values.
    static func dropTrailers(_ trailers: HTTPHeaders?, logger: Logger) {
        guard let trailers, !trailers.isEmpty else { return }
        logger.debug("response trailers dropped", metadata: ["http.trailers": "\(trailers.map(\.name))"])
    }
}

/// A request's one timer, held by both request handlers: a scheduled callback (no promise or closure per arm,
/// unlike `scheduleTask`), armed, re-armed and cancelled as the request's state machine says.
struct RequestTimer {
    private var scheduled: NIOScheduledCallback?
    /// When the armed timer fires.
    private var armedFor: NIODeadline?

    /// Arms the timer for `deadline` on `loop` (none when the handler left its channel), replacing the one armed;
    /// `fired` runs when it fires.
    mutating func arm(at deadline: NIODeadline, on loop: (any EventLoop)?, _ fired: some NIOScheduledCallbackHandler) {
        cancel()
        guard let loop else { return }
        scheduled = try? loop.assumeIsolated().scheduleCallback(at: deadline, handler: fired)
        armedFor = scheduled == nil ? nil : deadline
    }

    /// Makes sure the timer fires at `deadline` or before: a timer already armed for no later is kept. The state
    /// machine answers an early firing with the deadline still ahead, so a connection can keep one timer from one
    /// request to the next instead of scheduling and cancelling one per request.
    mutating func arm(
        noLaterThan deadline: NIODeadline, on loop: (any EventLoop)?, _ fired: some NIOScheduledCallbackHandler
    ) {
        if let armedFor, armedFor <= deadline { return }
        arm(at: deadline, on: loop, fired)
    }

    mutating func cancel() {
        scheduled?.cancel()
        scheduled = nil
        armedFor = nil
    }

    /// The timer fired: there is nothing left to cancel.
    mutating func didFire() {
        scheduled = nil
        armedFor = nil
    }
}

extension HTTP2ErrorCode {
    /// The code's name as RFC 9113 §7 writes it (`REFUSED_STREAM`), or its number.
    var name: String {
        switch self {
        case .noError: return "NO_ERROR"
        case .protocolError: return "PROTOCOL_ERROR"
        case .internalError: return "INTERNAL_ERROR"
        case .flowControlError: return "FLOW_CONTROL_ERROR"
        case .settingsTimeout: return "SETTINGS_TIMEOUT"
        case .streamClosed: return "STREAM_CLOSED"
        case .frameSizeError: return "FRAME_SIZE_ERROR"
        case .refusedStream: return "REFUSED_STREAM"
        case .cancel: return "CANCEL"
        case .compressionError: return "COMPRESSION_ERROR"
        case .connectError: return "CONNECT_ERROR"
        case .enhanceYourCalm: return "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: return "INADEQUATE_SECURITY"
        case .http11Required: return "HTTP_1_1_REQUIRED"
        default: return "0x\(String(networkCode, radix: 16))"
        }
    }
}

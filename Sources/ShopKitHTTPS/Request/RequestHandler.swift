import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import ShopKitTLS

/// A running request as the connection's handlers see it (``HTTP1ConnectionHandler``, ``HTTP2Stream``): the one
/// way they reach it. ``HTTPExchange`` is the request; tests and fuzz targets record what a handler reports.
///
/// Every method is called on the connection's event loop. For one request: the head (``receiveHead(_:)``), body
/// chunks and the end, with ``handOverHead()`` at the end of the read that brought the head, or a failure at any
/// point; and exactly one ``release(reusable:)``.
package protocol ExchangeEvents: AnyObject, Sendable {
    /// The request's limits.
    var limits: HTTPRequestStateMachine.Limits { get }
    /// Whether the request allows keep-alive (no `Connection: close`).
    var requestKeepAlive: Bool { get }
    /// Whether the request was HEAD (its response has no body even with a Content-Length).
    var isHead: Bool { get }
    /// The response head arrived; it is held until ``handOverHead()``.
    func receiveHead(_ head: HTTPResponseHead)
    /// The head received is handed over to the caller (at the end of the read that brought it).
    func handOverHead()
    /// A chunk of the response body; false when the reader is behind (hold reads back until
    /// ``RequestHandler/resumeReading()``).
    func receiveBody(_ chunk: ArraySlice<UInt8>) -> Bool
    /// The response ended.
    func receiveEnd()
    /// The request failed: the caller hears it (through the head, if it does not have it yet, else the body).
    func fail(_ failure: ExchangeFailure)
    /// Gives the connection back to the pool; called exactly once, when the connection's state machine says so.
    func release(reusable: Bool)
}

/// Why an exchange failed, and whether a retry on a fresh connection is safe as far as the wire is concerned.
package struct ExchangeFailure: Error {
    /// The error to report.
    package let error: any Error
    /// No response byte was read before the failure.
    package let noResponseBytes: Bool
    /// The error code of the server's GOAWAY that said it did not process the request (an HTTP/2 stream above
    /// the GOAWAY's last stream id), or nil.
    var refusedByGoAway: HTTPSTransportError.HTTP2ErrorCode? = nil
}

/// What both request handlers (``HTTP1ConnectionHandler``, ``HTTP2Stream``) do alike for the request they
/// run: start it, hand its head to the caller at the end of the read that brought it, feed its body, fail it.
/// The seam behind which ``HTTPClientConnection`` starts every request, whatever the protocol.
protocol RequestHandler: AnyObject {
    /// Starts request `id`; the caller then writes it.
    func start(_ exchange: any ExchangeEvents, id: HTTP1ConnectionStateMachine.RequestID)
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
    /// The request whose head is held back until the end of its read. One slot, one request: never overwrites
    /// another one's head.
    private var heldHead: (any ExchangeEvents)?

    /// Delivers `head` to `exchange`'s caller (at the end of the read, when inside one).
    mutating func deliver(_ head: HTTPResponseHead, to exchange: any ExchangeEvents) {
        exchange.receiveHead(head)
        guard reading else {
            exchange.handOverHead()
            return
        }
        handOverHeldHead()
        heldHead = exchange
    }

    /// Hands `buffer` to the body reader; false when the reader is behind (hold reads back).
    func deliver(_ buffer: ByteBuffer, to exchange: any ExchangeEvents) -> Bool {
        exchange.receiveBody(ArraySlice(buffer.readableBytesView))
    }

    /// The read is over: the held head goes to its caller, unless `handingOverHead` is false (the handler hands
    /// it over later, with ``handOverHeldHead()``).
    mutating func readComplete(handingOverHead: Bool = true) {
        reading = false
        if handingOverHead { handOverHeldHead() }
    }

    /// Fails `exchange`'s caller: the head (if it was not delivered yet), then the body. `refusedByGoAway`: the
    /// error code of the server's GOAWAY that said it never processed the request (HTTP/2).
    mutating func fail(
        _ exchange: any ExchangeEvents, _ failed: HTTPRequestStateMachine.Failed, refusedByGoAway: HTTPSTransportError.HTTP2ErrorCode? = nil
    ) {
        handOverHeldHead()  // the caller gets the head, then the body's error
        let error: any Error
        switch failed.failure {
        case .transport(let transport): error = transport
        case .tls(let tls): error = tls
        case .cancelled: error = CancellationError()
        }
        exchange.fail(ExchangeFailure(error: error, noResponseBytes: failed.noResponseBytes, refusedByGoAway: refusedByGoAway))
    }

    /// Hands over a head held back until the end of its read.
    mutating func handOverHeldHead() {
        guard let exchange = heldHead else { return }
        heldHead = nil
        exchange.handOverHead()
    }

    /// The failure a pipeline error means for the request.
    static func failure(for error: any Error) -> HTTPRequestStateMachine.Failure {
        switch error {
        case let error as TLSError: return .tls(error)
        case let error as NIOHTTP2Errors.StreamClosed: return .transport(.streamReset(code: error.errorCode.transportCode))
        case let error as HTTPParserError: return .transport(.malformedResponse(.invalidHTTP1("\(error)")))
        case is NIOTooManyBytesError: return .transport(.malformedResponse(.headTooLarge))
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
    /// The code as ``HTTPSTransportError`` carries it, which names it (RFC 9113 §7) without exposing swift-nio-http2.
    var transportCode: HTTPSTransportError.HTTP2ErrorCode {
        .init(rawValue: UInt32(truncatingIfNeeded: networkCode))
    }
}

import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import ShopKitTLS

/// What the caller of one exchange waits on and how the connection goes back: owned by the handler while
/// the exchange runs.
package struct ExchangeContext {
    let id: HTTP1ExchangeStateMachine.ExchangeID
    let limits: HTTP1ExchangeStateMachine.Limits
    /// Whether the request allows keep-alive (no `Connection: close`).
    let requestKeepAlive: Bool
    /// Whether the request was HEAD (its response has no body even with a Content-Length).
    let isHead: Bool
    /// Succeeds with the response head, or fails with an ``ExchangeFailure``.
    let head: EventLoopPromise<HTTPResponseHead>
    /// Receives the body bytes.
    let body: BodyStream
    /// Gives the connection back to the pool; called exactly once, when the state machine says so.
    let release: @Sendable (_ reusable: Bool) -> Void

    package init(
        id: HTTP1ExchangeStateMachine.ExchangeID, limits: HTTP1ExchangeStateMachine.Limits, requestKeepAlive: Bool,
        isHead: Bool, head: EventLoopPromise<HTTPResponseHead>, body: BodyStream,
        release: @escaping @Sendable (_ reusable: Bool) -> Void
    ) {
        self.id = id
        self.limits = limits
        self.requestKeepAlive = requestKeepAlive
        self.isHead = isHead
        self.head = head
        self.body = body
        self.release = release
    }
}

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

/// Tells the handler that bytes arrived on the connection, before the HTTP decoder sees them.
package final class InboundByteObserver: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    private let onRead: () -> Void

    package init(onRead: @escaping () -> Void) { self.onRead = onRead }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onRead()
        context.fireChannelRead(data)
    }
}

/// Runs HTTP/1.1 exchanges on one connection by carrying out ``HTTP1ExchangeStateMachine``'s actions: it
/// delivers the head, streams the body, arms the one timer, holds reads back, closes the connection and gives
/// it back to the pool. Every decision is the state machine's; every method runs on the channel's event loop.
/// Time is the event loop's clock (`EventLoop.now`), so tests can drive it.
///
/// Backpressure: when the body stream holds more unread bytes than its high watermark, the handler holds back
/// the channel's next `read`, and lets it through once the reader has drained the stream (``resumeReading()``).
/// So a slow reader bounds the memory of a large body, and the event loop does not race ahead of the reader.
package final class HTTPClientConnectionHandler: ChannelDuplexHandler {
    package typealias InboundIn = HTTPClientResponsePart
    package typealias OutboundIn = HTTPClientRequestPart
    package typealias OutboundOut = HTTPClientRequestPart

    private var machine: HTTP1ExchangeStateMachine
    /// The channel is one HTTP/2 stream.
    private let isStream: Bool
    private var current: ExchangeContext?
    /// Where the handler logs what it drops (the transport's logger; names only, never values).
    private let logger: Logger

    private var context: ChannelHandlerContext?
    /// The exchange's one timer: a scheduled callback (no promise or closure per arm, unlike `scheduleTask`).
    private var timer: NIOScheduledCallback?
    /// Inside a read (between `channelRead` and `channelReadComplete`).
    private var reading = false
    /// A response head decoded in the current read, handed over when the read is complete, so that the caller,
    /// woken once, finds the body parts of the same read (a small response's whole body) already buffered
    /// instead of waking, finding no body yet, and waiting to be woken again.
    private var deferredHead: (promise: EventLoopPromise<HTTPResponseHead>, head: HTTPResponseHead)?

    /// Why the connection under this handler closed, when it knows better than "closed" (an HTTP/2 stream
    /// whose connection missed its PING acknowledgement); read on the event loop when the channel goes inactive.
    private let closeReason: () -> HTTPSTransportError?

    /// A handler with no exchange yet; `logger` gets what it drops (trailers). `stream`: the channel is one
    /// HTTP/2 stream, which closes itself when its exchange is over.
    package init(
        logger: Logger = TLSClientConfiguration.disabledLogger, stream: Bool = false,
        closeReason: @escaping () -> HTTPSTransportError? = { nil }
    ) {
        self.machine = HTTP1ExchangeStateMachine(stream: stream)
        self.isStream = stream
        self.logger = logger
        self.closeReason = closeReason
    }

    package func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    package func handlerRemoved(context: ChannelHandlerContext) {
        deliverDeferredHead()
        self.context = nil
    }

    /// The event loop's current time.
    private var now: NIODeadline { context?.eventLoop.now ?? .now() }

    // MARK: From the exchange's caller (on the event loop)

    /// Starts an exchange; the caller then writes the request.
    package func start(_ exchange: ExchangeContext) {
        let actions = machine.start(
            exchange.id, limits: exchange.limits, requestKeepAlive: exchange.requestKeepAlive,
            isHead: exchange.isHead, now: now, channelActive: context?.channel.isActive ?? false)
        if actions.fail == nil {
            current = exchange
            perform(actions)
        } else {
            perform(actions, for: exchange)
        }
    }

    /// The request of exchange `id` has been written to its end: the idle-read clock starts now.
    package func requestSent(_ id: HTTP1ExchangeStateMachine.ExchangeID) {
        perform(machine.requestWritten(id, now: now))
    }

    /// Writing the request of exchange `id` failed.
    func requestFailed(_ id: HTTP1ExchangeStateMachine.ExchangeID) {
        perform(machine.requestWriteFailed(id))
    }

    /// Abandons exchange `id` (task cancelled, body dropped or failed): the connection is closed, never reused.
    /// Does nothing when that exchange is over (a later one may be running).
    func cancel(_ id: HTTP1ExchangeStateMachine.ExchangeID) {
        perform(machine.cancel(id))
    }

    /// The body reader drained the stream below its low watermark (or went away): let reads through.
    func resumeReading() {
        perform(machine.readerCaughtUp(now: now))
    }

    /// Called by ``InboundByteObserver`` for every inbound read.
    package func noteBytesRead() {
        machine.bytesRead(now: now)
    }

    // MARK: From the channel

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        switch unwrapInboundIn(data) {
        case .head(let head): perform(machine.responseHead(head))
        case .body(let buffer): perform(machine.responseBody(buffer))
        case .end(let trailers):
            if let trailers, !trailers.isEmpty {
                // OpenAPI's HTTPBody has no place for trailers.
                logger.debug("response trailers dropped", metadata: ["http.trailers": "\(trailers.map(\.name))"])
            }
            perform(machine.responseEnd())
        }
    }

    /// The read is fully processed: a response that ended in this read is released (the pool may start the next
    /// exchange here, no sooner) and its body stream ends; then the held head goes to its caller, who finds the
    /// exchange over and the body of that read buffered.
    package func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        perform(machine.readComplete())
        deliverDeferredHead()
        context.fireChannelReadComplete()
    }

    package func read(context: ChannelHandlerContext) {
        perform(machine.readRequested())
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSUncleanShutdown { perform(machine.uncleanShutdown()) }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure: HTTP1ExchangeStateMachine.Failure
        switch error {
        case let error as TLSError: failure = .tls(error)
        case let error as NIOHTTP2Errors.StreamClosed: failure = .transport(.streamReset(code: error.errorCode.name))
        case let error as HTTPParserError: failure = .transport(.malformedResponse("\(error)"))
        case is NIOTooManyBytesError: failure = .transport(.malformedResponse("response head too large"))
        default: failure = .transport(.connectionClosed)
        }
        if isStream && machine.isRunning {
            // swift-nio-http2 closes the streams of a connection error before it reports the error on the
            // connection: look again once this event is over, so the caller hears what happened to the connection
            // (``closeReason``), not its side effect on the stream.
            context.eventLoop.assumeIsolated().execute {
                self.perform(self.machine.errorCaught(self.closeReason().map { .transport($0) } ?? failure))
            }
            return
        }
        perform(machine.errorCaught(failure))
    }

    package func channelInactive(context: ChannelHandlerContext) {
        if isStream && machine.isRunning {
            // As in `errorCaught`: a stream closed under a running exchange may be a connection error's doing.
            context.eventLoop.assumeIsolated().execute {
                self.perform(self.machine.channelInactive(self.closeReason() ?? .connectionClosed))
                self.deliverDeferredHead()
            }
            context.fireChannelInactive()
            return
        }
        perform(machine.channelInactive(closeReason() ?? .connectionClosed))
        deliverDeferredHead()
        context.fireChannelInactive()
    }

    // MARK: Carrying out

    /// Carries out `actions` for the current exchange (or for `refused`, one that never ran).
    private func perform(_ actions: HTTP1ExchangeStateMachine.Actions, for refused: ExchangeContext? = nil) {
        switch actions.timer {
        case .keep: break
        case .cancel:
            timer?.cancel()
            timer = nil
        case .arm(let deadline):
            timer?.cancel()
            timer = nil
            if let context {
                timer = try? context.eventLoop.assumeIsolated().scheduleCallback(
                    at: deadline, handler: TimerFired(handler: self))
            }
        }
        guard let exchange = refused ?? current else {
            if actions.close { context?.close(promise: nil) }
            if actions.read { context?.read() }
            return
        }
        if let head = actions.head {
            if reading {
                deliverDeferredHead()  // one slot, one exchange: never overwrite another exchange's head
                deferredHead = (exchange.head, head)
            } else {
                exchange.head.succeed(head)
            }
        }
        if let buffer = actions.body, !exchange.body.yield(ArraySlice(buffer.readableBytesView)) {
            machine.readerBehind()
        }
        if let reusable = actions.release {
            if current?.id == exchange.id { current = nil }
            exchange.release(reusable)
        }
        if actions.finishBody { exchange.body.finish() }
        if let (failure, noResponseBytes, headDelivered) = actions.fail {
            deliverDeferredHead()  // the caller gets the head, then the body's error
            let error: any Error
            switch failure {
            case .transport(let transport): error = transport
            case .tls(let tls): error = tls
            case .cancelled: error = CancellationError()
            }
            if !headDelivered { exchange.head.fail(ExchangeFailure(error: error, noResponseBytes: noResponseBytes)) }
            exchange.body.finish(throwing: error)
        }
        if actions.close { context?.close(promise: nil) }
        if actions.read { context?.read() }
    }

    /// The exchange's timer fired (on the event loop).
    private struct TimerFired: NIOScheduledCallbackHandler {
        let handler: HTTPClientConnectionHandler

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler.timer = nil
            handler.perform(handler.machine.timerFired(now: handler.now))
        }
    }

    /// Hands over a response head held back until the end of its read.
    private func deliverDeferredHead() {
        guard let (promise, head) = deferredHead else { return }
        deferredHead = nil
        promise.succeed(head)
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

import Logging
import NIOCore
import NIOHTTP2
import ShopKitTLS

/// Every stream of one HTTP/2 connection, driven from one handler behind swift-nio-http2's `NIOHTTP2Handler`
/// (which parses and validates frames, keeps each stream's state, enforces flow control on what is sent, and
/// resets a stream that breaks the protocol): no channel, pipeline or promise per stream.
///
/// The handler gives out stream ids, hands each stream its frames and swift-nio-http2's events about it, tops
/// the connection's receive window up, watches SETTINGS (the server's stream limit) and GOAWAY, and closes the
/// connection on a connection error. It flushes once per read, not once per frame. Every method runs on the
/// connection's event loop.
package final class HTTP2ConnectionHandler: ChannelInboundHandler {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundOut = HTTP2Frame

    /// How many response body bytes the server may send on one stream ahead of the reader, and on the connection:
    /// 1 MiB. A window is topped up once half of it was used, so a reader that keeps up never stalls the server
    /// (with HTTP/2's default 64 KiB, a 1 MiB body waited for 16 WINDOW_UPDATE round trips), and a stream whose
    /// reader stops holds at most this much. The connection's window is topped up as frames arrive, so a slow
    /// stream never blocks the others.
    static let streamWindowSize = 1 << 20

    /// What the client announces: no server push, the stream window, and a bound on the response header list
    /// (a larger header block is a protocol error for that stream's connection, never unbounded memory).
    package static let initialSettings: HTTP2Settings = [
        HTTP2Setting(parameter: .enablePush, value: 0),
        HTTP2Setting(parameter: .initialWindowSize, value: streamWindowSize),
        HTTP2Setting(parameter: .maxHeaderListSize, value: HTTPResponseLimits.maxHeadBytes),
    ]

    /// HTTP/2's initial connection window (RFC 9113 §6.9.2), before the first WINDOW_UPDATE.
    private static let initialConnectionWindow = 65_535

    /// The increment that tops a receive window of `size` bytes up to ``streamWindowSize``, once at most half of
    /// it is left; nil before that.
    static func windowIncrement(_ size: Int) -> Int? {
        size <= streamWindowSize / 2 ? streamWindowSize - size : nil
    }

    /// What the handler tells its ``HTTP2Connection``.
    package struct Observer {
        /// The server's SETTINGS: its `SETTINGS_MAX_CONCURRENT_STREAMS`, or nil for no limit.
        var settings: (Int?) -> Void
        /// The connection takes no new streams: the server's GOAWAY, or a connection error it is closing for.
        var goAway: () -> Void

        package init(settings: @escaping (Int?) -> Void, goAway: @escaping () -> Void) {
            self.settings = settings
            self.goAway = goAway
        }
    }

    let logger: Logger
    let eventLoop: any EventLoop
    /// Dropped with the handler, which breaks the cycle through the connection it tells.
    private var observer: Observer?
    private var context: ChannelHandlerContext?
    /// The streams whose HEADERS were written, by id.
    private var streams: [HTTP2StreamID: HTTP2Stream] = [:]
    /// The streams opened for a request whose HEADERS are not written yet: they have no id. A stream takes its id
    /// when its HEADERS go out (``assignID(to:)``), so ids reach the wire in increasing order whatever order the
    /// requests write their heads in (RFC 9113 §5.1.1; swift-nio-http2 refuses a smaller one as a connection error).
    private var unopened: [ObjectIdentifier: HTTP2Stream] = [:]
    private var nextStreamID: Int32 = 1
    private var maxStreams: Int?
    /// The last stream id and the error code of the server's GOAWAY.
    private var goAway: (lastStreamID: HTTP2StreamID, code: HTTP2ErrorCode)?
    /// Closing for a connection error: no new stream is opened on it (the pool was told at once, before the
    /// close completes, so it hands the connection to nobody).
    private var closing = false
    /// Streams that received frames in the current read: they finish it at its end.
    private var touchedStreams: [HTTP2Stream] = []
    private var reading = false
    private var needsFlush = false

    /// Why the connection closed, when its streams should hear more than "closed": a connection error, a missed
    /// PING acknowledgement, a TLS failure.
    var closeReason: HTTPRequestStateMachine.Failure?

    package init(eventLoop: any EventLoop, logger: Logger, observer: Observer) {
        self.eventLoop = eventLoop
        self.logger = logger
        self.observer = observer
    }

    var now: NIODeadline { eventLoop.now }
    var isActive: Bool { context?.channel.isActive ?? false }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The connection's window starts at 64 KiB whatever the SETTINGS say: open it to the target at once.
        write(
            HTTP2Frame(
                streamID: .rootStream,
                payload: .windowUpdate(windowSizeIncrement: Self.streamWindowSize - Self.initialConnectionWindow)),
            promise: nil)
        flush()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        finishRead()
        self.context = nil
        observer = nil
    }

    // MARK: Streams

    /// A new stream for one request, or nil when the connection takes no more (closed, GOAWAY, ids used up). It
    /// has no id until its HEADERS are written.
    package func openStream() -> HTTP2Stream? {
        guard isActive, !closing, goAway == nil, nextStreamID < Int32.max - 1 else { return nil }
        let stream = HTTP2Stream(connection: self)
        unopened[ObjectIdentifier(stream)] = stream
        return stream
    }

    /// The id for `stream`'s HEADERS, which its caller writes next (nothing is written in between: ids go out in
    /// the order they are taken), or nil when the connection can open no more streams (GOAWAY, ids used up).
    func assignID(to stream: HTTP2Stream) -> HTTP2StreamID? {
        guard unopened.removeValue(forKey: ObjectIdentifier(stream)) != nil, !closing, goAway == nil,
            nextStreamID < Int32.max - 1
        else { return nil }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streams[id] = stream
        return id
    }

    /// Whether no stream is open or being opened: the connection was idle in the pool.
    var isIdle: Bool { streams.isEmpty && unopened.isEmpty }

    /// Forgets `stream`: it ended and is closed.
    func remove(_ stream: HTTP2Stream) {
        if let id = stream.id {
            if streams[id] === stream { streams[id] = nil }
        } else {
            unopened[ObjectIdentifier(stream)] = nil
        }
    }

    /// `stream` received a frame in this read: it finishes the read with the others at its end.
    func touched(_ stream: HTTP2Stream) {
        guard !stream.touchedInRead else { return }
        stream.touchedInRead = true
        touchedStreams.append(stream)
    }

    /// Runs `body` once the current event is over (swift-nio-http2 closes a connection error's streams before it
    /// reports the error: a stream looks at ``closeReason`` then).
    func afterEvent(_ body: @escaping () -> Void) {
        eventLoop.assumeIsolated().execute(body)
    }

    // MARK: Writing

    /// Writes `frame`; it goes out at the next ``flush()``.
    func write(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(HTTPSTransportError.connectionClosed)
            return
        }
        context.write(wrapOutboundOut(frame), promise: promise)
        needsFlush = true
    }

    /// Flushes what was written, or at the end of the current read when inside one.
    func flush() {
        guard needsFlush, !reading else { return }
        needsFlush = false
        context?.flush()
    }

    // MARK: From swift-nio-http2

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = unwrapInboundIn(data)
        if frame.streamID == .rootStream {
            switch frame.payload {
            case .settings(.settings(let values)):
                for setting in values where setting.parameter == .maxConcurrentStreams { maxStreams = setting.value }
                observer?.settings(maxStreams)
            case .goAway(let lastStreamID, let code, _):
                goAway = (min(goAway?.lastStreamID ?? lastStreamID, lastStreamID), code)
                // A stream that never wrote its HEADERS never reached the server: refused, safe to send again.
                let refused = unopened.values
                unopened = [:]
                for stream in refused { stream.streamClosed(reason: nil, refusedBy: code.transportCode) }
                observer?.goAway()
            default:
                break
            }
        } else {
            // A stream that ended or was reset is forgotten: swift-nio-http2 checked the frame, and it is dropped.
            streams[frame.streamID]?.received(frame.payload)
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        finishRead()
        flush()
        context.fireChannelReadComplete()
    }

    /// The read is over: the streams it touched release what ended in it and hand their held heads over. Also
    /// when the connection closes inside a read (the pool may close it as a stream's release hands it back), so a
    /// head held for the end of the read is never lost.
    private func finishRead() {
        reading = false
        guard !touchedStreams.isEmpty else { return }
        let touched = touchedStreams
        touchedStreams.removeAll(keepingCapacity: true)
        for stream in touched {
            stream.touchedInRead = false
            stream.readComplete()
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let window as NIOHTTP2WindowUpdatedEvent:
            guard let size = window.inboundWindowSize else { return }
            if window.streamID == .rootStream {
                if let increment = Self.windowIncrement(size) {
                    write(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment)), promise: nil)
                    flush()
                }
            } else {
                streams[window.streamID]?.windowChanged(to: size)
            }
        case let closed as StreamClosedEvent:
            streams[closed.streamID]?.streamClosed(reason: closed.reason, refusedBy: refusedCode(closed.streamID))
        case is NIOHTTP2StreamCreatedEvent, is NIOHTTP2BulkStreamWindowChangeEvent:
            break
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// A stream's protocol error goes to its stream (swift-nio-http2 reset it); any other error is the
    /// connection's: its streams fail with it, and the connection is closed (swift-nio-http2 sent GOAWAY for an
    /// HTTP/2 connection error and leaves the connection open, but no stream can trust it any more).
    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            streams[streamError.streamID]?.streamError(streamError.baseError)
            return
        }
        if !closing {
            closing = true
            observer?.goAway()
        }
        if closeReason == nil {
            switch error {
            case let tls as TLSError: closeReason = .tls(tls)
            case is IOError, is ChannelError, is NIOHTTP2Errors.IOOnClosedConnection:
                closeReason = .transport(.connectionClosed)
            default: closeReason = .transport(.malformedResponse(.http2ConnectionError(Self.name(of: error))))
            }
        }
        context.close(promise: nil)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        finishRead()
        let open = Array(streams.values) + Array(unopened.values)
        streams = [:]
        unopened = [:]
        for stream in open { stream.connectionClosed() }
        context.fireChannelInactive()
    }

    /// What a swift-nio-http2 error is, by its type's name only (`FlowControlViolation`): some of its descriptions
    /// carry a header field's value, which may be a request's credential and never belongs in an error message.
    static func name(of error: any Error) -> String {
        String(describing: type(of: error))
    }

    /// The GOAWAY error code's name when the server's GOAWAY said it never processed stream `id` (its id is above
    /// the GOAWAY's last stream id, RFC 9113 §6.8), else nil: its request may be sent again on a new connection.
    private func refusedCode(_ id: HTTP2StreamID) -> HTTPSTransportError.HTTP2ErrorCode? {
        guard let goAway, id > goAway.lastStreamID else { return nil }
        return goAway.code.transportCode
    }

    /// ``refusedCode(_:)`` for `stream`, which a GOAWAY also refuses when it never wrote its HEADERS. Whatever
    /// ends such a stream (its write failing, the connection closing, the stream closing), the outcome is the
    /// same: never processed.
    func refusal(of stream: HTTP2Stream) -> HTTPSTransportError.HTTP2ErrorCode? {
        guard let goAway else { return nil }
        guard let id = stream.id else { return goAway.code.transportCode }
        return refusedCode(id)
    }
}

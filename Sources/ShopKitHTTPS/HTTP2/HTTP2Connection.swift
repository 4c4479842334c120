import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// One verified HTTP/2 connection: the TLS channel with swift-nio-http2's framing, a settings and GOAWAY
/// observer, and a stream multiplexer. Each request runs on a stream channel of its own, through an
/// ``HTTP2StreamHandler`` driving the same request state machine as HTTP/1.1, behind swift-nio-http2's codec
/// from HTTP/1-style parts to HTTP/2 frames (pseudo-headers, lowercase names, no connection-specific fields).
///
/// The pool decides how many streams run at once from ``streamCapacity`` and the events this connection
/// reports through ``Events``.
final class HTTP2Connection: Sendable {
    /// What the connection tells the pool, on its event loop.
    struct Events: Sendable {
        /// The server changed `SETTINGS_MAX_CONCURRENT_STREAMS` (after the first SETTINGS).
        var capacityChanged: @Sendable (Int) -> Void = { _ in }
        /// The server sent GOAWAY: no new streams.
        var goAway: @Sendable () -> Void = {}
    }

    /// When to PING a silent connection, and how long to wait for the acknowledgement.
    struct Keepalive: Sendable, Hashable {
        var interval: TimeAmount
        var timeout: TimeAmount
    }

    /// The most concurrent streams used when the server sets no limit.
    static let defaultStreamCapacity = 1_000

    let channel: any Channel
    private let logger: Logger
    private let multiplexer: NIOLoopBound<HTTP2StreamMultiplexer>
    private let state: NIOLockedValueBox<
        (capacity: Int, goingAway: Bool, lastStreamID: HTTP2StreamID?, goAwayCode: HTTP2ErrorCode?)
    >
    /// Why the connection closed, when its streams should hear more than "closed" (a missed PING).
    private let closeReason: NIOLoopBoundBox<HTTPSTransportError?>

    /// The server's current concurrent-stream limit.
    var streamCapacity: Int { state.withLockedValue { $0.capacity } }
    /// Whether new streams may be opened (the channel is up and no GOAWAY arrived).
    var isAcceptingStreams: Bool { channel.isActive && !state.withLockedValue { $0.goingAway } }

    private init(
        channel: any Channel, multiplexer: HTTP2StreamMultiplexer, capacity: Int,
        closeReason: NIOLoopBoundBox<HTTPSTransportError?>, logger: Logger
    ) {
        self.channel = channel
        self.closeReason = closeReason
        self.logger = logger
        self.multiplexer = NIOLoopBound(multiplexer, eventLoop: channel.eventLoop)
        self.state = NIOLockedValueBox((capacity, false, nil, nil))
    }

    /// Sets up HTTP/2 on a verified channel (on its event loop) and succeeds once the server's first SETTINGS
    /// frame arrived, so the stream capacity is known. `events` is set once the pool knows the connection.
    static func start(
        on channel: any Channel, keepalive: Keepalive?, logger: Logger, events: @escaping @Sendable () -> Events
    ) -> EventLoopFuture<HTTP2Connection> {
        let loop = channel.eventLoop
        let ready = loop.makePromise(of: HTTP2Connection.self)
        do {
            let sync = channel.pipeline.syncOperations
            let multiplexer = HTTP2StreamMultiplexer(
                mode: .client, channel: channel, targetWindowSize: streamWindowSize, inboundStreamInitializer: nil)
            let box = NIOLoopBoundBox<HTTP2Connection?>(nil, eventLoop: loop)
            let closeReason = NIOLoopBoundBox<HTTPSTransportError?>(nil, eventLoop: loop)
            let observer = HTTP2ConnectionObserver(
                connectionError: { error in
                    // swift-nio-http2 sent GOAWAY for a connection error and left the connection open: no stream
                    // can trust it any more. Its streams fail with what happened, and the pool never uses it again.
                    if closeReason.value == nil {
                        closeReason.value = .malformedResponse("HTTP/2 connection error: \(error)")
                    }
                    channel.close(promise: nil)
                },
                settings: { maxStreams in
                    let capacity = maxStreams.map { min($0, defaultStreamCapacity) } ?? defaultStreamCapacity
                    if let connection = box.value {
                        connection.state.withLockedValue { $0.capacity = capacity }
                        events().capacityChanged(capacity)
                    } else {
                        let connection = HTTP2Connection(
                            channel: channel, multiplexer: multiplexer, capacity: capacity, closeReason: closeReason,
                            logger: logger)
                        box.value = connection
                        ready.succeed(connection)
                    }
                },
                goAway: { lastStreamID, code in
                    guard let connection = box.value else { return }
                    connection.state.withLockedValue {
                        $0.goingAway = true
                        $0.lastStreamID = min($0.lastStreamID ?? lastStreamID, lastStreamID)
                        $0.goAwayCode = code
                    }
                    events().goAway()
                })
            try sync.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: Self.initialSettings))
            if let keepalive {
                try sync.addHandler(
                    HTTP2KeepaliveHandler(interval: keepalive.interval, timeout: keepalive.timeout, logger: logger) {
                        closeReason.value = $0
                    })
            }
            try sync.addHandler(observer)
            try sync.addHandler(multiplexer)
        } catch {
            ready.fail(HTTPSTransportError.connectionClosed)
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in ready.fail(HTTPSTransportError.connectionClosed) }
        return ready.futureResult
    }

    /// How many response body bytes the server may send on one stream ahead of the reader: 1 MiB. The
    /// multiplexer tops the window up when half of it was read, so a reader that keeps up never stalls the
    /// server (with HTTP/2's default 64 KiB, a 1 MiB body waited for 16 WINDOW_UPDATE round trips), and one that
    /// stops reading holds at most this much for its stream. The connection window is topped up as frames arrive
    /// (the same target), so a slow stream never blocks the others.
    static let streamWindowSize = 1 << 20

    /// What the client announces: no server push, the stream window, and a bound on the response header list
    /// (a larger header block is a protocol error for that stream's connection, never unbounded memory).
    static let initialSettings: HTTP2Settings = [
        HTTP2Setting(parameter: .enablePush, value: 0),
        HTTP2Setting(parameter: .initialWindowSize, value: streamWindowSize),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 64 * 1024),
    ]

    /// On the event loop: opens a stream for one request, a stream channel whose pipeline speaks HTTP/1-style
    /// parts with an ``HTTP2StreamHandler`` of its own; `opened` gets it, or an ``HTTPSTransportError``. One promise
    /// (the stream channel's) per stream, and no future chained on it: each future costs an allocation and
    /// NIO's generic metadata lookups, on every request.
    func openStream(_ opened: @escaping @Sendable (Result<HTTPClientConnection, any Error>) -> Void) {
        let loop = channel.eventLoop
        let closeReason = self.closeReason
        let handler = NIOLoopBound(
            HTTP2StreamHandler(logger: logger) { closeReason.value }, eventLoop: loop)
        let stream = loop.makePromise(of: (any Channel).self)
        multiplexer.value.createStreamChannel(promise: stream) { streamChannel in
            do {
                let exchange = handler.value
                let sync = streamChannel.pipeline.syncOperations
                try sync.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                try sync.addHandler(InboundByteObserver { exchange.noteBytesRead() })
                try sync.addHandler(exchange)
                return streamChannel.eventLoop.makeSucceededVoidFuture()
            } catch {
                return streamChannel.eventLoop.makeFailedFuture(error)
            }
        }
        stream.futureResult.whenComplete { result in
            switch result {
            case .success(let streamChannel):
                opened(.success(HTTPClientConnection(channel: streamChannel, handler: handler.value)))
            case .failure(let error):
                opened(.failure(error is HTTPSTransportError ? error : HTTPSTransportError.connectionClosed))
            }
        }
    }

    /// The error code of the server's GOAWAY when it said it never processed the stream on `streamChannel` (its
    /// id is above the GOAWAY's last stream id, RFC 9113 §6.8), else nil: such a request may be sent again on a
    /// new connection.
    func refused(_ streamChannel: any Channel) async -> String? {
        guard let (last, code) = state.withLockedValue({ state in state.lastStreamID.map { ($0, state.goAwayCode) } }),
            let id = try? await streamChannel.getOption(HTTP2StreamChannelOptions.streamID).get(), id > last
        else { return nil }
        return code?.name ?? "NO_ERROR"
    }

    /// Closes the connection (its streams fail).
    func close() {
        channel.close(promise: nil)
    }
}

/// Watches the connection-level frames between swift-nio-http2's handler and the multiplexer: the server's
/// SETTINGS (its stream limit) and GOAWAY, and the connection errors swift-nio-http2 reports.
final class HTTP2ConnectionObserver: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    private let connectionError: (any Error) -> Void
    private let settings: (Int?) -> Void
    private let goAway: (HTTP2StreamID, HTTP2ErrorCode) -> Void
    private var maxStreams: Int?

    init(
        connectionError: @escaping (any Error) -> Void, settings: @escaping (Int?) -> Void,
        goAway: @escaping (HTTP2StreamID, HTTP2ErrorCode) -> Void
    ) {
        self.connectionError = connectionError
        self.settings = settings
        self.goAway = goAway
    }

    /// A stream's error goes on to its stream; any other error is the connection's: it is closed.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !(error is NIOHTTP2Errors.StreamError) { connectionError(error) }
        context.fireErrorCaught(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let values)):
            for setting in values where setting.parameter == .maxConcurrentStreams { maxStreams = setting.value }
            settings(maxStreams)
        case .goAway(let lastStreamID, let code, _):
            goAway(lastStreamID, code)
        default:
            break
        }
        context.fireChannelRead(data)
    }
}

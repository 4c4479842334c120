import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// One verified HTTP/2 connection: the TLS channel with swift-nio-http2's framing, a settings and GOAWAY
/// observer, and a stream multiplexer. Each exchange runs on a stream channel of its own, through the same
/// ``HTTPClientConnectionHandler`` (and exchange state machine) as HTTP/1.1, behind swift-nio-http2's codec
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

    /// The most concurrent streams used when the server sets no limit.
    static let defaultStreamCapacity = 1_000

    let channel: any Channel
    private let logger: Logger
    private let multiplexer: NIOLoopBound<HTTP2StreamMultiplexer>
    private let state: NIOLockedValueBox<(capacity: Int, goingAway: Bool, lastStreamID: HTTP2StreamID?)>

    /// The server's current concurrent-stream limit.
    var streamCapacity: Int { state.withLockedValue { $0.capacity } }
    /// Whether new streams may be opened (the channel is up and no GOAWAY arrived).
    var isAcceptingStreams: Bool { channel.isActive && !state.withLockedValue { $0.goingAway } }

    private init(channel: any Channel, multiplexer: HTTP2StreamMultiplexer, capacity: Int, logger: Logger) {
        self.channel = channel
        self.logger = logger
        self.multiplexer = NIOLoopBound(multiplexer, eventLoop: channel.eventLoop)
        self.state = NIOLockedValueBox((capacity, false, nil))
    }

    /// Sets up HTTP/2 on a verified channel (on its event loop) and succeeds once the server's first SETTINGS
    /// frame arrived, so the stream capacity is known. `events` is set once the pool knows the connection.
    static func start(
        on channel: any Channel, logger: Logger, events: @escaping @Sendable () -> Events
    ) -> EventLoopFuture<HTTP2Connection> {
        let loop = channel.eventLoop
        let ready = loop.makePromise(of: HTTP2Connection.self)
        do {
            let sync = channel.pipeline.syncOperations
            let multiplexer = HTTP2StreamMultiplexer(mode: .client, channel: channel, inboundStreamInitializer: nil)
            let box = NIOLoopBoundBox<HTTP2Connection?>(nil, eventLoop: loop)
            let observer = HTTP2ConnectionObserver(
                settings: { maxStreams in
                    let capacity = maxStreams.map { min($0, defaultStreamCapacity) } ?? defaultStreamCapacity
                    if let connection = box.value {
                        connection.state.withLockedValue { $0.capacity = capacity }
                        events().capacityChanged(capacity)
                    } else {
                        let connection = HTTP2Connection(channel: channel, multiplexer: multiplexer, capacity: capacity, logger: logger)
                        box.value = connection
                        ready.succeed(connection)
                    }
                },
                goAway: { lastStreamID in
                    guard let connection = box.value else { return }
                    connection.state.withLockedValue {
                        $0.goingAway = true
                        $0.lastStreamID = min($0.lastStreamID ?? lastStreamID, lastStreamID)
                    }
                    events().goAway()
                })
            try sync.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: Self.initialSettings))
            try sync.addHandler(observer)
            try sync.addHandler(multiplexer)
        } catch {
            ready.fail(HTTPSTransportError.connectionClosed)
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in ready.fail(HTTPSTransportError.connectionClosed) }
        return ready.futureResult
    }

    /// What the client announces: no server push, a 64 KiB stream window, and a bound on the response header
    /// list (a larger header block is a protocol error for that stream's connection, never unbounded memory).
    static let initialSettings: HTTP2Settings = [
        HTTP2Setting(parameter: .enablePush, value: 0),
        HTTP2Setting(parameter: .initialWindowSize, value: 65_535),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 64 * 1024),
    ]

    /// Opens a stream for one exchange: a stream channel whose pipeline speaks HTTP/1-style parts, with an
    /// exchange handler of its own.
    func openStream() -> EventLoopFuture<HTTPClientConnection> {
        let loop = channel.eventLoop
        let multiplexer = self.multiplexer
        let logger = self.logger
        return loop.flatSubmit {
            let stream = loop.makePromise(of: (any Channel).self)
            let handler = NIOLoopBoundBox<HTTPClientConnectionHandler?>(nil, eventLoop: loop)
            multiplexer.value.createStreamChannel(promise: stream) { streamChannel in
                streamChannel.eventLoop.makeCompletedFuture {
                    let exchange = HTTPClientConnectionHandler(logger: logger)
                    let sync = streamChannel.pipeline.syncOperations
                    try sync.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                    try sync.addHandler(InboundByteObserver { exchange.noteBytesRead() })
                    try sync.addHandler(exchange)
                    handler.value = exchange
                }
            }
            return stream.futureResult.flatMapThrowing { streamChannel in
                guard let exchange = handler.value else { throw HTTPSTransportError.connectionClosed }
                return HTTPClientConnection(stream: streamChannel, handler: exchange)
            }.flatMapErrorThrowing { error in
                throw error is HTTPSTransportError ? error : HTTPSTransportError.connectionClosed
            }
        }
    }

    /// Whether the server's GOAWAY said it never processed the stream on `streamChannel` (its id is above the
    /// GOAWAY's last stream id, RFC 9113 §6.8): such a request may be sent again on a new connection.
    func refused(_ streamChannel: any Channel) async -> Bool {
        guard let last = state.withLockedValue({ $0.lastStreamID }),
            let id = try? await streamChannel.getOption(HTTP2StreamChannelOptions.streamID).get()
        else { return false }
        return id > last
    }

    /// Closes the connection (its streams fail).
    func close() {
        channel.close(promise: nil)
    }
}

/// Watches the connection-level frames between swift-nio-http2's handler and the multiplexer: the server's
/// SETTINGS (its stream limit) and GOAWAY.
final class HTTP2ConnectionObserver: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    private let settings: (Int?) -> Void
    private let goAway: (HTTP2StreamID) -> Void
    private var maxStreams: Int?

    init(settings: @escaping (Int?) -> Void, goAway: @escaping (HTTP2StreamID) -> Void) {
        self.settings = settings
        self.goAway = goAway
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let values)):
            for setting in values where setting.parameter == .maxConcurrentStreams { maxStreams = setting.value }
            settings(maxStreams)
        case .goAway(let lastStreamID, _, _):
            goAway(lastStreamID)
        default:
            break
        }
        context.fireChannelRead(data)
    }
}

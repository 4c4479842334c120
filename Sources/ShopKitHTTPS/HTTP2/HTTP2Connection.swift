import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import ShopKitTLS

/// One verified HTTP/2 connection: the TLS channel with swift-nio-http2's `NIOHTTP2Handler` (framing, HPACK,
/// validation, stream states, flow control on what is sent), optionally a PING keepalive, and one
/// ``HTTP2ConnectionHandler`` that runs every stream. Each request runs on a stream of its own, an ``HTTP2Stream``
/// driving the same request state machine as HTTP/1.1, with no channel per stream.
///
/// The pool decides how many streams run at once from ``streamCapacity`` and the events this connection
/// reports through ``Events``.
final class HTTP2Connection: Sendable {
    /// What the connection tells the pool, on its event loop.
    struct Events: Sendable {
        /// The server changed `SETTINGS_MAX_CONCURRENT_STREAMS` (after the first SETTINGS).
        var capacityChanged: @Sendable (Int) -> Void = { _ in }
        /// The server sent GOAWAY, or the connection is closing for a connection error: no new streams.
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
    private let handler: NIOLoopBound<HTTP2ConnectionHandler>
    private let state: NIOLockedValueBox<(capacity: Int, goingAway: Bool)>

    /// The server's current concurrent-stream limit.
    var streamCapacity: Int { state.withLockedValue { $0.capacity } }
    /// Whether new streams may be opened (the channel is up and no GOAWAY arrived).
    var isAcceptingStreams: Bool { channel.isActive && !state.withLockedValue { $0.goingAway } }

    private init(channel: any Channel, handler: HTTP2ConnectionHandler, capacity: Int) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        self.state = NIOLockedValueBox((capacity, false))
    }

    /// Sets up HTTP/2 on a verified channel (on its event loop) and succeeds once the server's first SETTINGS
    /// frame arrived, so the stream capacity is known. `events` is set once the pool knows the connection.
    ///
    /// A server that completed TLS but sends no SETTINGS by `settingsDeadline` (the connection's handshake
    /// deadline) fails it with ``TLSError/handshakeTimeout`` and the connection is closed: every request for the
    /// host would otherwise queue behind a connection that never becomes ready.
    static func start(
        on channel: any Channel, settingsDeadline: NIODeadline, keepalive: Keepalive?, logger: Logger,
        events: @escaping @Sendable () -> Events
    ) -> EventLoopFuture<HTTP2Connection> {
        let loop = channel.eventLoop
        let ready = loop.makePromise(of: HTTP2Connection.self)
        // The deadline lives with what it races: the first SETTINGS.
        let deadline = loop.scheduleTask(deadline: settingsDeadline) {
            ready.fail(TLSError.handshakeTimeout)
            channel.close(promise: nil)
        }
        ready.futureResult.whenComplete { _ in deadline.cancel() }
        do {
            let sync = channel.pipeline.syncOperations
            let box = NIOLoopBoundBox<HTTP2Connection?>(nil, eventLoop: loop)
            let handlerBox = NIOLoopBoundBox<HTTP2ConnectionHandler?>(nil, eventLoop: loop)
            let handler = HTTP2ConnectionHandler(
                eventLoop: loop, logger: logger,
                observer: .init(
                    settings: { maxStreams in
                        let capacity = maxStreams.map { min($0, defaultStreamCapacity) } ?? defaultStreamCapacity
                        if let connection = box.value {
                            connection.state.withLockedValue { $0.capacity = capacity }
                            events().capacityChanged(capacity)
                        } else if let handler = handlerBox.value {
                            let connection = HTTP2Connection(channel: channel, handler: handler, capacity: capacity)
                            box.value = connection
                            ready.succeed(connection)
                        }
                    },
                    goAway: {
                        guard let connection = box.value else { return }
                        connection.state.withLockedValue { $0.goingAway = true }
                        events().goAway()
                    }))
            handlerBox.value = handler
            var configuration = NIOHTTP2Handler.ConnectionConfiguration()
            configuration.initialSettings = HTTP2ConnectionHandler.initialSettings
            configuration.controlFrameRateLimit = controlFrameRateLimit(keepalive: keepalive)
            try sync.addHandler(NIOHTTP2Handler(mode: .client, frameDelegate: nil, connectionConfiguration: configuration))
            if let keepalive {
                try sync.addHandler(
                    HTTP2KeepaliveHandler(interval: keepalive.interval, timeout: keepalive.timeout, logger: logger) {
                        if handler.closeReason == nil { handler.closeReason = .transport($0) }
                    })
            }
            try sync.addHandler(handler)
        } catch {
            ready.fail(HTTPSTransportError.connectionClosed)
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in ready.fail(HTTPSTransportError.connectionClosed) }
        return ready.futureResult
    }

    /// The server's control frames (PING, SETTINGS, PRIORITY...) a connection takes within swift-nio-http2's
    /// window (30 s) before it treats them as a flood: its default of 200, plus the acknowledgements of our own
    /// keepalive PINGs in that window. Those count as inbound control frames too, so with a short interval (a
    /// PING every 50 ms is 600 acknowledgements in 30 s) a healthy connection died as "ExcessiveControlFrames".
    static func controlFrameRateLimit(keepalive: Keepalive?) -> NIOHTTP2Handler.ControlFrameRateLimitConfiguration {
        var limit = NIOHTTP2Handler.ControlFrameRateLimitConfiguration()
        if let keepalive, keepalive.interval > .zero {
            let window = limit.windowLength.nanoseconds
            let interval = keepalive.interval.nanoseconds
            limit.maximumCount += Int((window + interval - 1) / interval) + 1
        }
        return limit
    }

    /// On the event loop: opens a stream for one request and hands it to `opened` at once, or
    /// ``ConnectionNotQuiet`` when the connection takes no more streams (it closed, is closing, or the server's
    /// GOAWAY arrived after the pool handed it out): nothing was sent, so the request goes out on another
    /// connection, and this is not an attempt. Nothing is sent until the request's head is written.
    ///
    /// A connection that was idle gets a liveness check first (``ConnectionQuiet``, `closedOnly`): a server that
    /// closed its side (its FIN arrived, not read yet) gets no request on it; it is closed, and the request goes
    /// out on another. Bytes waiting are no sign here: an idle HTTP/2 connection receives PINGs and their
    /// acknowledgements.
    func openStream(_ opened: @escaping @Sendable (Result<HTTPClientConnection, any Error>) -> Void) {
        let handler = self.handler.value
        if handler.isIdle, !ConnectionQuiet.check(channel, closedOnly: true) {
            channel.close(promise: nil)
            opened(.failure(ConnectionNotQuiet()))
            return
        }
        guard let stream = handler.openStream() else {
            opened(.failure(ConnectionNotQuiet()))
            return
        }
        opened(.success(HTTPClientConnection(channel: channel, handler: stream)))
    }

    /// Closes the connection (its streams fail).
    func close() {
        channel.close(promise: nil)
    }
}

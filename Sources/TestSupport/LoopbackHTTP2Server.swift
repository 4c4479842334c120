import NIOCore
import NIOHTTP1
import NIOHPACK
import NIOHTTP2
import NIOPosix
import ShopKitDemoSupport
import ShopKitTLS

/// An in-process HTTPS server on 127.0.0.1 that speaks HTTP/2 (swift-nio-http2's server side) behind ShopKit's
/// server-role TLS handler, with ALPN; for the transport's HTTP/2 tests. It can limit concurrent streams,
/// hold responses until told, reset streams, and send GOAWAY; it counts connections, requests, the most
/// streams open at once, PINGs and the client's stream resets.
package final class LoopbackHTTP2Server: Sendable {
    /// One request as the server saw it.
    package struct Request: Sendable {
        /// The request's method and path.
        package let method: String
        package let path: String
        /// The request's header fields (HTTP/1-style names after swift-nio-http2's translation).
        package let headers: [(String, String)]
        /// The request body.
        package let body: [UInt8]
        /// 1 for the first request the server saw, and so on.
        package let index: Int
    }

    /// What to do with a request.
    package enum Action: Sendable {
        /// Answer with this status, extra headers and body (and a `trailer-check` trailer when `trailers`).
        case respond(status: Int = 200, headers: [(String, String)] = [], body: [UInt8], trailers: Bool = false)
        /// Reset the stream with this error code.
        case reset(HTTP2ErrorCode)
        /// Answer only when ``releaseHeld(body:)`` is called.
        case hold
        /// Never answer, and send this many PING frames on the connection at once (a flood).
        case floodPings(Int)
        /// Answer with these bytes, written on the connection under the server's HTTP/2 handler (after what it
        /// has pending), for frames no well-behaved HTTP/2 stack sends (``RawHTTP2Frame``); given the stream's id.
        case raw(@Sendable (HTTP2StreamID) -> [UInt8])
        /// A script of its own for this request, carried out step by step on the stream's event loop (see
        /// ``Step``); it ends early where a step ends the stream or the connection.
        case steps([Step])
    }

    /// One step of ``Action/steps(_:)``.
    package enum Step: Sendable {
        /// An interim response (HEADERS with a 1xx `:status`, no END_STREAM), written as raw bytes under the
        /// server's HTTP/2 handler (swift-nio-http2's server side does not send 1xx); must come first.
        case interim(status: Int)
        /// The response head (with `content-length` when given).
        case head(status: Int, headers: [(String, String)], contentLength: Int?)
        /// A part of the body, flushed; with `end`, the end of the stream follows it.
        case data([UInt8], end: Bool)
        /// Wait this long before the next step (jitter, a slow body).
        case delay(TimeAmount)
        /// Reset the stream with this code, and end the script.
        case reset(HTTP2ErrorCode)
        /// Send GOAWAY with this code on the connection (once per connection). Its last stream id is the highest
        /// stream the server already processed on it, or this one when `processThis`: a stream above it is never
        /// answered. When this stream is above it, `refused` is called and the script ends here, unanswered.
        case goAway(HTTP2ErrorCode, processThis: Bool, refused: @Sendable () -> Void = {})
        /// Close the connection: with `notify`, through every handler (close_notify first); without, the socket
        /// alone (a FIN with no close_notify). Ends the script.
        case closeConnection(notify: Bool)
    }

    /// Decides each request's fate.
    package typealias Script = @Sendable (Request) -> Action

    /// Counts kept by the server.
    package struct Counts: Sendable {
        package var connections = 0
        package var requests = 0
        package var openStreams = 0
        package var maxOpenStreams = 0
        package var held = 0
        /// PINGs received (not acknowledgements).
        package var pings = 0
        /// RST_STREAM frames the client sent, counted from the bytes before swift-nio-http2 sees them (its state
        /// machine drops a reset of a stream that has already ended).
        package var resets = 0
    }

    fileprivate struct Held {
        let respond: @Sendable ([UInt8]) -> Void
        let streamID: HTTP2StreamID
        let connection: any Channel
    }

    fileprivate struct State {
        var counts = Counts()
        var held: [Held] = []
        var connections: [any Channel] = []
        /// Inbound bytes are dropped unread, as from a peer that vanished (so no PING is acknowledged).
        var silent = false
        /// The last stream id each connection's GOAWAY said it processed: the server never answers a stream above it
        /// (RFC 9113 §6.8), even one whose request ends after the GOAWAY was decided.
        var goAwayLastStreamID: [ObjectIdentifier: HTTP2StreamID] = [:]
        /// The streams each connection processed (handed to the script), for the last stream id of a GOAWAY.
        var processedStreams: [ObjectIdentifier: [HTTP2StreamID]] = [:]
    }

    /// The bound port.
    package let port: Int
    /// The server's TLS context (its `statistics` count handshakes).
    package let tlsContext: TLSServerContext
    private let channel: any Channel
    private let state: WaitableState<State>

    /// What the server counted so far.
    package var counts: Counts { state.withLockedValue { $0.counts } }

    private init(port: Int, tlsContext: TLSServerContext, channel: any Channel, state: WaitableState<State>) {
        self.port = port
        self.tlsContext = tlsContext
        self.channel = channel
        self.state = state
    }

    /// Starts a server with the standard TestCerts chain for `127.0.0.1`/`localhost`.
    ///
    /// - Parameter maxConcurrentStreams: the `SETTINGS_MAX_CONCURRENT_STREAMS` announced.
    /// - Parameter recordCuts: when set, every buffer the server writes is cut at random places (from this seed,
    ///   and the connection's number), each piece its own TLS record.
    /// - Parameter applicationProtocols: ALPN served, most preferred first (`["h2"]`: HTTP/2 only).
    /// - Parameter group: where the server runs; a test whose timing matters gives it loops of its own, so that
    ///   other tests running at the same time on the shared loops cannot delay its answers.
    package static func start(
        maxConcurrentStreams: Int = 100, applicationProtocols: [String] = ["h2"],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, recordCuts: UInt64? = nil,
        script: @escaping Script = { _ in .respond(body: Array("h2".utf8)) }
    ) async throws -> LoopbackHTTP2Server {
        let tlsContext = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
            applicationProtocols: applicationProtocols)
        return try await start(
            tlsContext: tlsContext, maxConcurrentStreams: maxConcurrentStreams, group: group, recordCuts: recordCuts,
            script: script)
    }

    /// Starts a server with a ready-made TLS context (whose ALPN must offer `h2`).
    package static func start(
        tlsContext: TLSServerContext, maxConcurrentStreams: Int = 100,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, recordCuts: UInt64? = nil,
        script: @escaping Script = { _ in .respond(body: Array("h2".utf8)) }
    ) async throws -> LoopbackHTTP2Server {
        let state = WaitableState(State())
        let settings: HTTP2Settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { connection in
                let number = state.withLockedValue {
                    $0.counts.connections += 1
                    $0.connections.append(connection)
                    return $0.counts.connections
                }
                return connection.eventLoop.makeCompletedFuture {
                    try connection.pipeline.syncOperations.addHandler(RawCloser())
                    try connection.pipeline.syncOperations.addHandler(tlsContext.makeHandler())
                    if let recordCuts {
                        try connection.pipeline.syncOperations.addHandler(
                            RecordCutter(seed: recordCuts ^ UInt64(number) &* 0x9E37_79B9_7F4A_7C15))
                    }
                    try connection.pipeline.syncOperations.addHandler(Silencer(state: state))
                    try connection.pipeline.syncOperations.addHandler(ResetCounter(state: state))
                }.flatMapThrowing {
                    // swift-nio-http2's server pipeline, with room for the PINGs of the keepalive tests (a PING
                    // every 10 ms is far above its default of 200 control frames in 30 s).
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.initialSettings = settings
                    configuration.controlFrameRateLimit.maximumCount = 1_000_000
                    let http2 = NIOHTTP2Handler(mode: .server, frameDelegate: nil, connectionConfiguration: configuration)
                    let multiplexer = HTTP2StreamMultiplexer(mode: .server, channel: connection) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            let sync = stream.pipeline.syncOperations
                            let resetter = StreamResetter()
                            try sync.addHandler(resetter)
                            try sync.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                            try sync.addHandler(
                                StreamResponder(state: state, connection: connection, resetter: resetter, script: script))
                        }
                    }
                    let sync = connection.pipeline.syncOperations
                    try sync.addHandler(http2)
                    try sync.addHandler(RefusedStreamFrames(state: state, connection: connection))
                    try sync.addHandler(PingCounter(state: state))
                    try sync.addHandler(multiplexer)
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw TLSContextError(message: "server has no port") }
        return LoopbackHTTP2Server(port: port, tlsContext: tlsContext, channel: channel, state: state)
    }

    /// The counts a test can wait for.
    fileprivate enum Counter: Sendable {
        case held, pings, resets

        func value(in counts: Counts) -> Int {
            switch self {
            case .held: return counts.held
            case .pings: return counts.pings
            case .resets: return counts.resets
            }
        }
    }

    /// Returns once at least `count` requests are being held; throws ``WaitEnded`` (with the counts) past
    /// `timeout` or when the waiting task is cancelled (a test's time limit).
    package func waitUntilHeld(_ count: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await wait(until: .held, reaches: count, timeout: timeout)
    }

    /// Returns once the server received at least `count` PINGs; throws ``WaitEnded`` past `timeout` or when the
    /// waiting task is cancelled.
    package func waitUntilPinged(_ count: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await wait(until: .pings, reaches: count, timeout: timeout)
    }

    /// Returns once the server received at least `count` RST_STREAM frames from clients; throws ``WaitEnded``
    /// past `timeout` or when the waiting task is cancelled.
    package func waitUntilReset(_ count: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await wait(until: .resets, reaches: count, timeout: timeout)
    }

    /// Returns once `counter` reaches `count`; throws ``WaitEnded`` past `timeout` or when cancelled.
    private func wait(until counter: Counter, reaches count: Int, timeout: Duration) async throws {
        try await state.wait(
            until: { counter.value(in: $0.counts) >= count }, for: "\(counter) to reach \(count)", timeout: timeout,
            describe: { "\($0.counts)" })
    }

    /// From now on every connection drops what it receives, unread and unanswered, as a peer that vanished
    /// (behind a NAT that forgot the connection) would; the sockets stay open.
    package func goSilent() {
        state.withLockedValue { $0.silent = true }
    }

    /// Ends ``goSilent()``: connections read again (what arrived meanwhile stays dropped).
    package func speakAgain() {
        state.withLockedValue { $0.silent = false }
    }

    /// Answers every held request with 200 and `body`.
    package func releaseHeld(body: [UInt8] = Array("released".utf8)) {
        let held = state.withLockedValue { state -> [Held] in
            defer { state.held = [] }
            return state.held
        }
        for entry in held { entry.respond(body) }
    }

    /// Answers every held request with 200 and `body`, all the answers of one connection in one write (written as
    /// frames on the connection, flushed once), so that the client reads them together.
    package func releaseHeldInOneWrite(body: [UInt8] = Array("released".utf8)) {
        let held = state.withLockedValue { state -> [Held] in
            defer { state.held = [] }
            return state.held
        }
        for connection in Set(held.map { ObjectIdentifier($0.connection) }) {
            let streams = held.filter { ObjectIdentifier($0.connection) == connection }.sorted { $0.streamID < $1.streamID }
            guard let channel = streams.first?.connection else { continue }
            let ids = streams.map(\.streamID)
            channel.eventLoop.execute {
                for id in ids {
                    let headers: HPACKHeaders = [":status": "200", "content-length": "\(body.count)"]
                    channel.write(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers))), promise: nil)
                    let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(channel.allocator.buffer(bytes: body)), endStream: true)
                    channel.write(HTTP2Frame(streamID: id, payload: .data(data)), promise: nil)
                }
                channel.flush()
            }
        }
    }

    /// Sends GOAWAY on the connections of the held requests, naming as the last processed stream the
    /// `processed`-th lowest held stream id; answers the held requests up to it and drops the others unanswered
    /// (the client must not expect them to be processed).
    package func goAway(processing processed: Int, body: [UInt8] = Array("before goaway".utf8)) {
        let held = state.withLockedValue { state -> [Held] in
            defer { state.held = [] }
            return state.held.sorted { $0.streamID < $1.streamID }
        }
        guard let connection = held.first?.connection else { return }
        let lastProcessed = held.prefix(processed).last?.streamID ?? .rootStream
        state.withLockedValue { $0.goAwayLastStreamID[ObjectIdentifier(connection)] = lastProcessed }
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastProcessed, errorCode: .noError, opaqueData: nil))
        connection.eventLoop.execute {
            for entry in held.prefix(processed) { entry.respond(body) }
            connection.writeAndFlush(frame, promise: nil)
        }
    }

    /// Closes every connection at once, as a server that dies would (no GOAWAY, no close_notify).
    package func closeConnections() {
        let connections = state.withLockedValue { state -> [any Channel] in
            defer { state.connections = [] }
            return state.connections
        }
        for connection in connections { connection.close(promise: nil) }
    }

    /// Stops listening, and drops the requests still held (their streams close with their connections).
    package func shutdown() async throws {
        state.withLockedValue {
            $0.held = []
            $0.connections = []
        }
        try await channel.close()
    }

    fileprivate static func note(_ state: WaitableState<State>, held entry: Held) {
        state.withLockedValue { state in
            state.held.append(entry)
            state.counts.held += 1
        }
    }

    /// Drops inbound bytes while the server is silent.
    private final class Silencer: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        private let state: WaitableState<State>

        init(state: WaitableState<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !state.withLockedValue({ $0.silent }) { context.fireChannelRead(data) }
        }
    }

    /// Counts the client's RST_STREAM frames by reading the frame headers (RFC 9113 §4.1: a 24-bit length, an
    /// 8-bit type, flags, a stream id) in the plaintext after the client's 24-byte preface; passes every byte on.
    private final class ResetCounter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        private let state: WaitableState<State>
        private var prefaceLeft = 24
        private var header: [UInt8] = []
        private var payloadLeft = 0

        init(state: WaitableState<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data).readableBytesView[...]
            while !bytes.isEmpty {
                if prefaceLeft > 0 || payloadLeft > 0 {
                    let skip = min(bytes.count, max(prefaceLeft, payloadLeft))
                    bytes = bytes.dropFirst(skip)
                    if prefaceLeft > 0 { prefaceLeft -= skip } else { payloadLeft -= skip }
                    continue
                }
                let take = min(bytes.count, 9 - header.count)
                header += bytes.prefix(take)
                bytes = bytes.dropFirst(take)
                guard header.count == 9 else { continue }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                if header[3] == 0x3 { state.withLockedValue { $0.counts.resets += 1 } }
                header = []
            }
            context.fireChannelRead(data)
        }
    }

    /// Keeps the connection reading past the frames of a stream its GOAWAY refused. swift-nio-http2 (1.46) ignores
    /// the HEADERS of a stream above the last stream id of a GOAWAY it sent, but takes that stream's later frames
    /// (DATA, RST_STREAM: a client sends them before it reads the GOAWAY) as a connection error,
    /// `NoSuchStream`: it stops decoding in the middle of a read, its GOAWAY for the error is refused by its own
    /// state machine (it would raise the last stream id), and the connection stays open for its user to close.
    /// What follows such a frame in the read then waits, undecoded, until the client sends more bytes: a stream
    /// below the last stream id, whose request the client wrote whole, never reached the script, and its caller
    /// waited for its request timeout (`LoopbackHTTP2ServerGoAwayTests`).
    ///
    /// RFC 9113 §6.8 has the server discard those frames, DATA still counting against the connection's window
    /// (swift-nio-http2 counted it before the error, and the window is credited back as usual). So on that error
    /// decoding resumes, on a new turn of the loop, with the bytes swift-nio-http2 still holds. Any other error
    /// passes on.
    private final class RefusedStreamFrames: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias InboundOut = HTTP2Frame
        private let state: WaitableState<State>
        private let connection: any Channel

        init(state: WaitableState<State>, connection: any Channel) {
            self.state = state
            self.connection = connection
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
                    let key = ObjectIdentifier(connection)
            guard let missing = error as? NIOHTTP2Errors.NoSuchStream,
                let last = state.withLockedValue({ $0.goAwayLastStreamID[key] }), missing.streamID > last
            else {
                context.fireErrorCaught(error)
                return
            }
            let connection = self.connection
            context.eventLoop.assumeIsolated().execute {
                // The handler in front of swift-nio-http2's: an empty read makes it decode what it holds.
                guard connection.isActive,
                    let front = try? connection.pipeline.syncOperations.context(handlerType: ResetCounter.self)
                else { return }
                front.fireChannelRead(NIOAny(connection.allocator.buffer(capacity: 0)))
                front.fireChannelReadComplete()
            }
        }
    }

    /// Counts the PINGs the connection receives (swift-nio-http2 acknowledges them).
    private final class PingCounter: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias InboundOut = HTTP2Frame
        private let state: WaitableState<State>

        init(state: WaitableState<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .ping(_, ack: false) = unwrapInboundIn(data).payload {
                state.withLockedValue { $0.counts.pings += 1 }
            }
            context.fireChannelRead(data)
        }
    }

    /// Answers one request on one stream.
    private final class StreamResponder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private let state: WaitableState<State>
        private let connection: any Channel
        private let script: Script
        private let resetter: StreamResetter
        private var head: HTTPRequestHead?
        private var body: [UInt8] = []

        init(state: WaitableState<State>, connection: any Channel, resetter: StreamResetter, script: @escaping Script) {
            self.state = state
            self.connection = connection
            self.resetter = resetter
            self.script = script
        }

        func channelActive(context: ChannelHandlerContext) {
            state.withLockedValue {
                $0.counts.openStreams += 1
                $0.counts.maxOpenStreams = max($0.counts.maxOpenStreams, $0.counts.openStreams)
            }
            context.fireChannelActive()
        }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { channelActive(context: context) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLockedValue { $0.counts.openStreams -= 1 }
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let requestHead):
                head = requestHead
            case .body(let buffer):
                body.append(contentsOf: buffer.readableBytesView)
            case .end:
                guard let head else { return }
                let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
                let refused = state.withLockedValue { state in
                    state.goAwayLastStreamID[ObjectIdentifier(connection)].map { streamID > $0 } ?? false
                }
                guard !refused else { return }  // above the GOAWAY: never processed
                state.withLockedValue { $0.processedStreams[ObjectIdentifier(connection), default: []].append(streamID) }
                let index = state.withLockedValue { state -> Int in
                    state.counts.requests += 1
                    return state.counts.requests
                }
                let request = Request(
                    method: head.method.rawValue, path: head.uri, headers: head.headers.map { ($0.name, $0.value) },
                    body: body, index: index)
                let loop = context.eventLoop
                let loopBound = NIOLoopBound(context, eventLoop: loop)
                let respond: @Sendable (Int, [UInt8], Bool) -> Void = { status, bytes, trailers in
                    loop.execute { Self.respond(loopBound.value, status: status, headers: [], body: bytes, trailers: trailers) }
                }
                switch script(request) {
                case .respond(let status, let extra, let bytes, let trailers):
                    Self.respond(context, status: status, headers: extra, body: bytes, trailers: trailers)
                case .reset(let code):
                    resetter.reset(code)
                case .floodPings(let count):
                    for index in 0..<count {
                        let ping = HTTP2Frame(
                            streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: UInt64(index)), ack: false))
                        connection.write(ping, promise: nil)
                    }
                    connection.flush()
                case .raw(let bytes):
                    let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID))
                        ?? .rootStream
                    connection.flush()
                    let http2 = try? connection.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self)
                    http2?.writeAndFlush(NIOAny(connection.allocator.buffer(bytes: bytes(streamID))), promise: nil)
                case .steps(let steps):
                    StepRunner(state: state, connection: connection, streamID: streamID, resetter: resetter)
                        .run(steps[...], context: context)
                case .hold:
                    let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID))
                        ?? .rootStream
                    LoopbackHTTP2Server.note(
                        state, held: Held(respond: { respond(200, $0, false) }, streamID: streamID, connection: connection))
                }
            }
        }

        private static func respond(
            _ context: ChannelHandlerContext, status: Int, headers extra: [(String, String)], body: [UInt8], trailers: Bool
        ) {
            var headers = HTTPHeaders(extra)
            headers.add(name: "content-length", value: "\(body.count)")
            let head = HTTPResponseHead(version: .http2, status: .init(statusCode: status), headers: headers)
            context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(trailers ? ["trailer-check": "yes"] : nil)), promise: nil)
        }
    }

    /// Carries out a ``Action/steps(_:)`` script on one stream; a delay goes on in a task scheduled on its loop.
    private struct StepRunner {
        let state: WaitableState<State>
        let connection: any Channel
        let streamID: HTTP2StreamID
        let resetter: StreamResetter

        func run(_ steps: ArraySlice<Step>, context: ChannelHandlerContext) {
            var steps = steps
            while let step = steps.popFirst() {
                switch step {
                case .interim(let status):
                    connection.flush()
                    let http2 = try? connection.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self)
                    let frame = RawHTTP2Frame.headers(streamID, [(":status", "\(status)")], endStream: false)
                    http2?.writeAndFlush(NIOAny(connection.allocator.buffer(bytes: frame)), promise: nil)
                case .head(let status, let extra, let contentLength):
                    var headers = HTTPHeaders(extra)
                    if let contentLength { headers.add(name: "content-length", value: "\(contentLength)") }
                    let head = HTTPResponseHead(version: .http2, status: .init(statusCode: status), headers: headers)
                    context.writeAndFlush(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
                case .data(let bytes, let end):
                    let buffer = context.channel.allocator.buffer(bytes: bytes)
                    context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
                    if end { context.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil) }
                    context.flush()
                case .delay(let amount):
                    let rest = steps
                    let runner = self
                    // On the stream's loop (isolated): the runner and the context never leave it.
                    context.eventLoop.assumeIsolated().scheduleTask(in: amount) { runner.run(rest, context: context) }
                    return
                case .reset(let code):
                    resetter.reset(code)
                    return
                case .goAway(let code, let processThis, let refused):
                    let key = ObjectIdentifier(connection)
                    let (send, last) = state.withLockedValue { state -> (Bool, HTTP2StreamID) in
                        if let last = state.goAwayLastStreamID[key] { return (false, last) }
                        let others = (state.processedStreams[key] ?? []).filter { $0 != streamID || processThis }
                        let last = others.max() ?? .rootStream
                        state.goAwayLastStreamID[key] = last
                        return (true, last)
                    }
                    if send {
                        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: code, opaqueData: nil))
                        connection.writeAndFlush(frame, promise: nil)
                    }
                    if streamID > last {
                        refused()
                        return
                    }
                case .closeConnection(let notify):
                    if notify { connection.close(promise: nil) } else { RawCloser.close(connection) }
                    return
                }
            }
        }
    }

    /// Cuts every buffer written into pieces at random places, each written on its own (its own TLS record).
    private final class RecordCutter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        private var random: SeededRandom

        init(seed: UInt64) { random = SeededRandom(seed: seed) }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            var buffer = unwrapOutboundIn(data)
            while buffer.readableBytes > 1, random.next(upperBound: 3) == 0 {
                let piece = buffer.readSlice(length: 1 + random.next(upperBound: buffer.readableBytes - 1))!
                context.write(wrapOutboundOut(piece), promise: nil)
            }
            context.write(wrapOutboundOut(buffer), promise: promise)
        }
    }

    /// Sits in front of the stream's codec so it can write a raw RST_STREAM frame.
    private final class StreamResetter: ChannelOutboundHandler {
        typealias OutboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        private var context: ChannelHandlerContext?

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }
        func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

        func reset(_ code: HTTP2ErrorCode) {
            context?.writeAndFlush(wrapOutboundOut(.rstStream(code)), promise: nil)
        }
    }
}

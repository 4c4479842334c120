import NIOCore
import NIOHTTP2
import NIOPosix
import ShopKitTLS
import Testing
import TestSupport

/// The scripted HTTP/2 server of the model test after its own GOAWAY, driven by a raw HTTP/2 client (frames as
/// bytes over ShopKit's TLS), so that the client can do what a real client does in the race RFC 9113 §6.8
/// allows: open a stream and send its DATA before it has read the GOAWAY.
@Suite(.timeLimit(.minutes(3))) struct LoopbackHTTP2ServerGoAwayTests {
    /// Found by the model-based hostile test (its known issue `knownHTTP2Hang`: in about 2% of HTTP/2 rounds,
    /// streamed uploads ended at their 60 s request timeout, "never received"). swift-nio-http2 (1.46) ignores the
    /// HEADERS of a stream above the last stream id of a GOAWAY it sent, but then takes that stream's DATA and
    /// RST_STREAM as a connection error (`NoSuchStream`, PROTOCOL_ERROR): it stops decoding in the middle of what
    /// it read, tries a GOAWAY that its own state machine refuses (it would raise the last stream id), and leaves
    /// the connection open for its user to close. The scripted server closed nothing, so every frame after that
    /// one waited, undecoded, until the client happened to send more bytes: a stream below the GOAWAY's last id,
    /// written whole by the client (its END_STREAM write succeeded), never reached the server's script.
    ///
    /// The server must go on reading: frames on a refused stream are discarded, and their DATA still counts
    /// against (and is credited back to) the connection's window (RFC 9113 §6.8, §6.9).
    @Test func framesOnAStreamRefusedByItsGoAwayNeitherStallNorStarveTheConnection() async throws {
        let server = try await LoopbackHTTP2Server.start { request in
            guard request.path == "/goaway" else { return .respond(body: Array("first".utf8)) }
            // GOAWAY with this stream (3) as the last: stream 1, still uploading, is below it and must be served.
            return .steps([
                .goAway(.noError, processThis: true),
                .head(status: 200, headers: [], contentLength: 2), .data(Array("ok".utf8), end: true),
            ])
        }
        let client = try await RawHTTP2Client.connect(port: server.port)
        defer { client.close() }
        func request(_ method: String, _ path: String) -> [(String, String)] {
            [(":method", method), (":scheme", "https"), (":path", path), (":authority", "127.0.0.1")]
        }

        // Stream 1: a POST whose body has begun; stream 3: a GET that makes the server send GOAWAY (last stream 3).
        client.send(
            RawHTTP2Client.preface + RawHTTP2Frame.settings()
                + RawHTTP2Frame.headers(1, request("POST", "/first"), endStream: false)
                + RawHTTP2Frame.data(1, Array("a".utf8), endStream: false)
                + RawHTTP2Frame.headers(3, request("GET", "/goaway"), endStream: true))
        try await client.waitFor("the server's GOAWAY") { $0.contains { $0.type == 0x7 } }

        // Stream 5, opened before the client read the GOAWAY: its HEADERS, 48 000 bytes of DATA (beyond half of the
        // server's 64 KiB connection window, so the server must credit them back) and a reset; then the end of
        // stream 1's body and a PING. All in one TLS record: the server reads them at once, and no later byte
        // comes to wake it up.
        let chunk = [UInt8](repeating: 0x61, count: 16_000)
        var late = RawHTTP2Frame.headers(5, request("POST", "/late"), endStream: false)
        for _ in 0..<3 { late += RawHTTP2Frame.data(5, chunk, endStream: false) }
        late += [0, 0, 4, 0x3, 0, 0, 0, 0, 5, 0, 0, 0, 0x8]  // RST_STREAM 5, CANCEL
        late += RawHTTP2Frame.data(1, Array("b".utf8), endStream: true)
        late += RawHTTP2Frame.ping(42)
        client.send(late)

        // The server read past the refused stream's frames: stream 1 (below the last stream id) is answered, the
        // PING acknowledged, and the connection's window given back.
        try await client.waitFor("the answer on stream 1, the PING's acknowledgement and a connection WINDOW_UPDATE", timeout: .seconds(60)) { frames in
            frames.contains { $0.type == 0x0 && $0.streamID == 1 && $0.flags & 0x1 != 0 }
                && frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 }
                && frames.contains { $0.type == 0x8 && $0.streamID == 0 }
        }
        #expect(server.counts.requests == 2)
        #expect(server.counts.pings == 1)
        try await server.shutdown()
    }
}

/// A raw HTTP/2 client over ShopKit's TLS (ALPN h2): it writes bytes as given (each call one TLS record) and
/// keeps the frames it receives.
private final class RawHTTP2Client: Sendable {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    typealias Frame = (type: UInt8, flags: UInt8, streamID: UInt32, payload: ArraySlice<UInt8>)

    private let channel: any Channel
    private let received: WaitableState<[UInt8]>

    private init(channel: any Channel, received: WaitableState<[UInt8]>) {
        self.channel = channel
        self.received = received
    }

    static func connect(port: Int) async throws -> RawHTTP2Client {
        var configuration = loopbackClientTLS
        configuration.applicationProtocols = ["h2"]
        let tls = try TLSClientContext(configuration: configuration)
        let received = WaitableState<[UInt8]>([])
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(tls.makeClientHandler(host: "127.0.0.1", port: port))
                    try channel.pipeline.syncOperations.addHandler(Recorder(received: received))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawHTTP2Client(channel: channel, received: received)
    }

    func send(_ bytes: [UInt8]) {
        channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil)
    }

    /// Waits until the frames received so far satisfy `predicate`.
    func waitFor(
        _ what: String, timeout: Duration = TestDeadline.wait, _ predicate: @escaping @Sendable ([Frame]) -> Bool
    ) async throws {
        try await received.wait(
            until: { predicate(RawHTTP2Frame.parse($0[...])) }, for: what, timeout: timeout,
            describe: { RawHTTP2Frame.parse($0[...]).map { "type \($0.type) stream \($0.streamID)" }.joined(separator: ", ") })
    }

    func close() {
        channel.close(promise: nil)
    }

    private final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let received: WaitableState<[UInt8]>

        init(received: WaitableState<[UInt8]>) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(unwrapInboundIn(data).readableBytesView)
            received.withLockedValue { $0 += bytes }
        }
    }
}

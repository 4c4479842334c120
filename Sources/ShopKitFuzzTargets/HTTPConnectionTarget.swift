import NIOCore
import NIOEmbedded
import NIOHTTP1
import ShopKitHTTPS
import ShopKitTLS

/// One HTTP/1.1 connection carrying several exchanges, one after another, facing a server byte stream the fuzzer
/// chooses, cut into reads where it chooses: the pipeline a real connection has after its handshake
/// (NIO's request encoder and ``HTTP1ConnectionHandler``, which frames responses itself) on an `EmbeddedChannel`.
/// Like the pool, the harness starts the next exchange inside the release of the previous one, when that release
/// says the connection is reusable.
///
/// Input: one control byte, then the server's bytes.
/// - bits 0–1: how many exchanges want the connection (1–4);
/// - bits 2–6: the size of the reads the bytes arrive in (1–31 bytes; 0: all at once);
/// - bit 7: the connection ends without TLS close_notify instead of a clean close.
///
/// Invariants:
/// - each started exchange is released exactly once, and its head answered exactly once (a second answer stops
///   the process); a delivered head is followed by the end of its body stream (once the channel has closed,
///   nothing is left without an outcome);
/// - a response part reaches an exchange only from a read that began after the exchange started (a response in
///   the read that ended the previous one never reaches the next request);
/// - the connection is released as reusable only once a read is fully processed, never while bytes of that read
///   are still being decoded;
/// - exchanges start in order, each only after the previous one was released as reusable.
package enum HTTPConnectionTarget {
    /// What one exchange saw.
    package struct ExchangeOutcome: Equatable, Sendable {
        /// The read (1-based count of inbound writes) during which the exchange started; 0 before the first.
        package var startedInRead: Int
        /// The reads in which the exchange received its response head (a head is handed over at the end of the
        /// read that brought it; its body can only follow it).
        package var deliveredInReads: [Int] = []
        /// Each release, with whether the connection was reusable.
        package var releases: [Bool] = []
        /// Whether a release came while a read was being decoded.
        package var releasedInsideRead = false
        package var headAnswered = false
        package var headDelivered = false
        package var bodyEnded = false
    }

    static func run(_ bytes: [UInt8]) {
        guard let outcomes = outcome(bytes) else { return }
        for (index, exchange) in outcomes.enumerated() {
            let name = "exchange \(index + 1)"
            FuzzCheck.require(exchange.releases.count == 1, "\(name) was released \(exchange.releases.count) times")
            FuzzCheck.require(exchange.headAnswered, "\(name)'s response head was never answered")
            if exchange.headDelivered { FuzzCheck.require(exchange.bodyEnded, "\(name)'s body stream never ended") }
            FuzzCheck.require(
                exchange.deliveredInReads.allSatisfy { $0 > exchange.startedInRead },
                "\(name) got a response part from a read that began before it started")
            if exchange.releases == [true] {
                FuzzCheck.require(!exchange.releasedInsideRead, "\(name) was released as reusable inside a read")
                FuzzCheck.require(exchange.headDelivered, "\(name) was released as reusable without a response")
            }
            if index > 0 {
                FuzzCheck.require(outcomes[index - 1].releases == [true], "\(name) started on a connection not reusable")
            }
        }
    }

    /// Runs one input (nil for an empty one, which has no control byte); one outcome per started exchange.
    package static func outcome(_ bytes: [UInt8]) -> [ExchangeOutcome]? {
        guard let control = bytes.first else { return nil }
        let wanted = Int(control & 3) + 1
        let readSize = Int(control >> 2) & 31
        let unclean = control & 0x80 != 0
        let response = bytes.dropFirst()

        let reads = ReadTracker()
        let connection = EmbeddedHTTP1Connection(first: reads)
        let (channel, handler, loop) = (connection.channel, connection.handler, connection.loop)

        let outcomes = NIOLoopBoundBox<[ExchangeOutcome]>([], eventLoop: loop)
        let boundHandler = NIOLoopBound(handler, eventLoop: loop)
        let boundChannel = NIOLoopBound(channel, eventLoop: loop)
        let boundReads = NIOLoopBound(reads, eventLoop: loop)

        // Starts exchange `index` (0-based) and writes its request, as the pool's hand-over does.
        @Sendable func start(_ index: Int) {
            let reads = boundReads.value
            outcomes.value.append(ExchangeOutcome(startedInRead: reads.count))
            let id = HTTP1ConnectionStateMachine.RequestID(raw: index + 1)
            let headPromise = loop.makePromise(of: HTTPResponseHead.self)
            headPromise.futureResult.whenComplete { result in
                outcomes.value[index].headAnswered = true
                if case .success = result {
                    outcomes.value[index].headDelivered = true
                    outcomes.value[index].deliveredInReads.append(boundReads.value.count)
                }
            }
            let exchange = ExchangeRecorder(
                id: id,
                limits: .init(deadline: loop.now + .seconds(60), idleReadTimeout: .seconds(30), maxResponseBodyBytes: 8_192),
                head: headPromise,
                released: { reusable in
                    outcomes.value[index].releases.append(reusable)
                    if boundReads.value.inside { outcomes.value[index].releasedInsideRead = true }
                    if reusable && index + 1 < wanted { start(index + 1) }
                },
                bodyEnded: { outcomes.value[index].bodyEnded = true })
            boundHandler.value.start(exchange, id: id)
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/fuzz/\(index + 1)")
            head.headers.add(name: "Host", value: "127.0.0.1")
            let channel = boundChannel.value
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            let written = loop.makePromise(of: Void.self)
            written.futureResult.whenSuccess { boundHandler.value.requestSent(id) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: written)
        }
        start(0)
        loop.run()
        connection.feed(response, readSize: readSize)
        connection.finish(unclean: unclean)
        return outcomes.value
    }

    /// First in the pipeline: numbers the reads, and says whether one is being decoded.
    private final class ReadTracker: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer

        /// Reads so far (the current one included).
        var count = 0
        /// Inside `channelRead`, before `channelReadComplete`.
        var inside = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            count += 1
            inside = true
            context.fireChannelRead(data)
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            inside = false  // the read's bytes were all decoded; what happens now is the read's completion
            context.fireChannelReadComplete()
        }
    }
}

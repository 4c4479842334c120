import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ShopKitTLS

/// A TLS server on 127.0.0.1 (port 0) that speaks no protocol of its own: every read is handed, with all the
/// plaintext the connection received so far, to a script that answers with raw bytes (each run its own TLS
/// record), closes, or trickles bytes. For hostile-peer probes that must answer at points a request-level server
/// cannot: after the request head but before its body, in the middle of an HTTP/2 upload, on streams never opened.
package final class RawTLSPeer: Sendable {
    /// One connection as the script sees it; `cursor`, `phase` and `streams` are the script's own.
    package struct Connection: Sendable {
        /// 1-based, in accept order.
        package let number: Int
        /// Every plaintext byte received so far.
        package var received: [UInt8] = []
        /// Where the script got to in `received`.
        package var cursor = 0
        /// The script's own state.
        package var phase = 0
        /// The script's own list (e.g. HTTP/2 stream ids seen).
        package var streams: [UInt32] = []
        /// The script's own notes (e.g. the request lines it parsed).
        package var notes: [String] = []
        /// The peer closed, or the connection was closed.
        package var closed = false
    }

    /// What the peer does.
    package indirect enum Action: Sendable {
        /// Each run its own TLS record, flushed together.
        case send([[UInt8]])
        /// Close: with `notify`, close_notify first; without, a bare FIN under TLS.
        case close(notify: Bool)
        /// Send `bytes` one byte at a time, one every `every`, while the connection is open.
        case trickle([UInt8], every: TimeAmount)
        /// Carry out `actions` after `delay`.
        case after(TimeAmount, [Action])
    }

    /// Called on every read (with the connection's state, which it may change); returns what to do.
    package typealias Script = @Sendable (inout Connection) -> [Action]

    private let channel: any Channel
    private let state: WaitableState<[Int: Connection]>

    /// The port (127.0.0.1).
    package var port: Int { channel.localAddress!.port! }

    private init(channel: any Channel, state: WaitableState<[Int: Connection]>) {
        self.channel = channel
        self.state = state
    }

    /// Starts a peer behind `tlsContext` (whose ALPN decides HTTP/1.1 or h2).
    package static func start(
        tlsContext: TLSServerContext, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        script: @escaping Script
    ) async throws -> RawTLSPeer {
        let state = WaitableState<[Int: Connection]>([:])
        let counter = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                let number = counter.withLockedValue { $0 += 1; return $0 }
                state.withLockedValue { $0[number] = Connection(number: number) }
                child.closeFuture.whenComplete { _ in state.withLockedValue { $0[number]?.closed = true } }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(RawCloser())
                    try child.pipeline.syncOperations.addHandler(tlsContext.makeHandler())
                    try child.pipeline.syncOperations.addHandler(PeerHandler(number: number, state: state, script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return RawTLSPeer(channel: channel, state: state)
    }

    /// Every connection's state.
    package var connections: [Int: Connection] { state.withLockedValue { $0 } }

    /// Waits until `predicate` holds for the connections.
    package func waitUntil(
        _ what: String, timeout: Duration = TestDeadline.wait, _ predicate: @escaping @Sendable ([Int: Connection]) -> Bool
    ) async throws {
        try await state.wait(
            until: predicate, for: what, timeout: timeout,
            describe: { "\($0.mapValues { (received: $0.received.count, phase: $0.phase, closed: $0.closed) })" })
    }

    /// Stops listening and closes every connection.
    package func stop() async {
        try? await channel.close()
    }

    private final class PeerHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let number: Int
        let state: WaitableState<[Int: Connection]>
        let script: Script

        init(number: Int, state: WaitableState<[Int: Connection]>, script: @escaping Script) {
            self.number = number
            self.state = state
            self.script = script
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(unwrapInboundIn(data).readableBytesView)
            let actions = state.withLockedValue { connections -> [Action] in
                guard var connection = connections[number] else { return [] }
                connection.received += bytes
                let actions = script(&connection)
                connections[number] = connection
                return actions
            }
            Self.perform(actions, channel: context.channel)
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLockedValue { $0[number]?.closed = true }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        static func perform(_ actions: [Action], channel: any Channel) {
            for action in actions {
                switch action {
                case .send(let records):
                    for record in records {
                        channel.write(channel.allocator.buffer(bytes: record), promise: nil)
                    }
                    channel.flush()
                case .close(let notify):
                    if notify { channel.close(promise: nil) } else { RawCloser.close(channel) }
                case .trickle(let bytes, let every):
                    trickle(bytes[...], every: every, channel: channel)
                case .after(let delay, let later):
                    channel.eventLoop.scheduleTask(in: delay) { perform(later, channel: channel) }
                }
            }
        }

        static func trickle(_ bytes: ArraySlice<UInt8>, every: TimeAmount, channel: any Channel) {
            guard let first = bytes.first, channel.isActive else { return }
            channel.writeAndFlush(channel.allocator.buffer(bytes: [first]), promise: nil)
            let rest = bytes.dropFirst()
            channel.eventLoop.scheduleTask(in: every) { trickle(rest, every: every, channel: channel) }
        }
    }
}

import NIOCore
import NIOPosix

/// A TCP relay on 127.0.0.1 in front of a loopback server, which can hold the server's bytes: the way to stop a
/// TLS handshake between the ClientHello and the server's first flight, deterministically.
///
/// Each accepted connection gets its own connection to the upstream port. Client bytes are forwarded at once.
/// On the connections whose number (1-based, in accept order) is in `held`, the server's bytes are held from the
/// first one on: the relay says so (``waitUntilHolding(_:)``) and forwards them, with everything after, only when
/// the test calls ``release(_:)``. A server that closes meanwhile has its close forwarded after the held bytes.
package final class HoldingRelay: Sendable {
    fileprivate struct State: Sendable {
        var accepted = 0
        /// Connections whose server bytes are being held now.
        var holding: Set<Int> = []
        /// How to release each held connection (runs on its event loop).
        var releases: [Int: @Sendable () -> Void] = [:]
        /// Connections released before their server's first byte came: nothing is held on them.
        var released: Set<Int> = []
        /// Connections whose upstream side the server closed.
        var serverClosed: Set<Int> = []
        var channels: [any Channel] = []
    }

    /// The port to connect to instead of the server's.
    package let port: Int
    private let channel: any Channel
    private let state: WaitableState<State>

    private init(port: Int, channel: any Channel, state: WaitableState<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Starts a relay to `upstreamPort` on 127.0.0.1, holding the server's bytes of the connections numbered in
    /// `held` (the first one by default).
    package static func start(
        to upstreamPort: Int, holding held: Set<Int> = [1],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> HoldingRelay {
        let state = WaitableState(State())
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Nothing is read from the client until its upstream connection is open.
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { client in
                let number = state.withLockedValue { state in
                    state.accepted += 1
                    state.channels.append(client)
                    return state.accepted
                }
                return ClientBootstrap(group: client.eventLoop)
                    .connectTimeout(.seconds(60))  // a loaded machine can hold a loopback connect past NIO's 10 s
                    .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .channelInitializer { upstream in
                        upstream.eventLoop.makeCompletedFuture {
                            try upstream.pipeline.syncOperations.addHandler(
                                ServerBytes(client: client, number: number, holds: held.contains(number), state: state))
                        }
                    }
                    .connect(host: "127.0.0.1", port: upstreamPort)
                    .flatMap { upstream in
                        state.withLockedValue { $0.channels.append(upstream) }
                        do {
                            try client.pipeline.syncOperations.addHandler(ClientBytes(upstream: upstream))
                        } catch {
                            return client.eventLoop.makeFailedFuture(error)
                        }
                        return client.setOption(.autoRead, value: true)
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return HoldingRelay(port: channel.localAddress!.port!, channel: channel, state: state)
    }

    /// Connections accepted so far.
    package var accepted: Int { state.withLockedValue { $0.accepted } }

    /// Returns once the relay holds the server's first bytes on connection `number`; throws ``WaitEnded`` past
    /// `timeout` or when the waiting task is cancelled (a test's time limit).
    package func waitUntilHolding(_ number: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await state.wait(
            until: { $0.holding.contains(number) }, for: "the relay to hold the server's first bytes on connection \(number)",
            timeout: timeout, describe: { "holding \($0.holding.sorted()), server closed \($0.serverClosed.sorted())" })
    }

    /// Returns once the server closed its side of connection `number`; throws ``WaitEnded`` past `timeout` or when
    /// the waiting task is cancelled. The
    /// relay passes a client's close on as a half-close, so a server that closes on end of input has by then read
    /// everything the client sent on that connection.
    package func waitUntilServerClosed(_ number: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await state.wait(
            until: { $0.serverClosed.contains(number) }, for: "the server to close connection \(number)",
            timeout: timeout, describe: { "holding \($0.holding.sorted()), server closed \($0.serverClosed.sorted())" })
    }

    /// Forwards what the server sent on connection `number`, and from then on everything it sends.
    package func release(_ number: Int) {
        let release = state.withLockedValue { state -> (@Sendable () -> Void)? in
            state.holding.remove(number)
            state.released.insert(number)
            return state.releases.removeValue(forKey: number)
        }
        release?()
    }

    /// Stops listening and closes every connection. Connections still held are let go unreleased: their release
    /// closures (which hold the handlers, which hold this state) are dropped, so nothing is left in a cycle.
    package func stop() async {
        try? await channel.close()
        let channels = state.withLockedValue { state in
            defer {
                state.channels = []
                state.releases = [:]
            }
            return state.channels
        }
        for channel in channels { try? await channel.close() }
    }
}

/// Client to server: forwarded at once; the client's close is passed on as a half-close (end of input for the
/// server), so the upstream connection ends when the server, having read everything, closes it.
private final class ClientBytes: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let upstream: any Channel

    init(upstream: any Channel) { self.upstream = upstream }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        upstream.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        upstream.close(mode: .output, promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Server to client: held from the first byte when the connection is held, until the relay releases it.
private final class ServerBytes: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: any Channel
    private let number: Int
    private let state: WaitableState<HoldingRelay.State>
    /// The bytes held, in order; nil once released (or when the connection is not held).
    private var held: [ByteBuffer]?
    private var closedWhileHeld = false

    init(client: any Channel, number: Int, holds: Bool, state: WaitableState<HoldingRelay.State>) {
        self.client = client
        self.number = number
        self.state = state
        self.held = holds ? [] : nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard held != nil else {
            client.writeAndFlush(bytes, promise: nil)
            return
        }
        held!.append(bytes)
        guard held!.count == 1 else { return }
        let loop = context.eventLoop
        let this = NIOLoopBound(self, eventLoop: loop)
        let number = self.number
        let releasedAlready = state.withLockedValue { state -> Bool in
            if state.released.contains(number) { return true }
            state.holding.insert(number)
            state.releases[number] = { loop.execute { this.value.release() } }
            return false
        }
        if releasedAlready { release() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let number = self.number
        state.withLockedValue { _ = $0.serverClosed.insert(number) }
        if held != nil { closedWhileHeld = true } else { client.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Forwards the held bytes, then everything that follows (and a close that came meanwhile).
    private func release() {
        guard let bytes = held else { return }
        held = nil
        for buffer in bytes { client.write(buffer, promise: nil) }
        client.flush()
        if closedWhileHeld { client.close(promise: nil) }
    }
}

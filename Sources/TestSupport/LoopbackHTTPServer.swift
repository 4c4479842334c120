import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A scripted HTTP/1.1 server on 127.0.0.1 (port 0) for transport tests.
///
/// Each request, once fully received, is passed to the script, whose ``Behaviour`` says what to do: answer
/// (keep-alive, chunked or closing), send raw bytes, close without answering, or never answer. The server
/// counts accepted connections, requests and closed connections, and can wait for a count. The
/// `extraHandlers` hook adds server-side handlers first in each child pipeline (the TLS server handler).
package final class LoopbackHTTPServer: Sendable {
    /// One received request.
    package struct Request: Sendable {
        /// The method, e.g. `GET`.
        package let method: String
        /// The request target, e.g. `/v1/items?x=1`.
        package let uri: String
        /// The header fields as received.
        package let headers: [(name: String, value: String)]
        /// The body bytes.
        package let body: [UInt8]
        /// The 1-based number of the connection it arrived on, in accept order.
        package let connection: Int
        /// The 1-based position of the request on its connection.
        package let indexOnConnection: Int

        /// The first value of a header field (case-insensitive).
        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What the server does with a request.
    package enum Behaviour: Sendable {
        /// An HTTP/1.1 response; `chunked` sends the body in chunks, `close` adds `Connection: close` and closes.
        case respond(status: Int, headers: [(String, String)], body: [UInt8], chunked: Bool, close: Bool)
        /// These bytes exactly, then close when `close`.
        case raw([UInt8], close: Bool)
        /// Each run of bytes written on its own (behind TLS: each its own TLS record, so the test chooses where
        /// records are cut), all flushed together at the end (so they usually arrive in one read), then close
        /// when `close`.
        case records([[UInt8]], close: Bool)
        /// Close the connection without a response byte (a connection that went stale).
        case closeWithoutResponse
        /// Never answer and keep the connection open (for timeouts).
        case neverRespond
        /// Answer `200 OK`, kept alive, only when ``LoopbackHTTPServer/releaseHeld(body:)`` is called.
        case hold
        /// A script of its own for this request, carried out step by step on the connection's event loop (see
        /// ``Step``); the connection is idle again after the last step unless a step closed it.
        case steps([Step])

        /// `200 OK` with `body`, kept alive.
        package static func ok(_ body: [UInt8] = Array("ok".utf8)) -> Behaviour {
            .respond(status: 200, headers: [], body: body, chunked: false, close: false)
        }
    }

    /// One step of ``Behaviour/steps(_:)``.
    package enum Step: Sendable {
        /// Each run of bytes written on its own (behind TLS: its own record), all flushed together.
        case send([[UInt8]])
        /// Wait this long before the next step (jitter, a slow body).
        case delay(TimeAmount)
        /// Close the connection: with `notify`, through every handler (behind TLS: close_notify first); without,
        /// the TCP socket alone, under the TLS handler (a FIN with no close_notify, as a crash or an attacker
        /// would send).
        case close(notify: Bool)
    }

    /// The counts the server keeps.
    package struct Counts: Sendable, Equatable {
        /// Connections accepted.
        package var accepted = 0
        /// Requests fully received.
        package var requests = 0
        /// Connections closed (by either side).
        package var closed = 0
        /// Requests held (``Behaviour/hold``) and not released yet.
        package var held = 0
    }

    /// The script: what to do for each request.
    package typealias Script = @Sendable (Request) -> Behaviour
    /// Adds handlers first in a child channel's pipeline; the server's HTTP handlers follow.
    package typealias ExtraHandlers = @Sendable (any Channel) -> EventLoopFuture<Void>

    fileprivate struct State {
        var counts = Counts()
        var children: [Int: (channel: any Channel, busy: Bool)] = [:]
        var requests: [Request] = []
        var held: [@Sendable ([UInt8]) -> Void] = []
    }

    private let channel: any Channel
    private let state: WaitableState<State>

    /// The port the server listens on (127.0.0.1).
    package var port: Int { channel.localAddress!.port! }

    private init(channel: any Channel, state: WaitableState<State>) {
        self.channel = channel
        self.state = state
    }

    /// Starts a server on 127.0.0.1, port 0.
    package static func start(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, extraHandlers: ExtraHandlers? = nil,
        script: @escaping Script
    ) async throws -> LoopbackHTTPServer {
        let state = WaitableState(State())
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                let number = state.withLockedValue { state in
                    state.counts.accepted += 1
                    state.children[state.counts.accepted] = (child, false)
                    return state.counts.accepted
                }
                child.closeFuture.whenComplete { _ in
                    state.withLockedValue {
                        $0.counts.closed += 1
                        $0.children[number] = nil
                    }
                }
                let extra = extraHandlers?(child) ?? child.eventLoop.makeSucceededVoidFuture()
                return extra.flatMapThrowing {
                    try child.pipeline.syncOperations.addHandler(RawCloser(), position: .first)
                    try child.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
                    try child.pipeline.syncOperations.addHandler(
                        ScriptedHTTPHandler(connection: number, state: state, script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackHTTPServer(channel: channel, state: state)
    }

    /// The current counts.
    package var counts: Counts { state.withLockedValue { $0.counts } }

    /// Every request received so far, in order.
    package var requests: [Request] { state.withLockedValue { $0.requests } }

    /// Returns once `predicate` holds for the counts (no polling, no sleeping); throws ``WaitEnded``, with `what`
    /// and the counts seen last, past `timeout` or when the waiting task is cancelled (a test's time limit).
    package func waitUntil(
        _ what: String = "the server's counts to reach a value", timeout: Duration = TestDeadline.wait,
        _ predicate: @escaping @Sendable (Counts) -> Bool
    ) async throws {
        try await state.wait(until: { predicate($0.counts) }, for: what, timeout: timeout, describe: { "\($0.counts)" })
    }

    /// Closes every connection that is not in the middle of a request, as a server's idle timeout would.
    package func closeIdleConnections() async {
        let idle = state.withLockedValue { $0.children.values.filter { !$0.busy }.map(\.channel) }
        for channel in idle { try? await channel.close() }
    }

    /// Writes `bytes` on every connection that is not in the middle of a request (bytes nobody asked for, on a
    /// connection the client holds idle in its pool); returns how many connections they went to.
    @discardableResult
    package func writeToIdleConnections(_ bytes: [UInt8]) -> Int {
        let idle = state.withLockedValue { $0.children.values.filter { !$0.busy }.map(\.channel) }
        for channel in idle { channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil) }
        return idle.count
    }

    /// Answers every held request with `200 OK` and `body`.
    package func releaseHeld(body: [UInt8] = Array("released".utf8)) {
        let held = state.withLockedValue { state -> [@Sendable ([UInt8]) -> Void] in
            defer {
                state.held = []
                state.counts.held = 0
            }
            return state.held
        }
        for respond in held { respond(body) }
    }

    /// Stops listening and closes every connection.
    package func stop() async {
        try? await channel.close()
        let children = state.withLockedValue { $0.children.values.map(\.channel) }
        for child in children { try? await child.close() }
        // A request held after the test's last release keeps its handler, which keeps this state: a cycle that
        // outlives the server (LeakSanitizer reports it) unless the held answers are dropped.
        state.withLockedValue { $0.held = [] }
    }

    fileprivate static func record(_ request: Request, busy: Bool, state: WaitableState<State>) {
        state.withLockedValue { state in
            state.requests.append(request)
            state.counts.requests += 1
            state.children[request.connection]?.busy = busy
        }
    }

    fileprivate static func setBusy(_ connection: Int, _ busy: Bool, state: WaitableState<State>) {
        state.withLockedValue { $0.children[connection]?.busy = busy }
    }

    /// Collects requests and carries out the script's behaviour, writing raw bytes.
    private final class ScriptedHTTPHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = ByteBuffer

        private let connection: Int
        private let state: WaitableState<State>
        private let script: Script
        private var head: HTTPRequestHead?
        private var body: [UInt8] = []
        private var index = 0
        private var silent = false

        init(connection: Int, state: WaitableState<State>, script: @escaping Script) {
            self.connection = connection
            self.state = state
            self.script = script
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = []
                LoopbackHTTPServer.setBusy(connection, true, state: state)
            case .body(let buffer):
                body += buffer.readableBytesView
            case .end:
                guard let head, !silent else { return }
                index += 1
                let request = Request(
                    method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) },
                    body: body, connection: connection, indexOnConnection: index)
                let behaviour = script(request)
                var busy = false
                if case .neverRespond = behaviour { busy = true }
                if case .hold = behaviour { busy = true }
                if case .steps = behaviour { busy = true }
                LoopbackHTTPServer.record(request, busy: busy, state: state)
                perform(behaviour, context: context)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func perform(_ behaviour: Behaviour, context: ChannelHandlerContext) {
            switch behaviour {
            case .respond(let status, let headers, let body, let chunked, let close):
                var text = "HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n"
                for (name, value) in headers { text += "\(name): \(value)\r\n" }
                text += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(body.count)\r\n"
                if close { text += "Connection: close\r\n" }
                text += "\r\n"
                var buffer = context.channel.allocator.buffer(string: text)
                if chunked {
                    var offset = 0
                    while offset < body.count {
                        let end = min(offset + 4096, body.count)
                        buffer.writeString(String(end - offset, radix: 16) + "\r\n")
                        buffer.writeBytes(body[offset..<end])
                        buffer.writeString("\r\n")
                        offset = end
                    }
                    buffer.writeString("0\r\n\r\n")
                } else {
                    buffer.writeBytes(body)
                }
                write(buffer, close: close, context: context)
            case .raw(let bytes, let close):
                write(context.channel.allocator.buffer(bytes: bytes), close: close, context: context)
            case .records(let records, let close):
                for record in records.dropLast() {
                    context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: record)), promise: nil)
                }
                write(context.channel.allocator.buffer(bytes: records.last ?? []), close: close, context: context)
            case .steps(let steps):
                run(steps[...], context: context)
            case .closeWithoutResponse:
                silent = true
                context.close(promise: nil)
            case .neverRespond:
                silent = true
            case .hold:
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                let loop = context.eventLoop
                state.withLockedValue {
                    $0.held.append({ body in
                        loop.execute {
                            let (handler, context) = bound.value
                            handler.perform(.ok(body), context: context)
                        }
                    })
                    $0.counts.held += 1
                }
            }
        }

        /// Carries out `steps` in order; a delay goes on in a task scheduled on the connection's loop.
        private func run(_ steps: ArraySlice<Step>, context: ChannelHandlerContext) {
            var steps = steps
            while let step = steps.popFirst() {
                switch step {
                case .send(let records):
                    for record in records {
                        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: record)), promise: nil)
                    }
                    context.flush()
                case .delay(let amount):
                    let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                    let rest = steps
                    context.eventLoop.scheduleTask(in: amount) {
                        let (handler, context) = bound.value
                        handler.run(rest, context: context)
                    }
                    return
                case .close(let notify):
                    silent = true
                    if notify {
                        context.close(promise: nil)
                    } else {
                        RawCloser.close(context.channel)
                    }
                    return
                }
            }
            LoopbackHTTPServer.setBusy(connection, false, state: state)
        }

        private func write(_ buffer: ByteBuffer, close: Bool, context: ChannelHandlerContext) {
            let connection = self.connection
            let state = self.state
            let future = context.writeAndFlush(wrapOutboundOut(buffer))
            if close {
                let channel = context.channel
                future.whenComplete { _ in channel.close(promise: nil) }
            } else {
                LoopbackHTTPServer.setBusy(connection, false, state: state)
            }
        }
    }
}

/// First in a server connection's pipeline: closes the socket under every other handler, so a TLS handler after
/// it sends no close_notify (a FIN alone).
package final class RawCloser: ChannelOutboundHandler, Sendable {
    package typealias OutboundIn = ByteBuffer

    package init() {}

    /// Closes `channel`'s socket without passing the close through the handlers after a ``RawCloser`` (or through
    /// every handler, when the pipeline has none). Call on the channel's event loop.
    package static func close(_ channel: any Channel) {
        if let context = try? channel.pipeline.syncOperations.context(handlerType: RawCloser.self) {
            context.close(promise: nil)
        } else {
            channel.close(promise: nil)
        }
    }
}

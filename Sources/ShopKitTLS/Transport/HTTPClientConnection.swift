import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime

/// One verified HTTP/1.1 connection: a channel whose pipeline is security handlers, the HTTP codec, and
/// ``HTTPClientConnectionHandler``. Runs one exchange at a time; the pool decides who uses it.
final class HTTPClientConnection: Sendable {
    /// The channel.
    let channel: any Channel
    /// The handler, only touched on the channel's event loop.
    private let handler: NIOLoopBound<HTTPClientConnectionHandler>

    private init(channel: any Channel, handler: HTTPClientConnectionHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// What sending a request produced: the head, the streamed body, and when the connection is free again.
    struct Exchange: Sendable {
        let head: HTTPResponseHead
        /// The body chunks, fed by the handler on the event loop.
        let body: BodyStream
        /// Identifies the exchange (for ``HTTPClientConnection/cancel(_:)``).
        let done: EventLoopFuture<Bool>
        /// Succeeds with whether the connection may be reused once the response is complete and the request sent.
        let reusable: EventLoopFuture<Bool>
    }

    /// Limits and deadline for one exchange.
    struct ExchangeLimits: Sendable {
        let deadline: NIODeadline
        let idleReadTimeout: TimeAmount
        let maxBodySize: Int
    }

    /// Sends the request head and body, and waits for the response head.
    ///
    /// `finished` runs exactly once per call, on the event loop when the exchange is over (response complete
    /// and request written), with whether the connection may be reused; the pool gets the connection back
    /// there, before the body stream reports its end. Bodiless requests (the common case) are written,
    /// flushed and answered in one trip to the event loop, with no future awaited from the task.
    ///
    /// - Throws: ``ExchangeFailure`` for transport failures; the caller's body errors as they are;
    ///   `CancellationError` when the task is cancelled (the connection is then closed).
    func execute(
        head: HTTPRequestHead, body: HTTPBody?, limits: ExchangeLimits, finished: @escaping @Sendable (Bool) -> Void
    ) async throws -> Exchange {
        let loop = channel.eventLoop
        let stream = BodyStream()
        let handler = self.handler
        stream.onDemand = { loop.execute { handler.value.resumeReading() } }
        let headPromise = loop.makePromise(of: HTTPResponseHead.self)
        let done = loop.makePromise(of: Bool.self)
        let written = loop.makePromise(of: Void.self)
        let reusable = loop.makePromise(of: Bool.self)
        let exchange = ResponseExchange(
            head: headPromise, body: stream, done: done,
            requestKeepAlive: !head.headers[canonicalForm: "connection"].contains {
                $0.utf8.elementsEqual("close".utf8) || $0.lowercased() == "close"
            },
            deadline: limits.deadline, idleReadTimeout: limits.idleReadTimeout, maxBodySize: limits.maxBodySize,
            isHead: head.method == .HEAD)
        let channel = self.channel
        /// Runs on the loop: wires completion (callbacks registered on the loop run there, no hops) and starts.
        @Sendable func start() {
            // Nested callbacks rather than and/map/recover: no intermediate futures per request.
            written.futureResult.whenComplete { writeResult in
                let requestWritten: Bool
                if case .success = writeResult { requestWritten = true } else { requestWritten = false }
                // The idle-read clock starts once the request is out, not while it is being uploaded.
                if requestWritten { handler.value.requestSent(done.futureResult) }
                done.futureResult.whenComplete { doneResult in
                    let value = requestWritten && ((try? doneResult.get()) ?? false)
                    finished(value)
                    reusable.succeed(value)
                }
            }
            handler.value.start(exchange)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
        }

        return try await withTaskCancellationHandler {
            let responseHead: HTTPResponseHead
            if let body {
                loop.execute { start() }
                switch await Self.writeBody(body, to: channel, end: written, racing: done.futureResult) {
                case .written:
                    break
                case .bodyFailed(let error):
                    written.fail(error)
                    loop.execute { handler.value.cancel(done.futureResult) }
                    _ = try? await headPromise.futureResult.get()
                    throw error
                case .writeFailed(let error):
                    // The connection failed while writing: the handler reports why (or the server answered early).
                    written.fail(error)
                    channel.close(promise: nil)
                case .exchangeEnded:
                    // A deadline, a closed connection, cancellation or an early complete response ended the
                    // exchange, maybe while the caller's body stream had not finished (it may never): give up on
                    // the body. A connection with half a request on it is closed; one whose request end was
                    // written just before (`written` succeeded first, the failure is then ignored) is kept.
                    written.fail(TLSError.connectionClosed)
                    written.futureResult.whenFailure { _ in channel.close(promise: nil) }
                }
                responseHead = try await headPromise.futureResult.get()
            } else {
                responseHead = try await withCheckedThrowingContinuation { waiting in
                    loop.execute {
                        headPromise.futureResult.whenComplete { waiting.resume(with: $0) }
                        start()
                        // A request that cannot be written leaves the connection in an unknown state.
                        written.futureResult.whenFailure { _ in channel.close(promise: nil) }
                        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: written)
                    }
                }
            }
            try Task.checkCancellation()
            return Exchange(
                head: responseHead, body: stream, done: done.futureResult,
                reusable: reusable.futureResult)
        } onCancel: {
            loop.execute { handler.value.cancel(done.futureResult) }
        }
    }

    /// Abandons the exchange identified by `done`, if it is still running: the connection is closed.
    func cancel(_ done: EventLoopFuture<Bool>) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.cancel(done) }
    }

    /// Closes the connection.
    func close() {
        channel.close(promise: nil)
    }

    private struct BodyError: Error {
        let underlying: any Error
    }

    /// How writing a request body ended.
    enum BodyOutcome: Sendable {
        /// The body and the request's end were written.
        case written
        /// The caller's body stream threw this error.
        case bodyFailed(any Error)
        /// Writing to the connection failed.
        case writeFailed(any Error)
        /// The exchange ended first (failed on a deadline, a close or cancellation, or the response was complete).
        case exchangeEnded
    }

    /// Writes `body` and the request's end (completing `end` when that is written) in a task of its own, and
    /// returns when that is done or when the exchange ends (`done` completes), whichever comes first. The
    /// caller's body stream may never yield again (nor heed cancellation): the request's deadline must still
    /// end `send`. The writing task is then cancelled and left to finish on its own.
    static func writeBody(
        _ body: HTTPBody, to channel: any Channel, end: EventLoopPromise<Void>, racing done: EventLoopFuture<Bool>
    ) async -> BodyOutcome {
        let first = FirstOutcome<BodyOutcome>()
        let writer = Task {
            do {
                try await writeBody(body, to: channel, end: end)
                first.complete(.written)
            } catch let error as BodyError {
                first.complete(.bodyFailed(error.underlying))
            } catch {
                first.complete(.writeFailed(error))
            }
        }
        done.whenComplete { _ in first.complete(.exchangeEnded) }
        let outcome = await first.value
        if case .exchangeEnded = outcome { writer.cancel() }
        return outcome
    }

    private static func writeBody(_ body: HTTPBody, to channel: any Channel, end: EventLoopPromise<Void>) async throws {
        var iterator = body.makeAsyncIterator()
        while true {
            let chunk: ArraySlice<UInt8>?
            do { chunk = try await iterator.next() } catch { throw BodyError(underlying: error) }
            guard let chunk else { break }
            if chunk.isEmpty { continue }
            let buffer = channel.allocator.buffer(bytes: chunk)
            try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(buffer))).get()
        }
        // `end` completes on the event loop when the end is written, ordered with the response's events.
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: end)
        try await end.futureResult.get()
    }
}

extension HTTPClientConnection {
    /// How connections are opened.
    struct Factory: Sendable {
        let group: any EventLoopGroup
        let security: any ConnectionSecurity
        let connectTimeout: TimeAmount
        let handshakeTimeout: TimeAmount
        /// Lowercased URL host → address to connect to (``HTTPSTransport/Configuration/connectAddresses``).
        var connectAddresses: [String: String] = [:]
        let logger: Logger

        /// Connects, secures and prepares a connection to `target`, all on the connection's event loop; the
        /// future fails with a ``TLSError``: `connectFailed`, `timeout(.connect)`, `timeout(.handshake)`, or
        /// the security layer's error.
        ///
        /// An IP literal is connected to directly: NIO's resolver would run `getaddrinfo` on a dispatch queue
        /// and race address families for every new connection, a thread round trip per handshake.
        func connect(to target: RequestTarget) -> EventLoopFuture<HTTPClientConnection> {
            let bootstrap = ClientBootstrap(group: group)
                .connectTimeout(connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
            let connected: EventLoopFuture<any Channel>
            let host = connectAddresses[target.host] ?? target.host
            if let address = try? SocketAddress(ipAddress: host, port: target.port) {
                connected = bootstrap.connect(to: address)
            } else {
                connected = bootstrap.connect(host: host, port: target.port)
            }
            return connected.flatMapErrorThrowing { error -> any Channel in
                if case ChannelError.connectTimeout = error { throw TLSError.timeout(.connect) }
                throw TLSError.connectFailed(host: target.host, port: target.port, reason: "\(error)")
            }.flatMap { channel in
                secure(channel, target: target).hop(to: channel.eventLoop).flatMapThrowing {
                    let handler = HTTPClientConnectionHandler()
                    let connection = HTTPClientConnection(channel: channel, handler: handler)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(InboundByteObserver { handler.noteBytesRead() })
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(handler)
                    return connection
                }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error is TLSError ? error : TLSError.handshakeFailed(reason: "\(error)")
                }
            }
        }

        /// ``connect(to:)`` awaited.
        func connect(to target: RequestTarget) async throws -> HTTPClientConnection {
            try await connect(to: target).get()
        }

        /// The security layer's verification, bounded by the handshake timeout.
        private func secure(_ channel: any Channel, target: RequestTarget) -> EventLoopFuture<Void> {
            let loop = channel.eventLoop
            let security = self.security
            let timeout = handshakeTimeout
            return loop.flatSubmit {
                let result = loop.makePromise(of: Void.self)
                let finished = NIOLoopBoundBox(false, eventLoop: loop)
                let timer = loop.scheduleTask(in: timeout) {
                    guard !finished.value else { return }
                    finished.value = true
                    result.fail(TLSError.timeout(.handshake))
                    channel.close(promise: nil)
                }
                security.addHandlers(to: channel, host: target.host, port: target.port).hop(to: loop).whenComplete {
                    outcome in
                    timer.cancel()
                    guard !finished.value else { return }
                    finished.value = true
                    result.completeWith(outcome)
                }
                return result.futureResult
            }
        }
    }
}

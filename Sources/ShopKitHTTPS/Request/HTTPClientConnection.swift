import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime
import ShopKitTLS

/// The one way to run a request, whatever carries it: one verified HTTP/1.1 connection (a channel whose pipeline
/// is security handlers, the HTTP codec, and an ``HTTP1ConnectionHandler``), or one HTTP/2 stream (an
/// ``HTTP2Stream`` of its connection's ``HTTP2ConnectionHandler``). Both are a ``RequestHandler``; this type
/// starts, writes and cancels requests through that seam only. One request at a time; the pool decides who uses
/// it.
final class HTTPClientConnection: Sendable {
    typealias ExchangeID = HTTP1ConnectionStateMachine.RequestID

    /// The connection's channel (for an HTTP/2 stream, its connection's: never written to or closed directly).
    let channel: any Channel
    /// The handler, only touched on the channel's event loop.
    private let handler: NIOLoopBound<any RequestHandler>
    /// The last request id handed out on this connection.
    private let lastExchange = NIOLockedValueBox(0)

    /// A connection whose pipeline ends in `handler`, or a stream of the connection on `channel`.
    init(channel: any Channel, handler: any RequestHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// What sending a request produced: the head, the streamed body, and the exchange's id.
    struct Exchange: Sendable {
        let id: ExchangeID
        let head: HTTPResponseHead
        /// The body chunks, fed by the handler on the event loop.
        let body: BodyStream
    }

    /// Makes the next exchange ready, on any thread: a new id and the body stream. `onHead` receives the response
    /// head or the failure, once, on the event loop.
    func prepare(
        head: HTTPRequestHead, limits: HTTPRequestStateMachine.Limits, onHead: @escaping HeadReceiver,
        release: @escaping @Sendable (Bool) -> Void
    ) -> RequestContext {
        let loop = channel.eventLoop
        let handler = self.handler
        let stream = BodyStream()
        stream.onDemand = { loop.execute { handler.value.resumeReading() } }
        return RequestContext(
            id: ExchangeID(raw: lastExchange.withLockedValue { $0 += 1; return $0 }), limits: limits,
            requestKeepAlive: !head.headers[canonicalForm: "connection"].contains {
                $0.utf8.elementsEqual("close".utf8) || $0.lowercased() == "close"
            },
            isHead: head.method == .HEAD, onHead: onHead, body: stream, release: release)
    }

    /// On the event loop: starts a bodiless exchange and writes it whole (head and end, flushed).
    func send(_ exchange: RequestContext, head: HTTPRequestHead) {
        let handler = self.handler.value
        handler.start(exchange)
        handler.writeWhole(head, id: exchange.id)
    }

    /// On the event loop: starts an exchange with a body and writes its head. The caller then writes the body
    /// and the end with the promise returned, whose completion reports the request's end to the exchange.
    func sendHead(_ exchange: RequestContext, head: HTTPRequestHead) -> EventLoopPromise<Void> {
        let handler = self.handler
        let id = exchange.id
        handler.value.start(exchange)
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { result in
            switch result {
            case .success: handler.value.requestSent(id)
            case .failure: handler.value.requestFailed(id)
            }
        }
        handler.value.write(.head(head), flush: false, promise: nil)
        return written
    }

    /// Writes a part of the request, from any thread (on the event loop at once, else hopping onto it).
    func write(_ part: HTTPClientRequestPart, flush: Bool, promise: EventLoopPromise<Void>?) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            handler.value.write(part, flush: flush, promise: promise)
        } else {
            channel.eventLoop.execute { handler.value.write(part, flush: flush, promise: promise) }
        }
    }

    /// On the event loop: abandons exchange `id`, if it is still running.
    func cancelOnLoop(_ id: ExchangeID) {
        handler.value.cancel(id)
    }

    /// Abandons exchange `id`, if it is still running: the connection is closed.
    func cancel(_ id: ExchangeID) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.cancel(id) }
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
    /// returns when that is done or when the exchange ends (its head fails or its body stream ends), whichever
    /// comes first. The
    /// caller's body stream may never yield again (nor heed cancellation): the request's deadline must still
    /// end `send`. The writing task is then cancelled and left to finish on its own.
    static func writeBody(
        _ body: HTTPBody, to carrier: HTTPClientConnection, end: EventLoopPromise<Void>,
        racing head: EventLoopFuture<Exchange>, stream: BodyStream
    ) async -> BodyOutcome {
        let first = FirstOutcome<BodyOutcome>()
        let writer = Task {
            do {
                try await writeBody(body, declared: body.length, to: carrier, end: end)
                first.complete(.written)
            } catch let error as BodyError {
                first.complete(.bodyFailed(error.underlying))
            } catch {
                first.complete(.writeFailed(error))
            }
        }
        // The exchange ended: it failed (the head fails, or the body stream ends with an error) or the
        // response is complete (the body stream ended).
        head.whenFailure { _ in first.complete(.exchangeEnded) }
        stream.onEnd = { first.complete(.exchangeEnded) }
        let outcome = await first.value
        if case .exchangeEnded = outcome { writer.cancel() }
        return outcome
    }

    /// Writes the body's chunks, counting them against the `declared` length that the head's `Content-Length`
    /// (HTTP/1.1) or `content-length` (HTTP/2) announced: the server frames the request by that number, so a byte
    /// past it would be read as the start of another request. A chunk that would run past it is not written at all,
    /// and a body that ends short writes no request end; either way the caller's body is at fault
    /// (``HTTPSTransportError/requestBodyLengthMismatch(declared:yielded:)``) and the exchange is cancelled, which
    /// closes a connection holding part of a request.
    private static func writeBody(
        _ body: HTTPBody, declared: HTTPBody.Length, to carrier: HTTPClientConnection, end: EventLoopPromise<Void>
    ) async throws {
        let channel = carrier.channel
        var iterator = body.makeAsyncIterator()
        var yielded: Int64 = 0
        while true {
            let chunk: ArraySlice<UInt8>?
            do { chunk = try await iterator.next() } catch { throw BodyError(underlying: error) }
            guard let chunk else { break }
            if chunk.isEmpty { continue }
            yielded += Int64(chunk.count)
            if case .known(let length) = declared, yielded > length {
                throw BodyError(
                    underlying: HTTPSTransportError.requestBodyLengthMismatch(declared: length, yielded: yielded))
            }
            let buffer = channel.allocator.buffer(bytes: chunk)
            let written = channel.eventLoop.makePromise(of: Void.self)
            carrier.write(.body(.byteBuffer(buffer)), flush: true, promise: written)
            try await written.futureResult.get()
        }
        if case .known(let length) = declared, yielded != length {
            throw BodyError(underlying: HTTPSTransportError.requestBodyLengthMismatch(declared: length, yielded: yielded))
        }
        // `end` completes on the event loop when the end is written, ordered with the response's events.
        carrier.write(.end(nil), flush: true, promise: end)
        try await end.futureResult.get()
    }
}

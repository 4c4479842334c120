import NIOCore
import NIOHTTP1

/// The one way to run a request, whatever carries it: one verified HTTP/1.1 connection (a channel whose pipeline
/// is security handlers, the HTTP codec, and an ``HTTP1ConnectionHandler``), or one HTTP/2 stream (an
/// ``HTTP2Stream`` of its connection's ``HTTP2ConnectionHandler``). Both are a ``RequestHandler``; this type
/// starts, writes and cancels requests through that seam only, for the ``HTTPExchange`` that runs on it. One
/// request at a time; the pool decides who uses it.
final class HTTPClientConnection: Sendable {
    typealias ExchangeID = HTTP1ConnectionStateMachine.RequestID

    /// The connection's channel (for an HTTP/2 stream, its connection's: never written to or closed directly).
    let channel: any Channel
    /// The handler, only touched on the channel's event loop.
    private let handler: NIOLoopBound<any RequestHandler>
    /// The last request id handed out on this connection (on the event loop).
    private let lastExchange: NIOLoopBoundBox<Int>

    /// A connection whose pipeline ends in `handler`, or a stream of the connection on `channel`.
    init(channel: any Channel, handler: any RequestHandler) {
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        self.lastExchange = NIOLoopBoundBox(0, eventLoop: channel.eventLoop)
    }

    /// On the event loop: the id of the next request on this connection.
    func nextID() -> ExchangeID {
        lastExchange.value += 1
        return ExchangeID(raw: lastExchange.value)
    }

    /// On the event loop: starts request `id` of `exchange` and writes its head: with its end, flushed, when
    /// `whole` (a bodiless request), else alone (the upload writes the body and the end).
    func start(_ exchange: any ExchangeEvents, id: ExchangeID, head: HTTPRequestHead, whole: Bool) {
        let handler = self.handler.value
        handler.start(exchange, id: id)
        if whole {
            handler.writeWhole(head, id: id)
        } else {
            handler.write(.head(head), flush: false, promise: nil)
        }
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

    /// Request `id`'s end was written (called from its write's completion, on the event loop).
    func requestSent(_ id: ExchangeID) {
        if channel.eventLoop.inEventLoop {
            handler.value.requestSent(id)
        } else {
            let handler = self.handler
            channel.eventLoop.execute { handler.value.requestSent(id) }
        }
    }

    /// Request `id`'s end will never be written, in a new event-loop task (never inside the handler's event
    /// that ended the response).
    func requestFailed(_ id: ExchangeID) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.requestFailed(id) }
    }

    /// On the event loop: starts request `id` of `exchange` and abandons it at once, writing nothing (its caller
    /// went away while the carrier was opened): the handler ends it as any abandoned request, and gives the lease
    /// back.
    func startAbandoned(_ exchange: any ExchangeEvents, id: ExchangeID) {
        let handler = self.handler.value
        handler.start(exchange, id: id)
        handler.cancel(id)
    }

    /// Abandons exchange `id`, if it is still running: the connection is closed (an HTTP/2 stream is reset).
    func cancel(_ id: ExchangeID) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.cancel(id) }
    }

    /// The body reader caught up: the handler lets reads through again.
    func resumeReading() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.resumeReading() }
    }
}

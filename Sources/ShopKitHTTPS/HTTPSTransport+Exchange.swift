import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// A request that failed before the server processed it, on a connection that may be retried once on a new one.
struct NotProcessed: Error {
    let error: any Error
}

/// A connection found unusable when a request was about to be written on it, before any byte of the request was:
/// a kept-alive HTTP/1.1 connection that was not quiet (the server sent something after its last response, or
/// closed), or an HTTP/2 connection that closed, is closing for a connection error, or was refused by GOAWAY
/// after the pool handed it out. The request goes out on another connection, and this does not count as an
/// attempt (the caller's body was never read).
struct ConnectionNotQuiet: Error {}

extension HTTPSTransport {
    /// The one way to start a request, on either kind of connection: an ``HTTPExchange`` leases a connection, and
    /// on its event loop opens the request's carrier (the HTTP/1.1 connection itself, or a new stream of the
    /// HTTP/2 connection) and starts the request on it, through ``HTTPClientConnection``. Returns at the response
    /// head, with the exchange, from which the body is read.
    ///
    /// A bodiless request (the common case: a GET) is written and flushed whole on the event loop, without resuming
    /// the caller in between: a new connection sends it as soon as its handshake and pin check have passed, and the
    /// caller is resumed once, with the response head (or the error). A request with a body has its head written
    /// there too; the exchange's upload then writes the body, racing the response (an early answer, a deadline),
    /// and the caller is resumed when the upload is over.
    ///
    /// - Throws: ``NotProcessed`` when the server did not process the request (see ``classify(_:on:)``); pool
    ///   errors (`HTTPSTransportError.timeout(.request)`, connection errors); transport errors; the caller's body
    ///   errors as they are; `CancellationError`.
    func exchange(
        _ head: HTTPRequestHead, body: HTTPBody?, to target: RequestTarget, limits: HTTPRequestStateMachine.Limits
    ) async throws -> (HTTPExchange, HTTPResponseHead) {
        let exchange = HTTPExchange(head: head, body: body, limits: limits, pool: pool)
        let responseHead = try await exchange.run(to: target)
        if Task.isCancelled {
            exchange.cancel()
            throw CancellationError()
        }
        return (exchange, responseHead)
    }

    /// The response of a started exchange, with its streamed body (none for HEAD, 204 and 304).
    func response(of exchange: HTTPExchange, head: HTTPResponseHead, isHead: Bool) async throws -> (HTTPResponse, HTTPBody?) {
        let response: HTTPResponse
        do {
            response = try HTTPConversion.response(head)
        } catch {
            exchange.cancel()
            throw error
        }
        if isHead || head.status.code == 204 || head.status.code == 304 {
            // No body: wait for the exchange's end, so the connection is back in the pool when `send` returns.
            while try await exchange.next() != nil {}
            // Cut short by the caller's cancellation: the response may not have ended (a reset could follow).
            if exchange.bodyWasCancelled { throw CancellationError() }
            return (response, nil)
        }
        let length = HTTPConversion.contentLength(head).map { HTTPBody.Length.known(Int64($0)) } ?? .unknown
        return (response, HTTPBody(ResponseBodySequence(exchange: exchange), length: length, iterationBehavior: .single))
    }

    /// ``NotProcessed`` when the server did not process the request, else the failure's error.
    ///
    /// Not processed: a kept-alive HTTP/1.1 connection that was closed before any response byte (the server
    /// closed it while idle), or an HTTP/2 stream refused by the server's GOAWAY. An HTTP/2 server closes
    /// gracefully with GOAWAY, so a connection that dies under its streams fails them.
    static func classify(_ failure: ExchangeFailure, on lease: ConnectionPool.Lease) -> any Error {
        let isHTTP1: Bool
        if case .http1 = lease.connection { isHTTP1 = true } else { isHTTP1 = false }
        if failure.noResponseBytes, let code = failure.refusedByGoAway {
            // Named for what happened (the stream's own close says only CANCEL): not processed, safe to resend.
            return NotProcessed(error: HTTPSTransportError.refusedByGoAway(code: code))
        }
        let notProcessed =
            failure.noResponseBytes && isHTTP1 && lease.reused
            && (failure.error as? HTTPSTransportError) == .connectionClosed
        return notProcessed ? NotProcessed(error: failure.error) : failure.error
    }
}

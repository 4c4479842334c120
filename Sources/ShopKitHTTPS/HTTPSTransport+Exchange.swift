import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// A request that failed before the server processed it, on a connection that may be retried once on a new one.
struct NotProcessed: Error {
    let error: any Error
}

/// A kept-alive HTTP/1.1 connection that was not quiet when a request was about to be written on it (the server
/// sent something after its last response, or closed): discarded before anything was written, so the request
/// goes out on another connection, and this does not count as an attempt.
struct ConnectionNotQuiet: Error {}

/// An exchange whose response head arrived: the lease it runs on, the connection (for HTTP/2: the stream), and
/// the exchange.
struct StartedExchange: Sendable {
    let lease: ConnectionPool.Lease
    let connection: HTTPClientConnection
    let exchange: HTTPClientConnection.Exchange
}

extension HTTPSTransport {
    /// The one way to start a request, on either kind of connection: leases a connection, and on its event loop
    /// opens the request's carrier (the HTTP/1.1 connection itself, or a new stream of the HTTP/2 connection)
    /// and starts the request on it, through ``HTTPClientConnection``. Returns at the response head.
    ///
    /// A bodiless request (the common case: a GET) is written and flushed whole on the event loop, without resuming
    /// the caller in between: a new connection sends it as soon as its handshake and pin check have passed, and the
    /// caller is resumed once, with the response head (or the error). A request with a body has its head written
    /// there too; the caller's task then writes the body, racing the response (an early answer, a deadline).
    ///
    /// One cancellation story for both: until the request starts, cancellation abandons the pool's waiter; from
    /// then on it cancels the request, which closes its connection (or resets its stream).
    ///
    /// - Throws: ``NotProcessed`` when the server did not process the request (see ``classify(_:on:)``); pool
    ///   errors (`HTTPSTransportError.timeout(.request)`, connection errors); transport errors; the caller's body
    ///   errors as they are; `CancellationError`.
    func exchange(
        _ head: HTTPRequestHead, body: HTTPBody?, to target: RequestTarget, limits: HTTPRequestStateMachine.Limits
    ) async throws -> StartedExchange {
        let pool = self.pool
        // What cancellation reaches: the pool's waiter until the request starts, then the request.
        let progress = NIOLockedValueBox(RequestProgress())
        do {
            return try await withTaskCancellationHandler {
                let begun = try await withCheckedThrowingContinuation { (waiting: CheckedContinuation<Begun, any Error>) in
                    let waiter = pool.lease(target, deadline: limits.deadline) { leased in
                        switch leased {
                        case .failure(let error):
                            waiting.resume(throwing: error)
                        case .success(let lease):
                            let loop = lease.connection.channel.eventLoop
                            if loop.inEventLoop {
                                Self.begin(head, hasBody: body != nil, on: lease, limits: limits, pool: pool, progress: progress, waiting)
                            } else {
                                loop.execute {
                                    Self.begin(head, hasBody: body != nil, on: lease, limits: limits, pool: pool, progress: progress, waiting)
                                }
                            }
                        }
                    }
                    let cancelled = progress.withLockedValue {
                        $0.waiter = waiter
                        return $0.cancelled
                    }
                    // Cancelled before the waiter was known: the handler below found nothing to abandon.
                    if cancelled, let waiter { pool.abandon(waiter, error: CancellationError()) }
                }
                let started: StartedExchange
                switch begun {
                case .answered(let answered):
                    started = answered
                case .writingBody(let writing, let lease, let carrier):
                    started = try await Self.writeBody(body!, of: writing, on: carrier, lease: lease)
                }
                if Task.isCancelled {
                    started.connection.cancel(started.exchange.id)
                    throw CancellationError()
                }
                return started
            } onCancel: {
                let (waiter, running) = progress.withLockedValue {
                    $0.cancelled = true
                    return ($0.waiter, $0.running)
                }
                if let running {
                    running.connection.cancel(running.id)
                } else if let waiter {
                    // Does nothing once the waiter was served: the request then sees `cancelled` as it starts.
                    pool.abandon(waiter, error: CancellationError())
                }
            }
        } catch let failure as LeasedFailure {
            throw Self.classify(failure.failure, on: failure.lease)
        }
    }

    /// How far the event loop took a request before resuming its caller.
    private enum Begun: Sendable {
        /// The response head arrived (a bodiless request, written whole on the loop).
        case answered(StartedExchange)
        /// The request started and its head is written: the caller writes the body.
        case writingBody(BodyExchange, ConnectionPool.Lease, HTTPClientConnection)
    }

    /// A started request whose caller writes the body: the exchange, its answer (a future, which the body
    /// races), and the promise for the request's end.
    private struct BodyExchange: Sendable {
        let exchange: RequestContext
        let answered: EventLoopFuture<HTTPClientConnection.Exchange>
        let written: EventLoopPromise<Void>
    }

    /// On `lease`'s event loop: opens the request's carrier and starts the request on it, then resumes `waiting`:
    /// with the response head when the request has no body, else as soon as the body may be written.
    private static func begin(
        _ head: HTTPRequestHead, hasBody: Bool, on lease: ConnectionPool.Lease, limits: HTTPRequestStateMachine.Limits,
        pool: ConnectionPool, progress: NIOLockedValueBox<RequestProgress>, _ waiting: CheckedContinuation<Begun, any Error>
    ) {
        let release: @Sendable (Bool) -> Void = { pool.release(lease, reusable: $0) }
        lease.connection.openCarrier { opened in
            let carrier: HTTPClientConnection
            switch opened {
            case .success(let opened):
                carrier = opened
            case .failure(let error):
                // No stream could be opened: nothing was sent.
                release(false)
                waiting.resume(throwing: LeasedFailure(failure: ExchangeFailure(error: error, noResponseBytes: true), lease: lease))
                return
            }
            if lease.reused, case .http1 = lease.connection, !ConnectionQuiet.check(carrier.channel) {
                // Never write a request after bytes nobody asked for, or to a server that closed.
                carrier.channel.close(promise: nil)
                release(false)
                waiting.resume(throwing: ConnectionNotQuiet())
                return
            }
            if hasBody {
                let answered = carrier.channel.eventLoop.makePromise(of: HTTPClientConnection.Exchange.self)
                let exchange = carrier.prepare(
                    head: head, limits: limits, onHead: { answered.completeWith($0.mapError { $0 }) },
                    release: release)
                let cancelled = progress.withLockedValue {
                    $0.running = (carrier, exchange.id)
                    return $0.cancelled
                }
                let written = carrier.sendHead(exchange, head: head)
                if cancelled { carrier.cancelOnLoop(exchange.id) }
                let body = BodyExchange(exchange: exchange, answered: answered.futureResult, written: written)
                waiting.resume(returning: .writingBody(body, lease, carrier))
                return
            }
            // The head (or the failure) resumes the caller straight from the handler: one hand-off, no future.
            let exchange = carrier.prepare(
                head: head, limits: limits,
                onHead: { result in
                    switch result {
                    case .success(let answered):
                        waiting.resume(returning: .answered(StartedExchange(lease: lease, connection: carrier, exchange: answered)))
                    case .failure(let failure):
                        waiting.resume(throwing: LeasedFailure(failure: failure, lease: lease))
                    }
                },
                release: release)
            let cancelled = progress.withLockedValue {
                $0.running = (carrier, exchange.id)
                return $0.cancelled
            }
            carrier.send(exchange, head: head)
            if cancelled { carrier.cancelOnLoop(exchange.id) }
        }
    }

    /// In the caller's task: writes the body of a started request, racing its response, and waits for the
    /// response head. The lease goes back to the pool exactly once, on the event loop, when the request's state
    /// machine ends the request: this function never releases it itself.
    private static func writeBody(
        _ body: HTTPBody, of started: BodyExchange, on carrier: HTTPClientConnection, lease: ConnectionPool.Lease
    ) async throws -> StartedExchange {
        let exchange = started.exchange
        let written = started.written
        switch await HTTPClientConnection.writeBody(
            body, to: carrier, end: written, racing: started.answered, stream: exchange.body)
        {
        case .written:
            break
        case .bodyFailed(let error):
            carrier.cancel(exchange.id)
            written.fail(error)
            _ = try? await started.answered.get()
            throw error
        case .writeFailed(let error):
            // The connection failed while writing: the handler reports why (or the server answered early).
            written.fail(error)
        case .exchangeEnded:
            // A deadline, a closed connection, cancellation or an early response ended the request, maybe while
            // the caller's body stream had not finished (it may never): give up on the body. A connection with half
            // a request on it is closed by the state machine; one whose request end was written just before
            // (`written` succeeded first, this failure is then ignored) is kept.
            written.fail(HTTPSTransportError.connectionClosed)
        }
        do {
            return StartedExchange(lease: lease, connection: carrier, exchange: try await started.answered.get())
        } catch let failure as ExchangeFailure {
            throw LeasedFailure(failure: failure, lease: lease)
        }
    }

    /// The response of a started exchange, with its streamed body (none for HEAD, 204 and 304).
    func response(of started: StartedExchange, isHead: Bool) async throws -> (HTTPResponse, HTTPBody?) {
        let (lease, connection, exchange) = (started.lease, started.connection, started.exchange)
        let response: HTTPResponse
        do {
            response = try HTTPConversion.response(exchange.head)
        } catch {
            connection.cancel(exchange.id)
            throw error
        }
        if isHead || exchange.head.status.code == 204 || exchange.head.status.code == 304 {
            // No body: wait for the exchange's end, so the connection is back in the pool when `send` returns.
            while try await exchange.body.next() != nil {}
            return (response, nil)
        }
        let id = exchange.id
        exchange.body.onCancel = { connection.cancel(id) }
        if case .http2 = lease.connection {
            // A body dropped unread resets its stream (RST_STREAM) rather than being read to the end.
            exchange.body.onAbandon = { connection.cancel(id) }
        }
        let length = HTTPConversion.contentLength(exchange.head).map { HTTPBody.Length.known(Int64($0)) } ?? .unknown
        return (response, HTTPBody(ResponseBodySequence(stream: exchange.body), length: length, iterationBehavior: .single))
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

/// A request's progress, for its cancellation.
struct RequestProgress: Sendable {
    /// The pool's waiter, while the lease is pending (nil when served at once).
    var waiter: ConnectionPool.WaiterID?
    /// The request, once it started.
    var running: (connection: HTTPClientConnection, id: HTTPClientConnection.ExchangeID)?
    /// The caller's task was cancelled.
    var cancelled = false
}

/// An exchange failure together with the lease it happened on, from the event loop to the caller.
private struct LeasedFailure: Error {
    let failure: ExchangeFailure
    let lease: ConnectionPool.Lease
}

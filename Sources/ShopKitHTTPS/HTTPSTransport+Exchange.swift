import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// A request that failed before the server processed it, on a connection that may be retried once on a new one.
struct NotProcessed: Error {
    let error: any Error
}

/// An exchange whose response head arrived: the lease it runs on, the connection (for HTTP/2: the stream), and
/// the exchange.
struct StartedExchange: Sendable {
    let lease: ConnectionPool.Lease
    let connection: HTTPClientConnection
    let exchange: HTTPClientConnection.Exchange
}

extension HTTPSTransport {
    /// Leases a connection and runs a bodiless request on it (the common case: a GET), up to its response head.
    ///
    /// The request is started on the connection's event loop by the lease itself: a new connection sends it as
    /// soon as its handshake and pin check have passed, without resuming the caller in between, and the caller
    /// is resumed once, with the response head (or the error).
    ///
    /// - Throws: ``NotProcessed`` when the server did not process the request (see ``notProcessed(_:on:)``);
    ///   pool errors (`HTTPSTransportError.timeout(.request)`, connection errors); transport errors;
    ///   `CancellationError`.
    func exchangeBodiless(
        _ head: HTTPRequestHead, to target: RequestTarget, limits: HTTPRequestStateMachine.Limits
    ) async throws -> StartedExchange {
        let pool = self.pool
        // What cancellation reaches: the pool's waiter until the exchange starts, then the exchange.
        let progress = NIOLockedValueBox(BodilessProgress())
        do {
            return try await withTaskCancellationHandler {
                let started = try await withCheckedThrowingContinuation { (waiting: CheckedContinuation<StartedExchange, any Error>) in
                    let waiter = pool.lease(target, deadline: limits.deadline) { leased in
                        switch leased {
                        case .failure(let error):
                            waiting.resume(throwing: error)
                        case .success(let lease):
                            let loop = lease.connection.channel.eventLoop
                            if loop.inEventLoop {
                                Self.startBodiless(head, on: lease, limits: limits, pool: pool, progress: progress, waiting)
                            } else {
                                loop.execute {
                                    Self.startBodiless(head, on: lease, limits: limits, pool: pool, progress: progress, waiting)
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
                    // Does nothing once the waiter was served: the exchange then sees `cancelled` as it starts.
                    pool.abandon(waiter, error: CancellationError())
                }
            }
        } catch let failure as LeasedFailure {
            var error = failure.failure
            if case .http2(let http2) = failure.lease.connection, error.noResponseBytes,
                let stream = progress.withLockedValue({ $0.running?.connection })
            {
                error.refusedByGoAway = await http2.refused(stream.channel)
            }
            throw Self.classify(error, on: failure.lease)
        }
    }

    /// On `lease`'s event loop: starts the bodiless exchange and resumes `waiting` with its response head.
    private static func startBodiless(
        _ head: HTTPRequestHead, on lease: ConnectionPool.Lease, limits: HTTPRequestStateMachine.Limits,
        pool: ConnectionPool, progress: NIOLockedValueBox<BodilessProgress>,
        _ waiting: CheckedContinuation<StartedExchange, any Error>
    ) {
        let release: @Sendable (Bool) -> Void = { pool.release(lease, reusable: $0) }
        let started: @Sendable (HTTPClientConnection, HTTPClientConnection.ExchangeID) -> Bool = { connection, id in
            progress.withLockedValue {
                $0.running = (connection, id)
                return $0.cancelled
            }
        }
        let answered: @Sendable (Result<(HTTPClientConnection, HTTPClientConnection.Exchange), any Error>) -> Void = {
            switch $0 {
            case .success(let (connection, exchange)):
                waiting.resume(returning: StartedExchange(lease: lease, connection: connection, exchange: exchange))
            case .failure(let failure as ExchangeFailure):
                waiting.resume(throwing: LeasedFailure(failure: failure, lease: lease))
            case .failure(let error):
                waiting.resume(throwing: error)
            }
        }
        switch lease.connection {
        case .http1(let connection):
            connection.startBodiless(
                head: head, limits: limits, release: release, started: { started(connection, $0) },
                answered: { answered($0.map { (connection, $0) }) })
        case .http2(let connection):
            connection.startBodiless(head: head, limits: limits, release: release, started: started, answered: answered)
        }
    }

    /// Runs one exchange with a request body on `lease`, up to its response head. The lease goes back to the
    /// pool exactly once, on the event loop, when the exchange's state machine ends the exchange: this function
    /// never releases it itself.
    ///
    /// - Throws: as ``exchangeBodiless(_:to:limits:)``, and the caller's body errors as they are.
    func exchange(
        _ head: HTTPRequestHead, body: HTTPBody, on lease: ConnectionPool.Lease, limits: HTTPRequestStateMachine.Limits
    ) async throws -> StartedExchange {
        let pool = self.pool
        let release: @Sendable (Bool) -> Void = { pool.release(lease, reusable: $0) }
        let connection: HTTPClientConnection
        do {
            switch lease.connection {
            case .http1(let http1):
                connection = http1
                let exchange = try await connection.execute(head: head, body: body, limits: limits, release: release)
                return StartedExchange(lease: lease, connection: connection, exchange: exchange)
            case .http2(let http2):
                do {
                    connection = try await http2.openStream().get()
                } catch {
                    release(false)
                    throw ExchangeFailure(error: error, noResponseBytes: true)
                }
                do {
                    let exchange = try await connection.execute(head: head, body: body, limits: limits, release: release)
                    return StartedExchange(lease: lease, connection: connection, exchange: exchange)
                } catch let failure as ExchangeFailure where failure.noResponseBytes {
                    throw ExchangeFailure(
                        error: failure.error, noResponseBytes: true, refusedByGoAway: await http2.refused(connection.channel))
                }
            }
        } catch let failure as ExchangeFailure {
            throw Self.classify(failure, on: lease)
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

/// A bodiless exchange's progress, for its cancellation.
struct BodilessProgress: Sendable {
    /// The pool's waiter, while the lease is pending (nil when served at once).
    var waiter: ConnectionPool.WaiterID?
    /// The exchange, once it started.
    var running: (connection: HTTPClientConnection, id: HTTPClientConnection.ExchangeID)?
    /// The caller's task was cancelled.
    var cancelled = false
}

/// An exchange failure together with the lease it happened on, from the event loop to the caller.
private struct LeasedFailure: Error {
    let failure: ExchangeFailure
    let lease: ConnectionPool.Lease
}

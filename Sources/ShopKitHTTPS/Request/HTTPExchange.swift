import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// One request, owning its life from the pool's queue to the last body byte: the caller's task waits on it for
/// the response head, the upload pulls the caller's body through it, the connection's handler reports to it
/// (through ``ExchangeEvents``), and the caller reads the response body from it.
///
/// Every decision is its ``StateMachine``'s; this object holds what the machine cannot (the continuations, the
/// lease, the connection, the upload task) behind one lock, and carries the machine's effects out after the
/// lock is released: no continuation is resumed, no pool or channel is called under it.
///
/// Touched from the caller's task, the upload task, the pool (any thread) and the connection's event loop.
final class HTTPExchange: ExchangeEvents {
    let limits: HTTPRequestStateMachine.Limits
    let requestKeepAlive: Bool
    let isHead: Bool
    private let head: HTTPRequestHead
    private let body: HTTPBody?
    private let pool: ConnectionPool
    private let locked: NIOLockedValueBox<Locked>

    /// What the machine cannot hold, next to it under the one lock.
    private struct Locked: Sendable {
        var machine: StateMachine
        /// The caller waiting for the head, or what it gets once it waits (the outcome came first).
        var caller: CheckedContinuation<HTTPResponseHead, any Error>?
        var callerOutcome: Result<HTTPResponseHead, any Error>?
        var reader: CheckedContinuation<ArraySlice<UInt8>?, any Error>?
        var uploader: CheckedContinuation<Void, any Error>?
        var lease: ConnectionPool.Lease?
        var carrier: HTTPClientConnection?
        var id: HTTPClientConnection.ExchangeID?
        var upload: Task<Void, Never>?
    }

    init(head: HTTPRequestHead, body: HTTPBody?, limits: HTTPRequestStateMachine.Limits, pool: ConnectionPool) {
        self.head = head
        self.body = body
        self.limits = limits
        self.pool = pool
        self.isHead = head.method == .HEAD
        // Most requests have no Connection field: look it up (splitting its list) only when there is one.
        self.requestKeepAlive =
            !head.headers.contains(name: "connection")
            || !head.headers[canonicalForm: "connection"].contains {
                $0.utf8.elementsEqual("close".utf8) || $0.lowercased() == "close"
            }
        self.locked = NIOLockedValueBox(Locked(machine: StateMachine(hasBody: body != nil)))
    }

    /// The lease the request runs on (nil before one was leased).
    var lease: ConnectionPool.Lease? { locked.withLockedValue { $0.lease } }

    /// Whether the response body was cut short by its reader's cancellation.
    var bodyWasCancelled: Bool { locked.withLockedValue { $0.machine.bodyWasCancelled } }

    // MARK: The caller

    /// Leases a connection to `target` and runs the request on it; returns the response head (the body is then
    /// read with ``next()``). Until the request starts, cancellation gives up the pool's waiter; from then on it
    /// abandons the request, which closes its connection (or resets its stream).
    ///
    /// - Throws: ``NotProcessed`` when the server did not process the request; ``ConnectionNotQuiet``; pool errors;
    ///   transport errors; the caller's body errors as they are; `CancellationError`.
    func run(to target: RequestTarget) async throws -> HTTPResponseHead {
        defer { perform(locked.withLockedValue { $0.machine.callerTookResponse() }) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (caller: CheckedContinuation<HTTPResponseHead, any Error>) in
                let ready: Result<HTTPResponseHead, any Error>? = locked.withLockedValue {
                    if let outcome = $0.callerOutcome { return outcome }
                    $0.caller = caller
                    return nil
                }
                if let ready { return caller.resume(with: ready) }
                let waiter = pool.lease(target, deadline: limits.deadline) { [self] in leased($0) }
                perform(locked.withLockedValue { $0.machine.queued(waiter: waiter) })
            }
        } onCancel: {
            perform(locked.withLockedValue { $0.machine.cancel() })
        }
    }

    /// The pool's answer.
    private func leased(_ result: Result<ConnectionPool.Lease, any Error>) {
        switch result {
        case .failure(let error):
            perform(locked.withLockedValue { $0.machine.leaseFailed(error) })
        case .success(let lease):
            perform(
                locked.withLockedValue {
                    $0.lease = lease
                    return $0.machine.leased()
                })
            let loop = lease.connection.channel.eventLoop
            if loop.inEventLoop {
                begin(on: lease)
            } else {
                loop.execute { self.begin(on: lease) }
            }
        }
    }

    /// On `lease`'s event loop: opens the request's carrier (the HTTP/1.1 connection, or a new stream of the
    /// HTTP/2 connection) and starts the request on it.
    private func begin(on lease: ConnectionPool.Lease) {
        guard locked.withLockedValue({ $0.machine.phase == .waitingForConnection }) else {
            // Cancelled on its way here: the lease goes back unused.
            return perform(locked.withLockedValue { $0.machine.release(reusable: true) })
        }
        lease.connection.openCarrier { [self] opened in
            let carrier: HTTPClientConnection
            switch opened {
            case .success(let opened):
                carrier = opened
            case .failure(let error):
                // No stream could be opened: nothing was sent.
                let failure = ExchangeFailure(error: error, noResponseBytes: true)
                return perform(locked.withLockedValue { $0.machine.startFailed(failure) })
            }
            var resetsOnAbandon = true
            if case .http1 = lease.connection {
                resetsOnAbandon = false
                if lease.reused, !ConnectionQuiet.check(carrier.channel) {
                    // Never write a request after bytes nobody asked for, or to a server that closed.
                    carrier.channel.close(promise: nil)
                    return perform(locked.withLockedValue { $0.machine.startFailed(ConnectionNotQuiet()) })
                }
            }
            let id = carrier.nextID()
            let action = locked.withLockedValue {
                $0.carrier = carrier
                $0.id = id
                return $0.machine.start(resetsOnAbandon: resetsOnAbandon)
            }
            switch action {
            case .write(let upload):
                carrier.start(self, id: id, head: head, whole: !upload)
                if upload, let body { startUpload(body, on: carrier) }
            case .abandon:
                // Cancelled while its carrier was opened: nothing is written, the connection ends the request.
                carrier.startAbandoned(self, id: id)
            }
        }
    }

    // MARK: The upload

    /// Starts the upload in a task the exchange owns: the caller's body is an `AsyncSequence` whose `next()` may
    /// never return (nor heed cancellation), and the request must still end at its deadline or cancellation, so
    /// the body cannot be pulled by the caller's task, nor by a child task it would wait for. The task is
    /// cancelled when the machine gives the upload up; its writes go out one at a time, on the machine's demand.
    private func startUpload(_ body: HTTPBody, on carrier: HTTPClientConnection) {
        // A request that already ended (its carrier refused it at start) never reads the caller's body: it may go
        // out on another connection, which needs the body untouched.
        guard locked.withLockedValue({ $0.machine.isUploading }) else { return }
        let task = Task { await self.upload(body, on: carrier) }
        let stopped = locked.withLockedValue { state -> Bool in
            guard state.machine.isUploading else { return true }
            state.upload = task
            return false
        }
        if stopped { task.cancel() }
    }

    private struct UploadStopped: Error {}

    /// Writes the body's chunks, counting them against the declared length that the head's `Content-Length`
    /// (HTTP/1.1) or `content-length` (HTTP/2) announced: the server frames the request by that number, so a byte
    /// past it would be read as the start of another request. A chunk that would run past it is not written at
    /// all, and a body that ends short writes no request end; either way the caller's body is at fault
    /// (``HTTPSTransportError/requestBodyLengthMismatch(declared:yielded:)``) and the request is abandoned, which
    /// closes a connection holding part of a request.
    private func upload(_ body: HTTPBody, on carrier: HTTPClientConnection) async {
        var iterator = body.makeAsyncIterator()
        var yielded: Int64 = 0
        do {
            while true {
                let chunk: ArraySlice<UInt8>?
                do { chunk = try await iterator.next() } catch { return uploadFailed(error) }
                guard let chunk else { break }
                if chunk.isEmpty { continue }
                yielded += Int64(chunk.count)
                if case .known(let length) = body.length, yielded > length {
                    return uploadFailed(HTTPSTransportError.requestBodyLengthMismatch(declared: length, yielded: yielded))
                }
                try await write(chunk, on: carrier)
            }
        } catch {
            return  // the exchange gave the upload up
        }
        if case .known(let length) = body.length, yielded != length {
            return uploadFailed(HTTPSTransportError.requestBodyLengthMismatch(declared: length, yielded: yielded))
        }
        guard locked.withLockedValue({ $0.machine.uploadEnded() }) else { return }
        let written = carrier.channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { [self] result in
            perform(locked.withLockedValue { $0.machine.endWritten((try? result.get()) != nil) })
        }
        carrier.write(.end(nil), flush: true, promise: written)
    }

    /// Writes one chunk, and returns once it was written (the machine's demand); throws when the upload was given
    /// up.
    private func write(_ chunk: ArraySlice<UInt8>, on carrier: HTTPClientConnection) async throws {
        guard locked.withLockedValue({ $0.machine.willWriteChunk() }) else { throw UploadStopped() }
        let channel = carrier.channel
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { [self] result in
            perform(locked.withLockedValue { $0.machine.chunkWritten((try? result.get()) != nil) })
        }
        carrier.write(.body(.byteBuffer(channel.allocator.buffer(bytes: chunk))), flush: true, promise: written)
        try await withCheckedThrowingContinuation { (uploader: CheckedContinuation<Void, any Error>) in
            let demand = locked.withLockedValue { state -> StateMachine.Demand in
                let demand = state.machine.awaitDemand()
                if demand == .wait { state.uploader = uploader }
                return demand
            }
            switch demand {
            case .ready: uploader.resume()
            case .stopped: uploader.resume(throwing: UploadStopped())
            case .wait: break
            }
        }
    }

    private func uploadFailed(_ error: any Error) {
        perform(locked.withLockedValue { $0.machine.uploadFailed(error) })
    }

    // MARK: The response body (one reader)

    /// The next chunk of the response body, or nil at its end; throws the request's error once. Returns nil
    /// when the reading task is cancelled (the request is then abandoned).
    func next() async throws -> ArraySlice<UInt8>? {
        let (read, effects) = locked.withLockedValue { $0.machine.read() }
        perform(effects)
        switch read {
        case .chunk(let chunk): return chunk
        case .end: return nil
        case .error(let error): throw error
        case .wait: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: CheckedContinuation<ArraySlice<UInt8>?, any Error>) in
                let read = locked.withLockedValue { state -> StateMachine.Read in
                    let read = state.machine.readerWaits()
                    if case .wait = read { state.reader = reader }
                    return read
                }
                switch read {
                case .chunk(let chunk): reader.resume(returning: chunk)
                case .end: reader.resume(returning: nil)
                case .error(let error): reader.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            perform(locked.withLockedValue { $0.machine.readerCancelled() })
        }
    }

    /// The reader dropped the body without reading it to the end.
    func abandon() {
        perform(locked.withLockedValue { $0.machine.abandon() })
    }

    /// Abandons the request if it still runs (the response was refused after its head arrived).
    func cancel() {
        perform(locked.withLockedValue { $0.machine.cancel() })
    }

    // MARK: ExchangeEvents (the handler, on the event loop)

    func receiveHead(_ head: HTTPResponseHead) {
        locked.withLockedValue { $0.machine.receiveHead(head) }
    }

    func handOverHead() {
        perform(locked.withLockedValue { $0.machine.handOverHead() })
    }

    func receiveBody(_ chunk: ArraySlice<UInt8>) -> Bool {
        let (effects, paused) = locked.withLockedValue { $0.machine.receiveBody(chunk) }
        perform(effects)
        return !paused
    }

    func receiveEnd() {
        perform(locked.withLockedValue { $0.machine.receiveEnd() })
    }

    func fail(_ failure: ExchangeFailure) {
        perform(locked.withLockedValue { $0.machine.fail(callerError: failure, bodyError: failure.error) })
    }

    func release(reusable: Bool) {
        perform(locked.withLockedValue { $0.machine.release(reusable: reusable) })
    }

    // MARK: Carrying out

    /// Carries out `effects`, outside the lock.
    private func perform(_ effects: StateMachine.Effects) {
        let needsHandles =
            effects.caller != nil || effects.reader != nil || effects.uploader != nil || effects.stopUpload
            || effects.cancelHandler || effects.requestFailed || effects.requestSent || effects.resumeReading
            || effects.release != nil
        guard needsHandles || effects.abandonWaiter != nil else { return }
        let taken = locked.withLockedValue { state in
            // What the caller gets: a failure on a lease is classified (not processed, safe to resend?) here.
            let outcome = effects.caller.map { Self.classified($0, on: state.lease) }
            let caller = outcome == nil ? nil : state.caller
            if outcome != nil {
                state.caller = nil
                if caller == nil { state.callerOutcome = outcome }
            }
            let reader = effects.reader == nil ? nil : state.reader
            if effects.reader != nil { state.reader = nil }
            let uploader = effects.uploader == nil ? nil : state.uploader
            if effects.uploader != nil { state.uploader = nil }
            let upload = effects.stopUpload ? state.upload : nil
            if effects.stopUpload { state.upload = nil }
            return (outcome, caller, reader, uploader, upload, state.lease, state.carrier, state.id)
        }
        let (outcome, caller, reader, uploader, upload, lease, carrier, id) = taken
        if let release = effects.release, let lease { pool.release(lease, reusable: release) }
        if let waiter = effects.abandonWaiter { pool.abandon(waiter, error: CancellationError()) }
        if let carrier, let id {
            if effects.cancelHandler { carrier.cancel(id) }
            if effects.requestFailed { carrier.requestFailed(id) }
            if effects.requestSent { carrier.requestSent(id) }
            if effects.resumeReading { carrier.resumeReading() }
        }
        upload?.cancel()
        if let uploader, let goOn = effects.uploader {
            if goOn { uploader.resume() } else { uploader.resume(throwing: UploadStopped()) }
        }
        if let reader, let result = effects.reader { reader.resume(with: result) }
        if let caller, let outcome { caller.resume(with: outcome) }
    }

    /// `outcome` as the caller gets it: an ``ExchangeFailure`` on a lease becomes ``NotProcessed`` when the
    /// server did not process the request (see ``HTTPSTransport/classify(_:on:)``), else its error.
    private static func classified(
        _ outcome: Result<HTTPResponseHead, any Error>, on lease: ConnectionPool.Lease?
    ) -> Result<HTTPResponseHead, any Error> {
        outcome.mapError { error in
            guard let failure = error as? ExchangeFailure else { return error }
            return lease.map { HTTPSTransport.classify(failure, on: $0) } ?? failure.error
        }
    }
}

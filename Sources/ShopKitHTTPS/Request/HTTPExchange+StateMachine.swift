import NIOCore
import NIOHTTP1

extension HTTPExchange {
    /// One request's life as its caller sees it, as a pure state machine: events in (from the caller's task, the
    /// pool, the upload, the handler), effects out; no I/O, no lock, no continuation (``HTTPExchange`` holds those
    /// and carries the effects out after releasing its lock).
    ///
    /// ```
    /// queued ──▶ waitingForConnection ──▶ headWritten ─────────────▶ headReceived ──▶ streaming ──▶ finished
    ///                                  └▶ uploading(demand:) ──┘        (held)        (caller has it)
    /// any state but the three last ──▶ failed | cancelled
    /// ```
    ///
    /// What it decides, and the wire never does (``HTTPRequestStateMachine`` frames the response in the handler):
    /// - when the caller is resumed: with the response head once the handler hands it over *and* no upload is
    ///   running (a request with a body answers its caller after the body, or once the exchange gave it up), or
    ///   with the error that ended the request first;
    /// - the upload's demand: one chunk in flight at a time, the next one only once the last was written; the
    ///   upload is given up when the response ends first or the request fails;
    /// - the response body's buffer, with watermarks: the connection pauses reads above ``highWatermark`` unread
    ///   bytes and is asked to go on at or below ``lowWatermark``;
    /// - the lease goes back exactly once, however many paths try.
    struct StateMachine {
        /// Above this many unread response-body bytes the connection holds reads back.
        static let highWatermark = 64 * 1024
        /// At or below this many unread bytes a connection that held reads back is asked to go on.
        static let lowWatermark = 16 * 1024

        /// What the request side is doing while the request runs.
        enum RequestSide: Equatable {
            /// The head is written; nothing more to write (a bodiless request, written whole).
            case headWritten
            /// The body is being written.
            case uploading(demand: Bool)
            /// The request's end was handed to the connection; its write completes later.
            case endWriting
            /// The request's end was written, or the upload was given up.
            case done
        }

        /// The response head, from the handler to the caller.
        enum HeadSide {
            case awaiting
            /// Arrived; held until the handler hands it over (the end of its read).
            case received(HTTPResponseHead)
            /// Handed over; the caller waits for the upload to end before taking it.
            case handedOver(HTTPResponseHead)
            /// The caller has it.
            case delivered
        }

        struct Running {
            var request: RequestSide
            var head = HeadSide.awaiting
            var responseEnded = false
        }

        private enum State {
            case queued(waiter: ConnectionPool.WaiterID?)
            case waitingForConnection
            case running(Running)
            case finished
            case failed
            case cancelled
        }

        private var state = State.queued(waiter: nil)
        /// Whether the request has a body to upload.
        private let hasBody: Bool
        /// Whether a body dropped unread resets the request (an HTTP/2 stream) rather than being read to its end.
        private var resetsOnAbandon = false
        private var released = false
        private var uploaderWaiting = false
        private var body = ResponseBody()

        init(hasBody: Bool) {
            self.hasBody = hasBody
        }

        var phase: Phase {
            switch state {
            case .queued: return .queued
            case .waitingForConnection: return .waitingForConnection
            case .finished: return .finished
            case .failed: return .failed
            case .cancelled: return .cancelled
            case .running(let running):
                switch running.head {
                case .awaiting:
                    if case .uploading(let demand) = running.request { return .uploading(demand: demand) }
                    return .headWritten
                case .received, .handedOver: return .headReceived
                case .delivered: return .streaming
                }
            }
        }

        /// Whether the upload runs (it was not given up, and has not handed the request's end on).
        var isUploading: Bool {
            guard case .running(let running) = state, case .uploading = running.request else { return false }
            return true
        }

        /// Whether the response body was ended by its reader's cancellation: what it delivered is not the whole body.
        var bodyWasCancelled: Bool { body.endedByCancellation }

        // MARK: The pool

        /// The pool registered the request as a waiter (`waiter`), or served it at once (nil).
        mutating func queued(waiter: ConnectionPool.WaiterID?) -> Effects {
            switch state {
            case .queued:
                state = .queued(waiter: waiter)
                return .none
            case .cancelled, .failed:
                // Cancelled before the waiter was known: give it up now (nothing happens once it was served).
                var effects = Effects.none
                effects.abandonWaiter = waiter
                return effects
            case .waitingForConnection, .running, .finished:
                return .none  // served before the pool returned
            }
        }

        /// The pool leased a connection: whether to start on it (else give it back unused, reusable).
        mutating func leased() -> Effects {
            guard case .queued = state else {
                return release(reusable: true)
            }
            state = .waitingForConnection
            return .none
        }

        /// The pool could not lease a connection (deadline, connection failure, shutdown, abandoned).
        mutating func leaseFailed(_ error: any Error) -> Effects {
            guard case .queued = state else { return .none }
            state = .failed
            var effects = Effects.none
            effects.caller = .failure(error)
            return effects
        }

        // MARK: The connection's event loop, before the request starts

        /// On the event loop, the leased connection cannot carry the request (no stream could be opened, or a
        /// kept-alive connection was not quiet): the caller gets `error`, the lease goes back not reusable.
        mutating func startFailed(_ error: any Error) -> Effects {
            var effects = release(reusable: false)
            guard case .waitingForConnection = state else { return effects }
            state = .failed
            effects.caller = .failure(error)
            return effects
        }

        /// On the event loop, the request is about to be written on its connection. `resetsOnAbandon`: an HTTP/2
        /// stream, reset when its body is dropped unread.
        mutating func start(resetsOnAbandon: Bool) -> StartAction {
            self.resetsOnAbandon = resetsOnAbandon
            guard case .waitingForConnection = state else { return .abandon }
            state = .running(Running(request: hasBody ? .uploading(demand: true) : .headWritten))
            return .write(upload: hasBody)
        }

        // MARK: The caller

        /// The caller's task was cancelled.
        mutating func cancel() -> Effects {
            var effects = Effects.none
            switch state {
            case .queued(let waiter):
                effects.abandonWaiter = waiter
                effects.caller = .failure(CancellationError())
            case .waitingForConnection:
                effects.caller = .failure(CancellationError())
            case .running(let running):
                effects.cancelHandler = true
                if case .uploading = running.request { stopUpload(&effects) }
                if case .delivered = running.head {
                    finishBody(.failure(CancellationError()), &effects)
                } else {
                    effects.caller = .failure(CancellationError())
                }
            case .finished, .failed, .cancelled:
                return .none
            }
            state = .cancelled
            return effects
        }

        // MARK: The upload

        /// The upload has a chunk: whether to write it now (the exchange may have given the upload up).
        mutating func willWriteChunk() -> Bool {
            guard case .running(var running) = state, case .uploading(demand: true) = running.request else {
                return false
            }
            running.request = .uploading(demand: false)
            state = .running(running)
            return true
        }

        /// The upload waits until the chunk it handed on was written.
        mutating func awaitDemand() -> Demand {
            guard case .running(let running) = state, case .uploading(let demand) = running.request else {
                return .stopped
            }
            if demand { return .ready }
            uploaderWaiting = true
            return .wait
        }

        /// A chunk's write completed (`written`: successfully).
        mutating func chunkWritten(_ written: Bool) -> Effects {
            guard case .running(var running) = state, case .uploading(demand: false) = running.request else {
                return .none
            }
            var effects = Effects.none
            guard written else {
                // The connection failed under the write: it reports why (or the server answered early).
                running.request = .done
                state = .running(running)
                effects.requestFailed = true
                stopUpload(&effects)
                return effects
            }
            running.request = .uploading(demand: true)
            state = .running(running)
            if uploaderWaiting {
                uploaderWaiting = false
                effects.uploader = true
            }
            return effects
        }

        /// The caller's body ended, and its length was right: whether to write the request's end.
        mutating func uploadEnded() -> Bool {
            guard case .running(var running) = state, case .uploading = running.request else { return false }
            running.request = .endWriting
            state = .running(running)
            return true
        }

        /// The request's end was written (`written`), or its write failed. The connection always hears of it (it
        /// ignores news of a request that is over).
        mutating func endWritten(_ written: Bool) -> Effects {
            var effects = Effects.none
            if written { effects.requestSent = true } else { effects.requestFailed = true }
            guard case .running(var running) = state, case .endWriting = running.request else { return effects }
            running.request = .done
            state = .running(running)
            deliverHeadIfDue(&running, &effects)
            return effects
        }

        /// The caller's body threw `error`, or yielded more or less than it declared: the request fails with it,
        /// and the connection abandons the request (a connection holding part of a request is closed).
        mutating func uploadFailed(_ error: any Error) -> Effects {
            guard case .running(let running) = state, case .uploading = running.request else { return .none }
            var effects = Effects.none
            effects.cancelHandler = true
            stopUpload(&effects)
            failCallerOrBody(running, error, &effects)
            state = .failed
            return effects
        }

        // MARK: The connection's handler (on the event loop)

        /// The response head arrived; held until ``handOverHead()``.
        mutating func receiveHead(_ head: HTTPResponseHead) {
            guard case .running(var running) = state, case .awaiting = running.head else { return }
            running.head = .received(head)
            state = .running(running)
        }

        /// The handler hands the head over (at the end of the read that brought it): the caller gets it, unless
        /// the upload is still running.
        mutating func handOverHead() -> Effects {
            guard case .running(var running) = state, case .received(let head) = running.head else { return .none }
            running.head = .handedOver(head)
            var effects = Effects.none
            deliverHeadIfDue(&running, &effects)
            return effects
        }

        /// A chunk of the response body; `paused` is true when the reader is behind (hold reads back).
        mutating func receiveBody(_ chunk: ArraySlice<UInt8>) -> (effects: Effects, paused: Bool) {
            guard case .running = state else { return (.none, false) }
            var effects = Effects.none
            let goOn = body.yield(chunk, &effects)
            return (effects, !goOn)
        }

        /// The response ended: the caller gets the head (once handed over), even while the upload runs. The upload
        /// may still end the request until the caller has taken the response (``callerTookResponse()``); a body that
        /// turns out to be complete then leaves the connection reusable.
        mutating func receiveEnd() -> Effects {
            guard case .running(var running) = state else { return .none }
            var effects = Effects.none
            running.responseEnded = true
            finishBody(.success(()), &effects)
            deliverHeadIfDue(&running, &effects)
            return effects
        }

        /// The caller's task resumed with the response. An upload that has not ended by now, while the response
        /// has, is given up (the connection closes a connection or resets a stream holding part of a request).
        mutating func callerTookResponse() -> Effects {
            guard case .running(var running) = state, running.responseEnded, case .uploading = running.request else {
                return .none
            }
            var effects = Effects.none
            running.request = .done
            effects.requestFailed = true
            stopUpload(&effects)
            deliverHeadIfDue(&running, &effects)
            return effects
        }

        /// The request failed on its connection: the caller gets `callerError` if it does not have the head yet,
        /// else the body reader gets `bodyError`.
        mutating func fail(callerError: any Error, bodyError: any Error) -> Effects {
            guard case .running(let running) = state else { return .none }
            var effects = Effects.none
            if case .uploading = running.request { stopUpload(&effects) }
            switch running.head {
            case .awaiting:
                effects.caller = .failure(callerError)
            case .received(let head), .handedOver(let head):
                // The caller gets the head, then the body's error.
                effects.caller = .success(head)
                finishBody(.failure(bodyError), &effects)
            case .delivered:
                finishBody(.failure(bodyError), &effects)
            }
            state = .failed
            return effects
        }

        /// The connection gives the lease back: once, whatever path tries.
        mutating func release(reusable: Bool) -> Effects {
            guard !released else { return .none }
            released = true
            var effects = Effects.none
            effects.release = reusable
            return effects
        }

        // MARK: The body reader

        /// The reader asks for the next chunk.
        mutating func read() -> (Read, Effects) {
            var effects = Effects.none
            let read = body.take(&effects)
            return (read, effects)
        }

        /// The reader found nothing and waits (after ``read()`` said `.wait`, with no lock released in between it
        /// would say the same): whether it may wait, or must read again.
        mutating func readerWaits() -> Read {
            var effects = Effects.none
            let read = body.take(&effects)
            if case .wait = read { body.readerWaiting = true }
            return read
        }

        /// The reader's task was cancelled: the body ends (the reader gets nil), and a request still running is
        /// abandoned.
        mutating func readerCancelled() -> Effects {
            var effects = Effects.none
            guard body.cancelByReader(&effects) else { return effects }
            if case .running = state {
                effects.cancelHandler = true
                state = .cancelled
            }
            return effects
        }

        /// The reader dropped the body unread: the rest is discarded as it arrives, and a connection holding
        /// reads back goes on. An HTTP/2 stream is reset instead of being read to its end.
        mutating func abandon() -> Effects {
            var effects = Effects.none
            let open = body.abandon(&effects)
            if open, resetsOnAbandon, case .running = state {
                effects.cancelHandler = true
                state = .cancelled
            }
            return effects
        }

        // MARK: Helpers

        /// Gives the caller the head once it was handed over and no upload runs (or the response has ended); the
        /// exchange is finished once the response has ended and the upload too.
        private mutating func deliverHeadIfDue(_ running: inout Running, _ effects: inout Effects) {
            var uploading = false
            if case .uploading = running.request { uploading = true }
            if case .handedOver(let head) = running.head, !uploading || running.responseEnded {
                running.head = .delivered
                effects.caller = .success(head)
            }
            if case .delivered = running.head, running.responseEnded, !uploading {
                state = .finished
            } else {
                state = .running(running)
            }
        }

        private mutating func stopUpload(_ effects: inout Effects) {
            effects.stopUpload = true
            if uploaderWaiting {
                uploaderWaiting = false
                effects.uploader = false
            }
        }

        private mutating func failCallerOrBody(_ running: Running, _ error: any Error, _ effects: inout Effects) {
            if case .delivered = running.head {
                finishBody(.failure(error), &effects)
            } else {
                effects.caller = .failure(error)
            }
        }

        private mutating func finishBody(_ end: Result<Void, any Error>, _ effects: inout Effects) {
            body.finish(end, &effects)
        }
    }
}

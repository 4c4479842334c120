import NIOHTTP1

extension HTTPExchange.StateMachine {
    /// The states a request goes through, for tests and logs.
    enum Phase: Equatable, Sendable {
        /// The pool has the request (as a waiter, or about to serve it).
        case queued
        /// A connection was leased; on its event loop, its carrier is being opened and checked.
        case waitingForConnection
        /// The request's head (for a bodiless request: all of it) is written; no response yet.
        case headWritten
        /// The body is being written; `demand`: the next chunk may be written now.
        case uploading(demand: Bool)
        /// The response head arrived; the caller has not taken it yet (the end of the read, or the upload,
        /// comes first).
        case headReceived
        /// The caller has the head; the body is on its way.
        case streaming
        /// The response ended and the caller has its head (the body may still be unread).
        case finished
        case failed
        case cancelled
    }

    /// What the exchange does after an event: each field is one effect, carried out outside the lock.
    struct Effects {
        /// Resume the caller (waiting in `send`) with this.
        var caller: Result<HTTPResponseHead, any Error>?
        /// Resume the waiting body reader with this.
        var reader: Result<ArraySlice<UInt8>?, any Error>?
        /// Resume the upload waiting for demand: go on (`true`) or stop.
        var uploader: Bool?
        /// Stop the upload task (cancel it).
        var stopUpload = false
        /// Give up the pool's waiter.
        var abandonWaiter: ConnectionPool.WaiterID?
        /// Abandon the request on its connection (closes it, or resets its stream).
        var cancelHandler = false
        /// Tell the connection the request's end will never be written (the upload was given up or failed).
        var requestFailed = false
        /// Tell the connection the request's end was written.
        var requestSent = false
        /// Let the connection's reads through again: the reader caught up.
        var resumeReading = false
        /// Give the lease back to the pool, reusable or not.
        var release: Bool?

        static var none: Effects { Effects() }
    }

    /// How a started request goes on.
    enum StartAction: Equatable {
        /// Start the request on its connection and write it (with `upload`: its head, then the upload task
        /// writes the body).
        case write(upload: Bool)
        /// The caller went away meanwhile: start the request and abandon it at once, so the connection ends
        /// it (and gives the lease back) as for any abandoned request.
        case abandon
    }

    /// What the body reader gets.
    enum Read {
        case chunk(ArraySlice<UInt8>)
        case end
        case error(any Error)
        /// Nothing yet: the reader waits (``Effects/reader`` resumes it).
        case wait
    }

    /// What the upload gets when it asks for demand.
    enum Demand: Equatable {
        case ready
        case stopped
        /// The last chunk is still being written: the upload waits (``Effects/uploader`` resumes it).
        case wait
    }
}

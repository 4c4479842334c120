import NIOConcurrencyHelpers

/// The body chunks of one response: fed on the connection's event loop, read by one task.
///
/// Why not `AsyncThrowingStream`: its storage is generic code in the concurrency runtime, not specialized
/// for our element, and every yield, read and teardown paid for runtime generic-metadata lookups (callgrind:
/// replacing it took a keep-alive request from 228k to 194k instructions). This is the small part of it the
/// transport needs: buffering with watermarks (the producer pauses above ``highWatermark`` unread bytes and is
/// asked to go on through ``onDemand``), one reader, an error thrown once, cancellation of the reading task
/// ending the stream and reporting it through ``onCancel``, and ``abandon()`` for a body dropped unread.
package final class BodyStream: Sendable {
    private typealias Reader = CheckedContinuation<ArraySlice<UInt8>?, any Error>
    private typealias Callback = @Sendable () -> Void

    /// Everything mutable, behind one lock; continuations are resumed and callbacks called after it is released.
    private struct State: Sendable {
        var chunks: [ArraySlice<UInt8>] = []
        var nextChunk = 0
        /// nil while open; `.success` once finished (or cancelled); `.failure` until the error has been thrown once.
        var end: Result<Void, any Error>?
        var waiting: Reader?
        var cancelHandler: Callback?
        var demandHandler: Callback?
        var endHandler: Callback?
        var abandonHandler: Callback?
        /// The stream was ended by the reading task's cancellation (not by the producer).
        var endedByCancellation = false
        /// Bytes yielded and not yet read.
        var bufferedBytes = 0
        /// The producer was told to stop (``yield(_:)`` returned false) and has not been asked to go on yet.
        var producerPaused = false
        /// Nobody will read any more (the body was dropped): chunks are discarded, the producer never pauses.
        var abandoned = false

        /// Takes what the reader gets next.
        mutating func take() -> Taken {
            if nextChunk < chunks.count {
                let chunk = chunks[nextChunk]
                nextChunk += 1
                bufferedBytes -= chunk.count
                if nextChunk == chunks.count {
                    chunks.removeAll(keepingCapacity: chunks.count <= 16)
                    nextChunk = 0
                }
                return .chunk(chunk)
            }
            switch end {
            case nil: return .wait
            case .success: return .end
            case .failure(let error):
                end = .success(())
                return .error(error)
            }
        }

        /// The demand callback to call if a paused producer should go on now.
        mutating func takeDemand() -> Callback? {
            guard producerPaused, bufferedBytes <= BodyStream.lowWatermark else { return nil }
            producerPaused = false
            return demandHandler
        }

        /// Drops what is buffered.
        mutating func discardBuffered() {
            chunks = []
            nextChunk = 0
            bufferedBytes = 0
        }
    }

    private enum Taken {
        case chunk(ArraySlice<UInt8>)
        case end
        case error(any Error)
        case wait
    }

    private let state = NIOLockedValueBox(State())

    /// Above this many unread bytes the producer is asked to pause.
    static let highWatermark = 64 * 1024
    /// At or below this many unread bytes a paused producer is asked to go on.
    static let lowWatermark = 16 * 1024

    package init() {}

    /// Called once if the reading task is cancelled before the stream ended (not after a normal end).
    var onCancel: (@Sendable () -> Void)? {
        get { state.withLockedValue { $0.cancelHandler } }
        set { state.withLockedValue { $0.cancelHandler = newValue } }
    }

    /// Called (outside the lock, on the reader's thread) when a paused producer should go on.
    var onDemand: (@Sendable () -> Void)? {
        get { state.withLockedValue { $0.demandHandler } }
        set { state.withLockedValue { $0.demandHandler = newValue } }
    }

    /// Called once (outside the lock, on the producer's thread) when the producer ends the stream, normally or
    /// with an error; called at once if it has ended already.
    package var onEnd: (@Sendable () -> Void)? {
        get { state.withLockedValue { $0.endHandler } }
        set {
            let ended: Bool = state.withLockedValue { state in
                guard state.end == nil || state.endedByCancellation else { return true }
                state.endHandler = newValue
                return false
            }
            if ended { newValue?() }
        }
    }

    /// Called once (outside the lock) when the body is dropped unread (``abandon()``), before the rest is
    /// discarded: an HTTP/2 exchange resets its stream instead of reading the rest.
    var onAbandon: (@Sendable () -> Void)? {
        get { state.withLockedValue { $0.abandonHandler } }
        set { state.withLockedValue { $0.abandonHandler = newValue } }
    }

    /// Whether the stream was ended because the reading task was cancelled: what it delivered is not the
    /// whole body.
    var wasCancelled: Bool { state.withLockedValue { $0.endedByCancellation } }

    // MARK: Producer (the connection's event loop)

    /// Adds a chunk for the reader (dropped once the stream ended). Returns false when the reader is behind
    /// (more than ``highWatermark`` bytes unread): the producer should pause until ``onDemand`` is called.
    @discardableResult
    func yield(_ chunk: ArraySlice<UInt8>) -> Bool {
        let (reader, goOn): (Reader?, Bool) = state.withLockedValue { state in
            guard state.end == nil, !state.abandoned else { return (nil, true) }
            if let reader = state.waiting {
                state.waiting = nil
                return (reader, true)
            }
            state.chunks.append(chunk)
            state.bufferedBytes += chunk.count
            if state.bufferedBytes > Self.highWatermark { state.producerPaused = true }
            return (nil, !state.producerPaused)
        }
        reader?.resume(returning: chunk)
        return goOn
    }

    /// Ends the stream: the reader gets the buffered chunks, then the end.
    func finish() {
        finish(with: .success(()))
    }

    /// Ends the stream with `error`: the reader gets the buffered chunks, then `error` (once), then the end.
    func finish(throwing error: any Error) {
        finish(with: .failure(error))
    }

    private func finish(with result: Result<Void, any Error>) {
        let (reader, ended): (Reader?, Callback?) = state.withLockedValue { state in
            let ended = state.endHandler
            state.endHandler = nil
            guard state.end == nil else { return (nil, ended) }
            state.end = result
            // A waiting reader means nothing is buffered: it gets the end now (the error is then consumed).
            guard let reader = state.waiting else { return (nil, ended) }
            state.waiting = nil
            if case .failure = result { state.end = .success(()) }
            return (reader, ended)
        }
        ended?()
        switch result {
        case .success: reader?.resume(returning: nil)
        case .failure(let error): reader?.resume(throwing: error)
        }
    }

    // MARK: Consumer (one task)

    /// The next chunk, or nil at the end; throws the stream's error once. Returns nil if the task is cancelled.
    func next() async throws -> ArraySlice<UInt8>? {
        let (taken, demand) = state.withLockedValue { ($0.take(), $0.takeDemand()) }
        demand?()
        switch taken {
        case .chunk(let chunk): return chunk
        case .end: return nil
        case .error(let error): throw error
        case .wait: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: Reader) in
                let (ready, demand): (Taken, Callback?) = state.withLockedValue { state in
                    let taken = state.take()
                    if case .wait = taken { state.waiting = reader }
                    return (taken, state.takeDemand())
                }
                demand?()
                switch ready {
                case .chunk(let chunk): reader.resume(returning: chunk)
                case .end: reader.resume(returning: nil)
                case .error(let error): reader.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// What a reader would get from a stream the producer has ended, taken at once without waiting (for a harness
    /// that runs on one thread, with no reading task): the buffered bytes, and whether the stream ended with an
    /// error. Nil while the stream is open.
    package func takeEnded() -> (bytes: [UInt8], failed: Bool)? {
        state.withLockedValue { state in
            guard let end = state.end else { return nil }
            let bytes = state.chunks[state.nextChunk...].flatMap { $0 }
            state.discardBuffered()
            if case .failure = end {
                state.end = .success(())
                return (bytes, true)
            }
            return (bytes, false)
        }
    }

    /// The reader dropped the body without reading it to the end: the rest is discarded as it arrives (so the
    /// exchange still completes and the connection can be reused), and a paused producer goes on.
    func abandon() {
        let (demand, abandoned): (Callback?, Callback?) = state.withLockedValue { state in
            state.abandoned = true
            state.discardBuffered()
            let abandoned = state.end == nil ? state.abandonHandler : nil
            state.abandonHandler = nil
            defer { state.producerPaused = false }
            return (state.producerPaused ? state.demandHandler : nil, abandoned)
        }
        abandoned?()
        demand?()
    }

    /// The reading task was cancelled: end the stream (the reader gets nil) and report it.
    private func cancel() {
        let (reader, handler): (Reader?, Callback?) = state.withLockedValue { state in
            guard state.end == nil else { return (nil, nil) }
            state.end = .success(())
            state.endedByCancellation = true
            state.discardBuffered()
            state.producerPaused = false
            let reader = state.waiting
            state.waiting = nil
            let handler = state.cancelHandler
            state.cancelHandler = nil
            return (reader, handler)
        }
        reader?.resume(returning: nil)
        handler?()
    }
}

import Foundation

/// The body chunks of one response: fed on the connection's event loop, read by one task.
///
/// Why not `AsyncThrowingStream`: its storage is generic code in the concurrency runtime, not specialized
/// for our element, and every yield, read and teardown paid for runtime generic-metadata lookups (callgrind:
/// replacing it took a keep-alive request from 228k to 194k instructions). This is the small part of it the
/// transport needs: buffering with watermarks (the producer pauses above ``highWatermark`` unread bytes and is
/// asked to go on through ``onDemand``), one reader, an error thrown once, cancellation of the reading task
/// ending the stream and reporting it through ``onCancel``, and ``abandon()`` for a body dropped unread.
package final class BodyStream: @unchecked Sendable {
    // @unchecked Sendable: every mutable stored property is only read or written while `lock` is held;
    // continuations are resumed and `onCancel` is called after the lock is released.
    private let lock = NSLock()
    private var chunks: [ArraySlice<UInt8>] = []
    private var nextChunk = 0
    /// nil while open; `.success` once finished (or cancelled); `.failure` until the error has been thrown once.
    private var end: Result<Void, any Error>?
    private var waiting: CheckedContinuation<ArraySlice<UInt8>?, any Error>?
    private var cancelHandler: (@Sendable () -> Void)?
    private var demandHandler: (@Sendable () -> Void)?
    private var endHandler: (@Sendable () -> Void)?
    /// The stream was ended by the reading task's cancellation (not by the producer).
    private var endedByCancellation = false
    /// Bytes yielded and not yet read.
    private var bufferedBytes = 0
    /// The producer was told to stop (``yield(_:)`` returned false) and has not been asked to go on yet.
    private var producerPaused = false
    /// Nobody will read any more (the body was dropped): chunks are discarded, the producer never pauses.
    private var abandoned = false

    /// Above this many unread bytes the producer is asked to pause.
    static let highWatermark = 64 * 1024
    /// At or below this many unread bytes a paused producer is asked to go on.
    static let lowWatermark = 16 * 1024

    package init() {}

    /// Called once if the reading task is cancelled before the stream ended (not after a normal end).
    var onCancel: (@Sendable () -> Void)? {
        get { lock.withLock { cancelHandler } }
        set { lock.withLock { cancelHandler = newValue } }
    }

    /// Called (outside the lock, on the reader's thread) when a paused producer should go on.
    var onDemand: (@Sendable () -> Void)? {
        get { lock.withLock { demandHandler } }
        set { lock.withLock { demandHandler = newValue } }
    }

    /// Called once (outside the lock, on the producer's thread) when the producer ends the stream, normally or
    /// with an error; called at once if it has ended already.
    package var onEnd: (@Sendable () -> Void)? {
        get { lock.withLock { endHandler } }
        set {
            let ended: Bool = lock.withLock {
                guard end == nil || endedByCancellation else { return true }
                endHandler = newValue
                return false
            }
            if ended { newValue?() }
        }
    }

    /// Whether the stream was ended because the reading task was cancelled: what it delivered is not the
    /// whole body.
    var wasCancelled: Bool { lock.withLock { endedByCancellation } }

    // MARK: Producer (the connection's event loop)

    /// Adds a chunk for the reader (dropped once the stream ended). Returns false when the reader is behind
    /// (more than ``highWatermark`` bytes unread): the producer should pause until ``onDemand`` is called.
    @discardableResult
    func yield(_ chunk: ArraySlice<UInt8>) -> Bool {
        let (reader, goOn): (CheckedContinuation<ArraySlice<UInt8>?, any Error>?, Bool) = lock.withLock {
            guard end == nil, !abandoned else { return (nil, true) }
            if let reader = waiting {
                waiting = nil
                return (reader, true)
            }
            chunks.append(chunk)
            bufferedBytes += chunk.count
            if bufferedBytes > Self.highWatermark { producerPaused = true }
            return (nil, !producerPaused)
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
        let (reader, ended): (CheckedContinuation<ArraySlice<UInt8>?, any Error>?, (@Sendable () -> Void)?) =
            lock.withLock {
                let ended = endHandler
                endHandler = nil
                guard end == nil else { return (nil, ended) }
                end = result
                // A waiting reader means nothing is buffered: it gets the end now (the error is then consumed).
                guard let reader = waiting else { return (nil, ended) }
                waiting = nil
                if case .failure = result { end = .success(()) }
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
        let (taken, demand) = lock.withLock { (take(), takeDemand()) }
        demand?()
        switch taken {
        case .chunk(let chunk): return chunk
        case .end: return nil
        case .error(let error): throw error
        case .wait: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: CheckedContinuation<ArraySlice<UInt8>?, any Error>) in
                let (ready, demand): (Taken, (@Sendable () -> Void)?) = lock.withLock {
                    let taken = take()
                    if case .wait = taken { waiting = reader }
                    return (taken, takeDemand())
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

    private enum Taken {
        case chunk(ArraySlice<UInt8>)
        case end
        case error(any Error)
        case wait
    }

    /// Takes what the reader gets next. Runs under the lock.
    private func take() -> Taken {
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

    /// The reader dropped the body without reading it to the end: the rest is discarded as it arrives (so the
    /// exchange still completes and the connection can be reused), and a paused producer goes on.
    func abandon() {
        let demand: (@Sendable () -> Void)? = lock.withLock {
            abandoned = true
            chunks = []
            nextChunk = 0
            bufferedBytes = 0
            defer { producerPaused = false }
            return producerPaused ? demandHandler : nil
        }
        demand?()
    }

    /// The demand callback to call if a paused producer should go on now. Runs under the lock.
    private func takeDemand() -> (@Sendable () -> Void)? {
        guard producerPaused, bufferedBytes <= Self.lowWatermark else { return nil }
        producerPaused = false
        return demandHandler
    }

    /// The reading task was cancelled: end the stream (the reader gets nil) and report it.
    private func cancel() {
        let (reader, handler): (CheckedContinuation<ArraySlice<UInt8>?, any Error>?, (@Sendable () -> Void)?) =
            lock.withLock {
                guard end == nil else { return (nil, nil) }
                end = .success(())
                endedByCancellation = true
                chunks = []
                nextChunk = 0
                bufferedBytes = 0
                producerPaused = false
                let reader = waiting
                waiting = nil
                let handler = cancelHandler
                cancelHandler = nil
                return (reader, handler)
            }
        reader?.resume(returning: nil)
        handler?()
    }
}

import Foundation
import NIOCore

/// Runs an action once, whichever of several paths (and threads) gets there first, and remembers the value
/// it ran with.
///
/// Used to hand a lease back to the pool: from the connection's event loop when the exchange ends, or from
/// the requesting task on a failure. Synchronous, so the event loop never spawns a task to do it.
final class OnceAction: @unchecked Sendable {
    // @unchecked Sendable: `pending` and `value` are only read and written while `lock` is held; the action
    // itself is @Sendable and runs after the lock is released.
    private let lock = NSLock()
    private var pending: (@Sendable (Bool) -> Void)?
    private var value: Bool?

    init(_ action: @escaping @Sendable (Bool) -> Void) {
        pending = action
    }

    /// Runs the action with `value` if it has not run yet.
    func run(_ value: Bool) {
        let action: (@Sendable (Bool) -> Void)? = lock.withLock {
            defer { pending = nil }
            if pending != nil { self.value = value }
            return pending
        }
        action?(value)
    }

    /// The value the action ran with, or nil if it has not run yet.
    var outcome: Bool? { lock.withLock { value } }
}

/// A response body stream that hands its connection back to the pool before it reports its end, so a
/// caller that read a body to the end finds the connection reusable at once.
struct ResponseBodySequence: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    let stream: BodyStream
    /// Abandons the stream when the last copy of this sequence and its iterators goes away.
    let reader: Reader
    /// Succeeds with whether the connection may be reused.
    let reusable: EventLoopFuture<Bool>
    let release: OnceAction

    struct AsyncIterator: AsyncIteratorProtocol {
        let base: BodyStream
        let reader: Reader
        let reusable: EventLoopFuture<Bool>
        let release: OnceAction

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let chunk = try await base.next() else {
                // Normally the event loop handed the connection back before it ended the stream.
                let reusable: Bool
                if let outcome = release.outcome {
                    reusable = outcome
                } else {
                    reusable = (try? await self.reusable.get()) ?? false
                    release.run(reusable)
                }
                // A stream cut short by the reader's cancellation is not a complete body.
                if !reusable && Task.isCancelled { throw CancellationError() }
                return nil
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream, reader: reader, reusable: reusable, release: release)
    }

    /// Lives as long as anyone can still read the body; when it goes, the unread rest is abandoned.
    final class Reader: Sendable {
        let stream: BodyStream
        init(_ stream: BodyStream) { self.stream = stream }
        deinit { stream.abandon() }
    }

    init(stream: BodyStream, reusable: EventLoopFuture<Bool>, release: OnceAction) {
        self.stream = stream
        self.reader = Reader(stream)
        self.reusable = reusable
        self.release = release
    }
}

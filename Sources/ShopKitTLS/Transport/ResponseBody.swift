import NIOCore

/// Runs an async action once, whichever of several paths gets there first.
actor OnceAction {
    private var pending: (@Sendable (Bool) async -> Void)?

    init(_ action: @escaping @Sendable (Bool) async -> Void) {
        pending = action
    }

    /// Runs the action with `value` if it has not run yet.
    func run(_ value: Bool) async {
        guard let action = pending else { return }
        pending = nil
        await action(value)
    }
}

/// A response body stream that hands its connection back to the pool before it reports its end, so a
/// caller that read a body to the end finds the connection reusable at once.
struct ResponseBodySequence: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    let stream: AsyncThrowingStream<ArraySlice<UInt8>, any Error>
    /// Succeeds with whether the connection may be reused.
    let reusable: EventLoopFuture<Bool>
    let release: OnceAction

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<ArraySlice<UInt8>, any Error>.AsyncIterator
        let reusable: EventLoopFuture<Bool>
        let release: OnceAction

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let chunk = try await base.next() else {
                let reusable = (try? await reusable.get()) ?? false
                await release.run(reusable)
                // A stream cut short by the reader's cancellation is not a complete body.
                if !reusable && Task.isCancelled { throw CancellationError() }
                return nil
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), reusable: reusable, release: release)
    }
}

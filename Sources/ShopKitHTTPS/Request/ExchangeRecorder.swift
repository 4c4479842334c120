import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// A request that records what a connection's handler reports about it, for tests and fuzz targets, which drive
/// a handler on one thread with no caller (``HTTPExchange`` is the request the transport runs). It checks the
/// handler's side of ``ExchangeEvents``: a second answer to the head stops the process.
package final class ExchangeRecorder: ExchangeEvents {
    /// The id the harness starts the request with.
    package let id: HTTP1ConnectionStateMachine.RequestID
    package let limits: HTTPRequestStateMachine.Limits
    package let requestKeepAlive: Bool
    package let isHead: Bool
    /// Completed with the head when the handler hands it over, or failed with the ``ExchangeFailure`` that came
    /// first.
    private let head: EventLoopPromise<HTTPResponseHead>
    private let released: @Sendable (_ reusable: Bool) -> Void
    private let bodyEnded: @Sendable () -> Void
    private let state = NIOLockedValueBox(Recorded())

    private struct Recorded: Sendable {
        var heldHead: HTTPResponseHead?
        var answered = false
        var body: [UInt8] = []
        var end: Result<Void, any Error>?
    }

    /// A request whose head (or failure) completes `head`; `released` hears each release, `bodyEnded` the end of
    /// the body (normal or failed).
    package init(
        id: HTTP1ConnectionStateMachine.RequestID, limits: HTTPRequestStateMachine.Limits, requestKeepAlive: Bool = true,
        isHead: Bool = false, head: EventLoopPromise<HTTPResponseHead>,
        released: @escaping @Sendable (_ reusable: Bool) -> Void, bodyEnded: @escaping @Sendable () -> Void = {}
    ) {
        self.id = id
        self.limits = limits
        self.requestKeepAlive = requestKeepAlive
        self.isHead = isHead
        self.head = head
        self.released = released
        self.bodyEnded = bodyEnded
    }

    /// The body bytes received so far.
    package var receivedBody: [UInt8] { state.withLockedValue { $0.body } }

    /// The whole body once it ended; throws the error it ended with. Nil while it is open.
    package func endedBody() throws -> [UInt8]? {
        let (body, end) = state.withLockedValue { ($0.body, $0.end) }
        guard let end else { return nil }
        try end.get()
        return body
    }

    package func receiveHead(_ head: HTTPResponseHead) {
        state.withLockedValue { $0.heldHead = head }
    }

    package func handOverHead() {
        guard let held = state.withLockedValue({ $0.heldHead }) else { return }
        answer(.success(held))
    }

    package func receiveBody(_ chunk: ArraySlice<UInt8>) -> Bool {
        state.withLockedValue { $0.end == nil ? $0.body += chunk : () }
        return true
    }

    package func receiveEnd() {
        end(.success(()))
    }

    package func fail(_ failure: ExchangeFailure) {
        if !state.withLockedValue({ $0.answered }) { answer(.failure(failure)) }
        end(.failure(failure.error))
    }

    package func release(reusable: Bool) {
        released(reusable)
    }

    private func answer(_ result: Result<HTTPResponseHead, any Error>) {
        let again = state.withLockedValue { recorded in
            defer { recorded.answered = true }
            return recorded.answered
        }
        precondition(!again, "request \(id.raw)'s response head was answered twice")
        head.completeWith(result)
    }

    private func end(_ result: Result<Void, any Error>) {
        let first = state.withLockedValue { recorded in
            guard recorded.end == nil else { return false }
            recorded.end = result
            return true
        }
        if first { bodyEnded() }
    }
}

/// The response body as the caller reads it: the exchange's body, and its abandonment when the last copy of the
/// sequence goes away unread.
///
/// The connection goes back to the pool on the event loop, decided by the exchange's state machine, before
/// the body reports its end: a caller that read a body to the end finds the connection reusable at once.
struct ResponseBodySequence: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    /// Abandons the body when the last copy of this sequence and its iterators goes away.
    let reader: Reader

    struct AsyncIterator: AsyncIteratorProtocol {
        let reader: Reader

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let chunk = try await reader.exchange.next() else {
                // A body cut short by the reader's cancellation is not a complete body.
                if reader.exchange.bodyWasCancelled { throw CancellationError() }
                return nil
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reader: reader)
    }

    /// Lives as long as anyone can still read the body; when it goes, the unread rest is abandoned.
    final class Reader: Sendable {
        let exchange: HTTPExchange
        init(_ exchange: HTTPExchange) { self.exchange = exchange }
        deinit { exchange.abandon() }
    }

    init(exchange: HTTPExchange) {
        self.reader = Reader(exchange)
    }
}

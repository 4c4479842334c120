import NIOConcurrencyHelpers
import Foundation
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

@Suite(.timeLimit(.minutes(3))) struct BodyStreamTests {
    struct Boom: Error, Equatable {}

    final class Flag: Sendable {
        private let value = NIOLockedValueBox(0)
        func bump() { value.withLockedValue { $0 += 1 } }
        var count: Int { value.withLockedValue { $0 } }
    }

    @Test func deliversBufferedChunksInOrderThenTheEnd() async throws {
        let stream = BodyStream()
        stream.yield([1, 2])
        stream.yield([3])
        stream.finish()
        stream.yield([9])  // after the end: dropped
        #expect(try await stream.next() == [1, 2])
        #expect(try await stream.next() == [3])
        #expect(try await stream.next() == nil)
        #expect(try await stream.next() == nil)
    }

    @Test func aWaitingReaderGetsTheNextChunk() async throws {
        let stream = BodyStream()
        async let first = stream.next()
        stream.yield([7])
        #expect(try await first == [7])
        stream.finish()
        #expect(try await stream.next() == nil)
    }

    @Test func theErrorIsThrownOnceAfterTheBufferedChunks() async throws {
        let stream = BodyStream()
        stream.yield([1])
        stream.finish(throwing: Boom())
        #expect(try await stream.next() == [1])
        await #expect(throws: Boom.self) { try await stream.next() }
        #expect(try await stream.next() == nil)
    }

    @Test func cancellingTheReaderEndsTheStreamAndReportsIt() async throws {
        let stream = BodyStream()
        let cancelled = Flag()
        stream.onCancel = { cancelled.bump() }
        let reader = Task { try await stream.next() }
        reader.cancel()
        #expect(try await reader.value == nil)
        #expect(cancelled.count == 1)
        stream.yield([1])
        stream.finish()
        #expect(try await stream.next() == nil)
        #expect(cancelled.count == 1)
    }

    @Test func aNormalEndIsNotReportedAsCancellation() async throws {
        let stream = BodyStream()
        let cancelled = Flag()
        stream.onCancel = { cancelled.bump() }
        stream.finish()
        let reader = Task { try await stream.next() }
        reader.cancel()
        #expect(try await reader.value == nil)
        #expect(cancelled.count == 0)
    }

    @Test func theProducerPausesAboveTheHighWatermarkAndIsAskedToGoOnOnceDrained() async throws {
        let stream = BodyStream()
        let demanded = Flag()
        stream.onDemand = { demanded.bump() }
        let chunk = ArraySlice([UInt8](repeating: 1, count: 40 * 1024))
        #expect(stream.yield(chunk))
        #expect(!stream.yield(chunk))  // 80 KiB unread: above the high watermark
        #expect(try await stream.next()?.count == chunk.count)
        #expect(demanded.count == 0)  // 40 KiB unread: above the low watermark
        #expect(try await stream.next()?.count == chunk.count)
        #expect(demanded.count == 1)
        #expect(stream.yield(chunk))
    }

    @Test func abandoningDiscardsTheRestAndUnpausesTheProducer() async throws {
        let stream = BodyStream()
        let demanded = Flag()
        stream.onDemand = { demanded.bump() }
        let chunk = ArraySlice([UInt8](repeating: 1, count: 80 * 1024))
        #expect(!stream.yield(chunk))
        stream.abandon()
        #expect(demanded.count == 1)
        #expect(stream.yield(chunk))
        stream.finish()
        #expect(try await stream.next() == nil)
    }
}

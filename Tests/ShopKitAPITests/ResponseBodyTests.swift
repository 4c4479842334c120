import Foundation
import OpenAPIRuntime
import Testing

@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct ResponseBodyTests {
    /// Issue 13: a GET body is buffered once between transport and decoder. The dedup decorator hands each waiter
    /// an `HTTPBody` of one chunk over its shared buffer; the client collects it without copying.
    @Test func aSingleChunkBodyIsCollectedWithoutACopy() async throws {
        let shared = [UInt8](repeating: 0x61, count: 1 << 16)
        let collected = try await HTTPBody(shared).collectBounded(limit: 1 << 20)
        #expect(collected == shared)
        let sharedAddress = shared.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        let collectedAddress = collected.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        #expect(sharedAddress == collectedAddress)
    }

    @Test func severalChunksAreJoinedAndTheLimitHolds() async throws {
        let body = HTTPBody(AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield([1, 2])
            continuation.yield([3])
            continuation.finish()
        }, length: .unknown, iterationBehavior: .single)
        #expect(try await body.collectBounded(limit: 3) == [1, 2, 3])
        let large = HTTPBody(AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield([1, 2])
            continuation.yield([3, 4])
            continuation.finish()
        }, length: .unknown, iterationBehavior: .single)
        await #expect(throws: ResponseBodyTooLargeError(limit: 3)) { try await large.collectBounded(limit: 3) }
    }
}

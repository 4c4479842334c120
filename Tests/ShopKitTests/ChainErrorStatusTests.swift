import Foundation
import Testing
import TestSupport

@testable import ShopKit

/// Issue 16 item 14: the README promises that a large or broken error page never hides a 401 or a 503. These
/// run it through the composed chain (retry → auth → dedup over a stub), where the dedup decorator buffers the
/// shared GET body and used to turn such a page into a size-limit or transport error.
@Suite(.timeLimit(.minutes(3))) struct ChainErrorStatusTests {
    struct Me: APIRequest {
        typealias Response = NoContent
        var path: String { "/me" }
    }

    /// A transport error a retry could fix (not `RetryClassifiableError`): a dropped connection.
    struct DroppedConnection: Error {}

    /// 1 KiB limit, so a 4 KiB error page is "large"; real sleeper and jitter replaced.
    static func client(
        _ stub: StubTransport, store: InMemoryTokenStore, refresher: CountingRefresher, sleeper: RecordingSleeper
    ) -> APIClient {
        ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://shop.example/api")!,
            configuration: ShopKitConfiguration(
                auth: .init(tokenStore: store, tokenRefresher: refresher), maxResponseBodyBytes: 1024,
                sleeper: sleeper, randomSource: FixedRandomSource()),
            transport: stub)
    }

    static let largePage = Data(String(repeating: "<p>Service unavailable</p>", count: 160).utf8)  // > 4 KiB

    @Test func a503WithALargePageIsRetried() async throws {
        let stub = StubTransport(replies: [.status(503, body: Self.largePage, streamed: true), .status(204)])
        let sleeper = RecordingSleeper()
        let client = Self.client(
            stub, store: InMemoryTokenStore(AuthTokens(accessToken: "t")),
            refresher: CountingRefresher(returning: AuthTokens(accessToken: "u")), sleeper: sleeper)
        #expect(try await client.send(Me()) == NoContent())
        #expect(await stub.requests.count == 2)
        #expect(await sleeper.durations == [.milliseconds(200)])
    }

    @Test func a401WithALargePageRefreshesTheToken() async throws {
        let stub = StubTransport { request in
            request.authorization == "Bearer fresh" ? .status(204) : .status(401, body: Self.largePage, streamed: true)
        }
        let refresher = CountingRefresher(returning: AuthTokens(accessToken: "fresh"))
        let store = InMemoryTokenStore(AuthTokens(accessToken: "stale", refreshToken: "r"))
        let client = Self.client(stub, store: store, refresher: refresher, sleeper: RecordingSleeper())
        #expect(try await client.send(Me()) == NoContent())
        #expect(await refresher.count == 1)
        #expect(await stub.requests.map(\.authorization) == ["Bearer stale", "Bearer fresh"])
        #expect(await store.tokens == AuthTokens(accessToken: "fresh"))
    }

    @Test func a404WhoseBodyBreaksOffIsNotFoundAndNotRetried() async throws {
        let stub = StubTransport(replies: [
            .broken(404, body: Data(#"{"message":"no such"#.utf8), failure: DroppedConnection())
        ])
        let sleeper = RecordingSleeper()
        let client = Self.client(
            stub, store: InMemoryTokenStore(AuthTokens(accessToken: "t")),
            refresher: CountingRefresher(returning: AuthTokens(accessToken: "u")), sleeper: sleeper)
        await #expect(throws: APIError.notFound) { try await client.send(Me()) }
        #expect(await stub.requests.count == 1)
        #expect(await sleeper.durations.isEmpty)
    }

    /// The limit still holds for the body that is decoded: a large 2xx body fails, unretried.
    @Test func aLarge2xxBodyStillFailsWithTheSizeLimit() async throws {
        let stub = StubTransport(replies: [.status(200, body: Self.largePage, streamed: true)])
        let sleeper = RecordingSleeper()
        let client = Self.client(
            stub, store: InMemoryTokenStore(AuthTokens(accessToken: "t")),
            refresher: CountingRefresher(returning: AuthTokens(accessToken: "u")), sleeper: sleeper)
        await #expect(throws: APIError.transport(ResponseBodyTooLargeError(limit: 1024))) {
            try await client.send(Me())
        }
        #expect(await stub.requests.count == 1)
    }
}

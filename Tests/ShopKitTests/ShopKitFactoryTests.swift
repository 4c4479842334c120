import Foundation
import Testing
import TestSupport

@testable import ShopKit

@Suite struct ShopKitFactoryTests {
    static func configuration(
        store: InMemoryTokenStore, refresher: CountingRefresher, sleeper: RecordingSleeper,
        observer: RecordingSignOutObserver? = nil
    ) -> ShopKitConfiguration {
        ShopKitConfiguration(
            baseURL: URL(string: "https://shop.example/api")!, tokenStore: store, tokenRefresher: refresher,
            signOutObserver: observer, sleeper: sleeper, randomSource: FixedRandomSource())
    }

    struct Me: APIRequest {
        typealias Response = NoContent
        var path: String { "/me" }
    }

    @Test func chainIsRetryThenAuthThenDedup() async throws {
        let stub = StubTransport(replies: [.status(503), .status(401), .status(204)])
        let store = InMemoryTokenStore(AuthTokens(accessToken: "old"))
        let refresher = CountingRefresher(returning: AuthTokens(accessToken: "new"))
        let sleeper = RecordingSleeper()
        let client = ShopKitFactory.makeAPIClient(
            Self.configuration(store: store, refresher: refresher, sleeper: sleeper), transport: stub)

        #expect(try await client.send(Me()) == NoContent())
        // 503 is retried by the outer decorator; the retry's 401 is recovered by auth with one refresh.
        #expect(await stub.requests.map(\.authorization) == ["Bearer old", "Bearer old", "Bearer new"])
        #expect(await sleeper.durations == [.milliseconds(200)])
        #expect(await refresher.count == 1)
    }

    @Test func unauthorizedIsFinalAndNotRetried() async throws {
        let stub = StubTransport(replies: [.status(401)])
        let store = InMemoryTokenStore(AuthTokens(accessToken: "old"))
        let refresher = CountingRefresher(returning: AuthTokens(accessToken: "new"))
        let sleeper = RecordingSleeper()
        let observer = RecordingSignOutObserver()
        let client = ShopKitFactory.makeAPIClient(
            Self.configuration(store: store, refresher: refresher, sleeper: sleeper, observer: observer), transport: stub)

        await #expect(throws: APIError.unauthorized) { try await client.send(Me()) }
        #expect(await stub.requests.count == 2)
        #expect(await sleeper.durations.isEmpty)
        #expect(await observer.reasons == [.rejectedAfterReplay])
        #expect(await store.tokens == nil)
    }

    struct Catalog: APIRequest {
        typealias Response = NoContent
        var path: String { "/catalog" }
        var requiresAuth: Bool { false }
    }

    @Test func publicEndpointsGoOutWithoutTokenOrMarker() async throws {
        let stub = StubTransport(replies: [.status(204)])
        let client = ShopKitFactory.makeAPIClient(
            Self.configuration(
                store: InMemoryTokenStore(AuthTokens(accessToken: "t")),
                refresher: CountingRefresher(returning: AuthTokens(accessToken: "u")), sleeper: RecordingSleeper()),
            transport: stub)
        _ = try await client.send(Catalog())
        let sent = try #require(await stub.requests.first)
        #expect(sent.authorization == nil)
        #expect(sent.request.headerFields[.shopKitSkipAuth] == nil)
    }
}

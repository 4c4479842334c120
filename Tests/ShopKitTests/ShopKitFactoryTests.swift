import Foundation
import Testing
import TestSupport

@testable import ShopKit

@Suite(.timeLimit(.minutes(3))) struct ShopKitFactoryTests {
    static let baseURL = URL(string: "https://shop.example/api")!

    static func configuration(
        store: any TokenStore, refresher: any TokenRefresher = CountingRefresher(returning: AuthTokens(accessToken: "new")),
        sleeper: RecordingSleeper, observer: RecordingSignOutObserver? = nil
    ) -> ShopKitConfiguration {
        ShopKitConfiguration(
            auth: .init(tokenStore: store, tokenRefresher: refresher, signOutObserver: observer), sleeper: sleeper,
            randomSource: FixedRandomSource())
    }

    /// `makeAPIClient` with the test base URL.
    static func client(_ configuration: ShopKitConfiguration, transport: any ClientTransport) -> APIClient {
        ShopKitFactory.makeAPIClient(baseURL: baseURL, configuration: configuration, transport: transport)
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
        let client = Self.client(
            Self.configuration(store: store, refresher: refresher, sleeper: sleeper), transport: stub)

        #expect(try await client.send(Me()) == NoContent())
        // 503 is retried by the outer decorator; the retry's 401 is recovered by auth with one refresh.
        #expect(await stub.requests.map(\.authorization) == ["Bearer old", "Bearer old", "Bearer new"])
        #expect(await sleeper.durations == [.milliseconds(200)])
        #expect(await refresher.count == 1)
    }

    @Test func chainIsComposedRetryAuthDedupOverTheBase() throws {
        let stub = StubTransport(replies: [])
        let configuration = Self.configuration(
            store: InMemoryTokenStore(), refresher: CountingRefresher(returning: AuthTokens(accessToken: "n")),
            sleeper: RecordingSleeper())
        let client = ShopKitFactory.makeAPIClient(baseURL: URL(string: "https://api.example")!, configuration: configuration, transport: stub)
        #expect(client.middlewares.count == 3)
        #expect(client.middlewares[0] is RetryMiddleware)
        #expect(client.middlewares[1] is AuthenticationMiddleware)
        #expect(client.middlewares[2] is DeduplicationMiddleware)
        #expect(client.transport as? StubTransport === stub)
    }

    @Test func identicalGETsWithDifferentTokensAreNeverMerged() async throws {
        let gate = Gate()
        let stub = StubTransport { request in
            if request.authorization == "Bearer first" { try await gate.wait() }
            return .status(204)
        }
        let store = InMemoryTokenStore(AuthTokens(accessToken: "first"))
        let client = Self.client(
            Self.configuration(
                store: store, refresher: CountingRefresher(returning: AuthTokens(accessToken: "n")),
                sleeper: RecordingSleeper()),
            transport: stub)

        let held = Task { try await client.send(Me()) }
        try await stub.arrivals.wait(until: 1)  // the first user's GET is in flight under dedup
        try await store.saveTokens(AuthTokens(accessToken: "second"))  // another user signs in
        #expect(try await client.send(Me()) == NoContent())  // not merged with the held one: it completes alone
        await gate.open()
        #expect(try await held.value == NoContent())
        #expect(await stub.requests.map(\.authorization) == ["Bearer first", "Bearer second"])
    }

    @Test func unauthorizedIsFinalAndNotRetried() async throws {
        let stub = StubTransport(replies: [.status(401)])
        let store = InMemoryTokenStore(AuthTokens(accessToken: "old"))
        let refresher = CountingRefresher(returning: AuthTokens(accessToken: "new"))
        let sleeper = RecordingSleeper()
        let observer = RecordingSignOutObserver()
        let client = Self.client(
            Self.configuration(store: store, refresher: refresher, sleeper: sleeper, observer: observer), transport: stub)

        await #expect(throws: APIError.unauthorized) { try await client.send(Me()) }
        #expect(await stub.requests.count == 2)
        #expect(await sleeper.durations.isEmpty)
        #expect(await observer.reasons == [.rejectedAfterReplay])
        #expect(await store.tokens == nil)
    }

    /// A token store that fails every load with `error`, counting the loads.
    actor FailingTokenStore: TokenStore {
        let error: CredentialError
        private(set) var loads = 0
        init(_ error: CredentialError) { self.error = error }
        func loadTokens() async throws -> AuthTokens? {
            loads += 1
            throw error
        }
        func saveTokens(_ tokens: AuthTokens) async throws {}
        func clearTokens() async throws {}
    }

    /// The store's error that `body` ended with, as the client reports it (`APIError.transport`).
    static func storeFailure(_ body: () async throws -> Me.Response) async -> CredentialError? {
        do {
            _ = try await body()
            return nil
        } catch APIError.transport(let cause) {
            return cause as? CredentialError
        } catch {
            return nil
        }
    }

    /// A store failure that another attempt cannot fix (here a denied presence check, which would prompt again
    /// on every attempt) goes to the caller after one store read, with no retry and nothing sent.
    @Test(arguments: [
        CredentialError.accessDenied("the user did not confirm presence"), .wrongPassphrase, .corrupt("tampered"),
        .locked("locked"),
    ])
    func finalStoreFailuresAreNotRetried(_ failure: CredentialError) async throws {
        let stub = StubTransport(replies: [.status(204)])
        let store = FailingTokenStore(failure)
        let sleeper = RecordingSleeper()
        let client = Self.client(Self.configuration(store: store, sleeper: sleeper), transport: stub)

        #expect(await Self.storeFailure { try await client.send(Me()) } == failure)
        #expect(await store.loads == 1)
        #expect(await sleeper.durations.isEmpty)
        #expect(await stub.requests.isEmpty)
    }

    /// An unavailable Secret Service may answer the next attempt: retried up to the policy's attempts.
    @Test func anUnavailableStoreIsRetried() async throws {
        let store = FailingTokenStore(.unavailable("timed out"))
        let sleeper = RecordingSleeper()
        let client = Self.client(
            Self.configuration(store: store, sleeper: sleeper), transport: StubTransport(replies: [.status(204)]))

        #expect(await Self.storeFailure { try await client.send(Me()) } == .unavailable("timed out"))
        #expect(await store.loads == RetryPolicy.default.maxAttempts)
        #expect(await sleeper.durations.count == RetryPolicy.default.maxAttempts - 1)
    }

    struct Catalog: APIRequest {
        typealias Response = NoContent
        var path: String { "/catalog" }
        var requiresAuth: Bool { false }
    }

    @Test func publicEndpointsGoOutWithoutTokenOrMarker() async throws {
        let stub = StubTransport(replies: [.status(204)])
        let client = Self.client(
            Self.configuration(
                store: InMemoryTokenStore(AuthTokens(accessToken: "t")),
                refresher: CountingRefresher(returning: AuthTokens(accessToken: "u")), sleeper: RecordingSleeper()),
            transport: stub)
        _ = try await client.send(Catalog())
        let sent = try #require(await stub.requests.first)
        #expect(sent.authorization == nil)
        // Nothing ShopKit-internal reaches the wire: the request carries only what the client always sets.
        #expect(sent.request.headerFields.map(\.name) == [.accept])
    }

    struct SneakyMe: APIRequest {
        typealias Response = NoContent
        var path: String { "/me" }
        var headerFields: HTTPFields { [HTTPField.Name("X-ShopKit-Skip-Auth")!: "1"] }
    }

    /// A header named like the removed skip marker is an ordinary header: the request is still authenticated,
    /// and a signed-out user's request is still refused before anything is sent.
    @Test func aHeaderNamedLikeTheOldSkipMarkerIsNotASkipRequest() async throws {
        let stub = StubTransport(replies: [.status(204)])
        let client = Self.client(
            Self.configuration(store: InMemoryTokenStore(AuthTokens(accessToken: "t")), sleeper: RecordingSleeper()),
            transport: stub)
        _ = try await client.send(SneakyMe())
        #expect(await stub.requests.first?.authorization == "Bearer t")

        let signedOut = Self.client(
            Self.configuration(store: InMemoryTokenStore(), sleeper: RecordingSleeper()), transport: stub)
        await #expect(throws: APIError.unauthorized) { try await signedOut.send(SneakyMe()) }
        #expect(await stub.requests.count == 1)
    }

    /// Retry and dedup alone need no credentials: no auth decorator, no token, and a 503 is still retried.
    @Test func chainWithoutAuthIsRetryThenDedup() async throws {
        let stub = StubTransport(replies: [.status(503), .status(204)])
        let sleeper = RecordingSleeper()
        let configuration = ShopKitConfiguration(sleeper: sleeper, randomSource: FixedRandomSource())
        let client = Self.client(configuration, transport: stub)
        #expect(client.middlewares.count == 2)
        #expect(client.middlewares[0] is RetryMiddleware)
        #expect(client.middlewares[1] is DeduplicationMiddleware)
        #expect(client.transport as? StubTransport === stub)

        #expect(try await client.send(Me()) == NoContent())
        #expect(await stub.requests.map(\.authorization) == [nil, nil])
        #expect(await sleeper.durations == [.milliseconds(200)])
    }

    @Test func middlewaresAreRetryThenAuthThenDedup() {
        let withAuth = ShopKitFactory.makeMiddlewares(
            Self.configuration(store: InMemoryTokenStore(), sleeper: RecordingSleeper()))
        #expect(withAuth.count == 3)
        #expect(withAuth[0] is RetryMiddleware)
        #expect(withAuth[1] is AuthenticationMiddleware)
        #expect(withAuth[2] is DeduplicationMiddleware)
        let withoutAuth = ShopKitFactory.makeMiddlewares(ShopKitConfiguration())
        #expect(withoutAuth.count == 2)
        #expect(withoutAuth[0] is RetryMiddleware)
        #expect(withoutAuth[1] is DeduplicationMiddleware)
    }
}

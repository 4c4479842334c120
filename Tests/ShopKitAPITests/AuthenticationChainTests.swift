import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitAPI

let oldTokens = AuthTokens(accessToken: "old-access", refreshToken: "old-refresh")
let newTokens = AuthTokens(accessToken: "new-access", refreshToken: "new-refresh")

@Suite(.timeLimit(.minutes(3))) struct AuthenticationChainTests {
    func get(_ transport: some ClientTransport, path: String = "/me", headers: HTTPFields = [:]) async throws -> HTTPResponse {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path, headerFields: headers)
        return try await transport.send(request, body: nil, baseURL: baseURL, operationID: "test").0
    }

    /// 200 for the new token, 401 for anything else.
    static let acceptsOnlyNewToken: StubTransport.Handler = { request in
        request.authorization == "Bearer new-access" ? .status(200) : .status(401)
    }

    @Test func attachesTheBearerToken() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let auth = authenticating(stub, store: InMemoryTokenStore(oldTokens), refresher: CountingRefresher(returning: newTokens))
        #expect(try await get(auth, headers: [.authorization: "Bearer forged"]).status.code == 200)
        #expect(await stub.requests.first?.authorization == "Bearer old-access")
    }

    /// What `APIClient` does for a request with `requiresAuth == false`: the task-local skip, never a header.
    @Test func requestsSkippedByTheClientPassThroughWithoutTokenOrMarker() async throws {
        let stub = StubTransport(replies: [.status(401)])
        let refresher = CountingRefresher(returning: newTokens)
        let auth = authenticating(stub, store: InMemoryTokenStore(oldTokens), refresher: refresher)
        let status = try await AuthenticationRequirement.$skipsCurrentRequest.withValue(true) {
            try await get(auth, headers: [.accept: "application/json"]).status.code
        }
        #expect(status == 401)
        let sent = try #require(await stub.requests.first)
        #expect(sent.authorization == nil)
        #expect(sent.request.headerFields.map(\.name) == [.accept])  // nothing ShopKit-internal was added
        #expect(await refresher.count == 0)
    }

    /// The old side channel is gone: a header named like the old marker is just a header, and auth still applies.
    @Test func aHeaderNamedLikeTheOldSkipMarkerDoesNotSkipAuth() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let auth = authenticating(stub, store: InMemoryTokenStore(oldTokens), refresher: CountingRefresher(returning: newTokens))
        let marker = HTTPField.Name("X-ShopKit-Skip-Auth")!
        #expect(try await get(auth, headers: [marker: "1"]).status.code == 200)
        #expect(await stub.requests.first?.authorization == "Bearer old-access")
        let signedOut = authenticating(stub, store: InMemoryTokenStore(nil), refresher: CountingRefresher(returning: newTokens))
        await #expect(throws: APIError.unauthorized) { try await get(signedOut, headers: [marker: "1"]) }
        #expect(await stub.requests.count == 1)
    }

    @Test func signedOutUserSendsNothing() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let auth = authenticating(stub, store: InMemoryTokenStore(nil), refresher: CountingRefresher(returning: newTokens))
        await #expect(throws: APIError.unauthorized) { try await get(auth) }
        #expect(await stub.requests.isEmpty)
    }

    @Test func fiftyConcurrent401sShareOneRefreshAndAllReplay() async throws {
        let callers = 50
        let arrivals = EventCounter()
        let stub = StubTransport { request in
            if request.authorization == "Bearer new-access" { return .status(200) }
            await arrivals.increment()
            try await arrivals.wait(until: callers)  // every caller holds the old token before any 401 goes out
            return .status(401)
        }
        let store = CountingTokenStore(oldTokens)
        let refresher = CountingRefresher(returning: newTokens)
        let auth = authenticating(stub, store: store, refresher: refresher)

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<callers { group.addTask { try await get(auth).status.code } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: callers))
        #expect(await refresher.count == 1)
        let sent = await stub.requests
        #expect(sent.filter { $0.authorization == "Bearer old-access" }.count == callers)
        #expect(sent.filter { $0.authorization == "Bearer new-access" }.count == callers)
        #expect(await store.tokens == newTokens)
        #expect(await store.saveCount == 1)
    }

    @Test func stale401AfterFinishedRefreshReplaysWithoutRefreshing() async throws {
        let gate = Gate()
        let stub = StubTransport { request in
            if request.authorization == "Bearer new-access" { return .status(200) }
            if request.request.path == "/slow" { try await gate.wait() }
            return .status(401)
        }
        let refresher = CountingRefresher(returning: newTokens)
        let auth = authenticating(stub, store: InMemoryTokenStore(oldTokens), refresher: refresher)

        let slow = Task { try await get(auth, path: "/slow") }
        try await stub.arrivals.wait(until: 1)  // sent with the old token, held
        #expect(try await get(auth, path: "/fast").status.code == 200)  // 401 → refresh → replay
        #expect(await refresher.count == 1)

        await gate.open()  // the held request now gets its (stale) 401
        #expect(try await slow.value.status.code == 200)
        #expect(await refresher.count == 1)
        let replays = await stub.requests.filter { $0.request.path == "/slow" }.map(\.authorization)
        #expect(replays == ["Bearer old-access", "Bearer new-access"])
    }

    @Test func refreshThatDoesNotHelpSignsOutAfterExactlyOneReplay() async throws {
        let stub = StubTransport(replies: [.status(401)])
        let store = CountingTokenStore(oldTokens)
        let refresher = CountingRefresher(returning: newTokens)
        let observer = RecordingSignOutObserver()
        let auth = authenticating(stub, store: store, refresher: refresher, observer: observer)

        await #expect(throws: APIError.unauthorized) { try await get(auth) }
        #expect(await stub.requests.map(\.authorization) == ["Bearer old-access", "Bearer new-access"])
        #expect(await refresher.count == 1)
        #expect(await store.tokens == nil)
        #expect(await store.clearCount == 1)
        #expect(await observer.reasons == [.rejectedAfterReplay])
    }

    @Test func concurrentCallersRejectedAfterReplayTellTheObserverOnce() async throws {
        let callers = 20
        let held = EventCounter()
        let stub = StubTransport { request in
            if request.authorization == "Bearer old-access" {
                await held.increment()
                try await held.wait(until: callers)
            }
            return .status(401)
        }
        let store = InMemoryTokenStore(oldTokens)
        let refresher = CountingRefresher(returning: newTokens)
        let observer = RecordingSignOutObserver()
        let auth = authenticating(stub, store: store, refresher: refresher, observer: observer)

        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    do { _ = try await get(auth) } catch let error as APIError { return error == .unauthorized } catch {}
                    return false
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(failures == callers)
        #expect(await refresher.count == 1)
        #expect(await observer.reasons == [.rejectedAfterReplay])
        #expect(await store.tokens == nil)
        #expect(await stub.requests.count <= 2 * callers)
    }

    @Test func cancelledCallerStopsWaitingWhileTheRefreshCompletes() async throws {
        let gate = Gate()
        let stub = StubTransport(handler: Self.acceptsOnlyNewToken)
        let store = InMemoryTokenStore(oldTokens)
        let refresher = CountingRefresher(returning: newTokens, gate: gate)
        let auth = authenticating(stub, store: store, refresher: refresher)

        let leaving = Task { try await get(auth, path: "/leaving") }
        let staying = Task { try await get(auth, path: "/staying") }
        try await stub.arrivals.wait(until: 2)
        try await refresher.started.wait(until: 1)
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }  // while the refresh is held
        await gate.open()
        #expect(try await staying.value.status.code == 200)
        #expect(await refresher.count == 1)
        #expect(await store.tokens == newTokens)
        #expect(await stub.requests.filter { $0.request.path == "/leaving" }.count == 1)
    }

    @Test func failedRefreshSignsOut() async throws {
        let stub = StubTransport(handler: Self.acceptsOnlyNewToken)
        let store = InMemoryTokenStore(oldTokens)
        let refresher = CountingRefresher { _ in throw OpaqueFailure(detail: "invalid_grant") }
        let observer = RecordingSignOutObserver()
        let auth = authenticating(stub, store: store, refresher: refresher, observer: observer)

        await #expect(throws: APIError.unauthorized) { try await get(auth) }
        #expect(await stub.requests.count == 1)
        #expect(await store.tokens == nil)
        #expect(await observer.reasons == [.refreshFailed])
    }

    @Test func transientRefreshFailureKeepsTheSession() async throws {
        let stub = StubTransport(handler: Self.acceptsOnlyNewToken)
        let store = InMemoryTokenStore(oldTokens)
        let refresher = CountingRefresher { _ in throw TransientFailure() }
        let observer = RecordingSignOutObserver()
        let auth = authenticating(stub, store: store, refresher: refresher, observer: observer)

        await #expect(throws: TransientFailure.self) { try await get(auth) }
        #expect(await store.tokens == oldTokens)
        #expect(await observer.reasons.isEmpty)
    }

    @Test func refreshedTokensTheStoreCannotSaveAreStillUsedAndNotRefreshedAgain() async throws {
        let stub = StubTransport(handler: Self.acceptsOnlyNewToken)
        let store = FailingSaveTokenStore(oldTokens)
        let refresher = CountingRefresher(returning: newTokens)
        let observer = RecordingSignOutObserver()
        let auth = authenticating(stub, store: store, refresher: refresher, observer: observer)

        #expect(try await get(auth).status.code == 200)  // replayed with the fresh tokens despite the failed save
        #expect(try await get(auth).status.code == 200)  // the store still holds the old token: no second refresh
        #expect(await refresher.count == 1)
        #expect(await store.saveAttempts == 2)  // the unsaved tokens were offered to the store again
        #expect(await observer.reasons.isEmpty)
    }

    @Test func signOutDoesNotWipeANewerSession() async throws {
        let gate = Gate()
        let store = InMemoryTokenStore(oldTokens)
        let signedInAgain = AuthTokens(accessToken: "other-access")
        let refresher = CountingRefresher(gate: gate) { _ in throw OpaqueFailure(detail: "invalid_grant") }
        let stub = StubTransport(replies: [.status(401)])
        let observer = RecordingSignOutObserver()
        let auth = authenticating(stub, store: store, refresher: refresher, observer: observer)
        let call = Task { try await get(auth) }
        try await refresher.started.wait(until: 1)
        try await store.saveTokens(signedInAgain)  // the user signs in again while the refresh is running
        await gate.open()
        await #expect(throws: APIError.unauthorized) { try await call.value }
        #expect(await store.tokens == signedInAgain)
        #expect(await observer.reasons.isEmpty)
    }

    @Test func singleIterationBodyIsNotReplayed() async throws {
        let stub = StubTransport(handler: Self.acceptsOnlyNewToken)
        let refresher = CountingRefresher(returning: newTokens)
        let auth = authenticating(stub, store: InMemoryTokenStore(oldTokens), refresher: refresher)
        let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield(ArraySlice("{}".utf8))
            continuation.finish()
        }
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/upload")
        let body = HTTPBody(stream, length: .unknown, iterationBehavior: .single)
        let (response, _) = try await auth.send(request, body: body, baseURL: baseURL, operationID: "test")
        #expect(response.status.code == 401)
        #expect(await stub.requests.count == 1)
        #expect(await refresher.count == 0)
    }

    @Test func tokensNeverAppearInDescriptions() {
        #expect(!String(describing: oldTokens).contains("old-access"))
        #expect(!String(reflecting: oldTokens).contains("old-refresh"))
        #expect(!APIError.unauthorized.description.contains("Bearer"))
    }
}

/// A store whose saves always fail (a keyring locked after the read), counting the attempts.
private actor FailingSaveTokenStore: TokenStore {
    let tokens: AuthTokens?
    private(set) var saveAttempts = 0
    init(_ tokens: AuthTokens?) { self.tokens = tokens }
    func loadTokens() async throws -> AuthTokens? { tokens }
    func saveTokens(_ tokens: AuthTokens) async throws {
        saveAttempts += 1
        throw OpaqueFailure(detail: "the keyring is locked")
    }
    func clearTokens() async throws {}
}

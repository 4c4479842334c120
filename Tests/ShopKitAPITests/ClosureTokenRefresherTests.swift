import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitCore
import Testing
import TestSupport

@testable import ShopKitAPI

/// `ClosureTokenRefresher` in the auth middleware: the same single flight and sign-out as any refresher, with the
/// errors of a token endpoint's client sorted into "keep the session" and "sign out".
@Suite(.timeLimit(.minutes(3))) struct ClosureTokenRefresherTests {
    func get(_ transport: some ClientTransport) async throws -> HTTPResponse {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me")
        return try await transport.send(request, body: nil, baseURL: baseURL, operationID: "test").0
    }

    /// A transport error that says it may pass (a timeout).
    struct Transient: Error, RetryClassifiableError { var isRetryable: Bool { true } }

    /// A refresher whose closure counts its calls and answers with `answer(refreshToken)`.
    static func refresher(
        _ calls: EventCounter, answer: @escaping @Sendable (String) throws -> AuthTokens = { _ in newTokens }
    ) -> ClosureTokenRefresher {
        ClosureTokenRefresher { refreshToken in
            await calls.increment()
            return try answer(refreshToken)
        }
    }

    @Test func concurrent401sShareOneRefreshGivenTheRefreshToken() async throws {
        let callers = 20
        let arrivals = EventCounter()
        let stub = StubTransport { request in
            if request.authorization == "Bearer new-access" { return .status(200) }
            await arrivals.increment()
            try await arrivals.wait(until: callers)  // every caller holds the old token before any 401 goes out
            return .status(401)
        }
        let calls = EventCounter()
        let store = CountingTokenStore(oldTokens)
        let refresher = Self.refresher(calls) { refreshToken in
            guard refreshToken == "old-refresh" else { throw APIError.unauthorized }
            return newTokens
        }
        let auth = authenticating(stub, store: store, refresher: refresher)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<callers { group.addTask { try await get(auth).status.code } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: callers))
        #expect(await calls.count == 1)
        #expect(await store.tokens == newTokens)
        #expect(await store.saveCount == 1)
    }

    @Test(arguments: [APIError.unauthorized, .server(status: 400, message: "invalid_grant"), .forbidden])
    func aDefiniteRejectionSignsOut(rejection: APIError) async throws {
        let stub = StubTransport(replies: [.status(401)])
        let store = CountingTokenStore(oldTokens)
        let observer = RecordingSignOutObserver()
        let calls = EventCounter()
        let auth = authenticating(
            stub, store: store, refresher: Self.refresher(calls) { _ in throw rejection }, observer: observer)
        await #expect(throws: APIError.unauthorized) { try await get(auth) }
        #expect(await calls.count == 1)
        #expect(await store.tokens == nil)
        #expect(await observer.reasons == [.refreshFailed])
        #expect(await stub.requests.count == 1)  // no replay
    }

    @Test(arguments: [
        APIError.server(status: 503, message: nil), .rateLimited(retryAfter: .seconds(1)), .transport(Transient()),
    ])
    func aTransientFailureKeepsTheSession(failure: APIError) async throws {
        let stub = StubTransport(replies: [.status(401)])
        let store = CountingTokenStore(oldTokens)
        let observer = RecordingSignOutObserver()
        let auth = authenticating(
            stub, store: store, refresher: Self.refresher(EventCounter()) { _ in throw failure }, observer: observer)
        await #expect {
            try await get(auth)
        } throws: { error in
            (error as? any RetryClassifiableError)?.isRetryable == true
        }
        #expect(await store.tokens == oldTokens)
        #expect(await store.clearCount == 0)
        #expect(await observer.reasons.isEmpty)
    }

    /// A generated client wraps what its transport threw in `ClientError`: judged by the cause.
    @Test func aGeneratedClientsWrappedTransportErrorKeepsTheSession() async throws {
        let wrapped = ClientError(
            operationID: "refresh", operationInput: "", causeDescription: "timeout", underlyingError: Transient())
        #expect(ClosureTokenRefresher.sorted(wrapped) is Transient)
        #expect(ClosureTokenRefresher.sorted(APIError.transport(Transient())) is Transient)
    }

    @Test func tokensWithoutARefreshTokenSignOutWithoutCallingTheClosure() async throws {
        let stub = StubTransport(replies: [.status(401)])
        let store = CountingTokenStore(AuthTokens(accessToken: "old-access"))
        let observer = RecordingSignOutObserver()
        let calls = EventCounter()
        let auth = authenticating(stub, store: store, refresher: Self.refresher(calls), observer: observer)
        await #expect(throws: APIError.unauthorized) { try await get(auth) }
        #expect(await calls.count == 0)
        #expect(await store.tokens == nil)
        #expect(await observer.reasons == [.refreshFailed])
    }
}

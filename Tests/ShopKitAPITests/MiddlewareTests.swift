import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitAPI

/// The decorators as `ClientMiddleware`s: the same logic as the transports, driven through `intercept`.
@Suite(.timeLimit(.minutes(3))) struct MiddlewareTests {
    static let get = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/products", headerFields: [:])

    /// A generated client wraps whatever an inner middleware or the transport throws in `ClientError`.
    static func wrapped(_ error: any Error) -> ClientError {
        ClientError(operationID: "getPet", operationInput: "", causeDescription: "wrapped", underlyingError: error)
    }

    /// Runs `middleware` over `next`, which answers from `stub`.
    static func intercept(_ middleware: some ClientMiddleware, _ request: HTTPRequest = get, stub: StubTransport)
        async throws -> HTTPResponse
    {
        try await middleware.intercept(request, body: nil, baseURL: baseURL, operationID: "op") {
            try await stub.send($0, body: $1, baseURL: $2, operationID: "op")
        }.0
    }

    @Test func retryMiddlewareRetriesAStatus() async throws {
        let stub = StubTransport(replies: [.status(503), .status(200)])
        let sleeper = RecordingSleeper()
        let retry = RetryMiddleware(sleeper: sleeper, random: FixedRandomSource())
        #expect(try await Self.intercept(retry, stub: stub).status.code == 200)
        #expect(await sleeper.durations == [.milliseconds(200)])
    }

    /// A generated client hands the retry middleware errors wrapped in `ClientError`: they are judged by their
    /// cause, so a final error from below (auth's `unauthorized`, a pin mismatch) is not retried.
    @Test func retryMiddlewareJudgesClientErrorsByTheirCause() async throws {
        let permanent = StubTransport(replies: [.failure(Self.wrapped(PermanentFailure()))])
        let sleeper = RecordingSleeper()
        let retry = RetryMiddleware(sleeper: sleeper, random: FixedRandomSource())
        await #expect(throws: ClientError.self) { try await Self.intercept(retry, stub: permanent) }
        #expect(await permanent.requests.count == 1)

        let unauthorized = StubTransport(replies: [.failure(Self.wrapped(APIError.unauthorized))])
        await #expect(throws: ClientError.self) { try await Self.intercept(retry, stub: unauthorized) }
        #expect(await unauthorized.requests.count == 1)
        #expect(await sleeper.durations.isEmpty)

        let transient = StubTransport(replies: [.failure(Self.wrapped(TransientFailure())), .status(200)])
        #expect(try await Self.intercept(retry, stub: transient).status.code == 200)
        #expect(await transient.requests.count == 2)
        #expect(!RetryMiddleware.isRetryable(Self.wrapped(CancellationError())))
    }

    @Test func dedupMiddlewareSharesOneUpstreamRequest() async throws {
        let gate = Gate()
        let stub = StubTransport { _ in
            try await gate.wait()
            return .json(productJSON)
        }
        let dedup = DeduplicationMiddleware()
        let tasks = (0..<4).map { _ in
            Task {
                let (response, body) = try await dedup.intercept(
                    Self.get, body: nil, baseURL: baseURL, operationID: "op"
                ) { try await stub.send($0, body: $1, baseURL: $2, operationID: "op") }
                return (response.status.code, try await [UInt8](collecting: body!, upTo: 1 << 20))
            }
        }
        while await dedup.waiterCount < 4 && !Task.isCancelled { await Task.yield() }
        #expect(await dedup.inFlightCount == 1)
        await gate.open()
        for task in tasks {
            let (status, bytes) = try await task.value
            #expect(status == 200)
            #expect(bytes == Array(productJSON.utf8))
        }
        #expect(await stub.requests.count == 1)
        #expect(await dedup.inFlightCount == 0)
    }

    /// The middleware's `next` may not outlive the call: a cancelled caller that started the shared request
    /// cancels it and returns, and a waiting caller sends the request again through its own `next`.
    @Test func dedupMiddlewareCancelledStarterHandsTheRequestToAWaitingCaller() async throws {
        let gate = Gate()
        let starterStub = StubTransport { _ in
            try await gate.wait()
            return .json(productJSON)
        }
        let otherStub = StubTransport { _ in
            try await gate.wait()
            return .json(productJSON)
        }
        let dedup = DeduplicationMiddleware()
        @Sendable func call(_ stub: StubTransport) async throws -> Int {
            try await dedup.intercept(Self.get, body: nil, baseURL: baseURL, operationID: "op") {
                try await stub.send($0, body: $1, baseURL: $2, operationID: "op")
            }.0.status.code
        }
        let starter = Task { try await call(starterStub) }
        try await starterStub.arrivals.wait(until: 1)  // the starter's request is upstream
        let other = Task { try await call(otherStub) }
        while await dedup.waiterCount < 2 && !Task.isCancelled { await Task.yield() }
        #expect(await otherStub.requests.isEmpty)  // joined, not sent
        starter.cancel()
        await #expect(throws: CancellationError.self) { try await starter.value }  // with the gate still shut
        #expect(await starterStub.cancellations.count == 1)
        try await otherStub.arrivals.wait(until: 1)  // sent again, through the waiting caller's own `next`
        await gate.open()
        #expect(try await other.value == 200)
        #expect(await starterStub.requests.count == 1)
        #expect(await otherStub.requests.count == 1)
        #expect(await otherStub.cancellations.count == 0)
        #expect(await dedup.inFlightCount == 0)
    }

    @Test func dedupMiddlewarePassesBodiesAndOtherMethodsThrough() async throws {
        let stub = StubTransport(replies: [.status(201)])
        let post = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/orders", headerFields: [:])
        #expect(try await Self.intercept(DeduplicationMiddleware(), post, stub: stub).status.code == 201)
    }
}

/// The middlewares' decisions are logged at debug through the configuration's logger, and nothing else is: a
/// retried 503 and a joined request are visible when asked for, a token never.
@Suite(.timeLimit(.minutes(3))) struct MiddlewareLoggingTests {
    @Test func aRetriedStatusAndAJoinedRequestAreLoggedAtDebugWithoutSecrets() async throws {
        let capture = LogCapture()
        let stub = StubTransport(replies: [.status(503), .status(200)])
        let configuration = ShopKitConfiguration(
            auth: .init(tokenStore: InMemoryTokenStore(AuthTokens(accessToken: "secret-token")),
                        tokenRefresher: CountingRefresher(returning: AuthTokens(accessToken: "unused"))),
            sleeper: RecordingSleeper(), logger: capture.logger())
        let middlewares = ShopKitFactory.makeMiddlewares(configuration)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items", headerFields: [:])
        var next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?) = { request, body, url in
            try await stub.send(request, body: body, baseURL: url, operationID: "listItems")
        }
        for middleware in middlewares.reversed() {
            let inner = next
            next = { request, body, url in
                try await middleware.intercept(request, body: body, baseURL: url, operationID: "listItems", next: inner)
            }
        }
        let (response, _) = try await next(request, nil, URL(string: "https://api.example.test")!)
        #expect(response.status.code == 200)
        let retries = capture.records.filter { $0.message == "retrying" }
        #expect(retries.count == 1)
        #expect(retries.first?.level == .debug)
        #expect(retries.first?.metadata["cause"] == "status 503")
        #expect(retries.first?.metadata["operation"] == "listItems")
        #expect(!capture.records.contains { "\($0.message) \($0.metadata)".contains("secret-token") }, "a token was logged")
    }
}

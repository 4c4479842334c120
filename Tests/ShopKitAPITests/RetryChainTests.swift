import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct RetryPolicyTests {
    // The table in RetryPolicy's doc comment, in milliseconds.
    @Test(arguments: zip(1...9, [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]))
    func backoffDoublesUpToTheCap(retry: Int, milliseconds: Int) {
        #expect(RetryPolicy.default.backoff(beforeRetry: retry) == .milliseconds(milliseconds))
    }

    @Test(arguments: [0.8, 1.0, 1.2])
    func jitterMultipliesAndStaysUnderTheCap(factor: Double) {
        let policy = RetryPolicy.default
        let delay = policy.delay(beforeRetry: 1, jitterFactor: factor)
        #expect(abs((delay - .seconds(0.2 * factor)).inSeconds) < 1e-9)
        #expect(policy.delay(beforeRetry: 7, jitterFactor: factor) <= policy.maxDelay)
    }

    // The "wait (after jitter)" column of RetryPolicy's doc table: the ends of each range, in milliseconds.
    @Test(arguments: zip(1...8, [(160, 240), (320, 480), (640, 960), (1280, 1920), (2560, 3840), (5120, 7680), (8000, 10_000), (8000, 10_000)]))
    func waitAfterJitterMatchesTheDocTable(retry: Int, range: (low: Int, high: Int)) {
        let policy = RetryPolicy.default
        let low = policy.delay(beforeRetry: retry, jitterFactor: 0.8)
        let high = policy.delay(beforeRetry: retry, jitterFactor: 1.2)
        #expect(abs((low - .milliseconds(range.low)).inSeconds) < 1e-9)
        #expect(abs((high - .milliseconds(range.high)).inSeconds) < 1e-9)
    }

    @Test func hugeAttemptNumbersDoNotOverflow() {
        #expect(RetryPolicy.default.backoff(beforeRetry: 10_000) == .seconds(10))
        #expect(RetryPolicy.default.backoff(beforeRetry: Int.max) == .seconds(10))
    }

    @Test func retryAfterIsCapped() {
        #expect(RetryPolicy.default.delay(retryAfter: .seconds(3)) == .seconds(3))
        #expect(RetryPolicy.default.delay(retryAfter: .seconds(3600)) == .seconds(10))
    }

    @Test func parsesRetryAfterForms() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        #expect(RetryAfter.delay(from: "120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(from: "Tue, 14 Nov 2023 22:13:25 GMT", now: now) == .seconds(5))
        #expect(RetryAfter.delay(from: "Tuesday, 14-Nov-23 22:13:30 GMT", now: now) == .seconds(10))
        #expect(RetryAfter.delay(from: "Tue Nov 14 22:13:21 2023", now: now) == .seconds(1))
        let sixth = Date(timeIntervalSince1970: 784_111_770)  // Sun, 06 Nov 1994 08:49:30 GMT
        #expect(RetryAfter.delay(from: "Sun Nov  6 08:49:37 1994", now: sixth) == .seconds(7))  // asctime, 1-digit day
        #expect(RetryAfter.delay(from: "Mon, 13 Nov 2023 00:00:00 GMT", now: now) == .zero)
        #expect(RetryAfter.delay(from: "-5", now: now) == nil)
        #expect(RetryAfter.delay(from: "soon", now: now) == nil)
    }
}

@Suite(.timeLimit(.minutes(3))) struct RetryChainTests {
    func send(
        _ transport: Decorated<RetryMiddleware>, method: HTTPRequest.Method = .get, headers: HTTPFields = [:],
        body: HTTPBody? = nil
    ) async throws -> HTTPResponse {
        let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: "/cart", headerFields: headers)
        return try await transport.send(request, body: body, baseURL: baseURL, operationID: "test").0
    }

    @Test(arguments: [1.0, 0.8, 1.2])
    func backsOffPerAttemptWithJitter(factor: Double) async throws {
        let stub = StubTransport(replies: [.status(503)])
        let sleeper = RecordingSleeper()
        let policy = RetryPolicy(maxAttempts: 5)
        let retrying = retrying(stub, policy: policy, sleeper: sleeper, random: FixedRandomSource(factor))
        let response = try await send(retrying)
        #expect(response.status.code == 503)
        #expect(await stub.requests.count == 5)
        let expected = (1...4).map { policy.delay(beforeRetry: $0, jitterFactor: factor) }
        #expect(await sleeper.durations == expected)
        #expect(abs((expected[0] - .seconds(0.2 * factor)).inSeconds) < 1e-9)
    }

    // Waits recorded for a request that always gets 503, by max attempts: the doc table's first rows.
    @Test(arguments: 1...8)
    func recordsTheBackoffTableUpToMaxAttempts(maxAttempts: Int) async throws {
        let table: [Duration] = [.milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                                 .milliseconds(3200), .milliseconds(6400), .seconds(10)]
        let stub = StubTransport(replies: [.status(503)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, policy: RetryPolicy(maxAttempts: maxAttempts), sleeper: sleeper, random: FixedRandomSource(1))
        #expect(try await send(retrying).status.code == 503)
        #expect(await stub.requests.count == maxAttempts)
        #expect(await sleeper.durations == Array(table.prefix(maxAttempts - 1)))
    }

    @Test func stopsRetryingOnSuccess() async throws {
        let stub = StubTransport(replies: [.status(502), .status(500), .status(200)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, policy: RetryPolicy(maxAttempts: 5), sleeper: sleeper, random: FixedRandomSource())
        #expect(try await send(retrying).status.code == 200)
        #expect(await stub.requests.count == 3)
        #expect(await sleeper.durations == [.milliseconds(200), .milliseconds(400)])
    }

    @Test func honorsRetryAfterSeconds() async throws {
        let stub = StubTransport(replies: [.status(429, headers: [.retryAfter: "3"]), .status(200)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, sleeper: sleeper, random: FixedRandomSource())
        #expect(try await send(retrying).status.code == 200)
        #expect(await sleeper.durations == [.seconds(3)])
    }

    @Test func honorsRetryAfterHTTPDateWithInjectedClock() async throws {
        let stub = StubTransport(replies: [.status(503, headers: [.retryAfter: "Tue, 14 Nov 2023 22:13:25 GMT"]), .status(200)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, sleeper: sleeper, random: FixedRandomSource(),
            now: { Date(timeIntervalSince1970: 1_700_000_000) })
        #expect(try await send(retrying).status.code == 200)
        #expect(await sleeper.durations == [.seconds(5)])
    }

    @Test func retryAfterIsCappedByMaxDelay() async throws {
        let stub = StubTransport(replies: [.status(503, headers: [.retryAfter: "86400"]), .status(200)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, policy: RetryPolicy(maxDelay: .seconds(4)), sleeper: sleeper)
        #expect(try await send(retrying).status.code == 200)
        #expect(await sleeper.durations == [.seconds(4)])
    }

    @Test func postIsNotRetriedAfterTransportError() async throws {
        let stub = StubTransport(replies: [.failure(TransientFailure()), .status(200)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, sleeper: sleeper)
        await #expect(throws: TransientFailure.self) { try await send(retrying, method: .post, body: HTTPBody("{}")) }
        #expect(await stub.requests.count == 1)
        #expect(await sleeper.durations.isEmpty)
    }

    @Test func postIsNotRetriedOnRetryableStatus() async throws {
        let stub = StubTransport(replies: [.status(503), .status(200)])
        let retrying = retrying(stub, sleeper: RecordingSleeper())
        #expect(try await send(retrying, method: .post).status.code == 503)
        #expect(await stub.requests.count == 1)
    }

    @Test func postWithIdempotencyKeyIsRetried() async throws {
        let stub = StubTransport(replies: [.failure(TransientFailure()), .status(503), .status(201)])
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, sleeper: sleeper, random: FixedRandomSource())
        let response = try await send(
            retrying, method: .post, headers: [.idempotencyKey: "order-7"], body: HTTPBody(#"{"sku":"42"}"#))
        #expect(response.status.code == 201)
        let sent = await stub.requests
        #expect(sent.count == 3)
        #expect(sent.allSatisfy { $0.body == Data(#"{"sku":"42"}"#.utf8) })
        #expect(await sleeper.durations.count == 2)
    }

    @Test func singleIterationBodyIsNeverRetried() async throws {
        let stub = StubTransport(replies: [.status(503), .status(200)])
        let retrying = retrying(stub, sleeper: RecordingSleeper())
        let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield(ArraySlice("{}".utf8))
            continuation.finish()
        }
        let body = HTTPBody(stream, length: .unknown, iterationBehavior: .single)
        #expect(try await send(retrying, method: .put, body: body).status.code == 503)
        #expect(await stub.requests.count == 1)
    }

    @Test(arguments: [400, 401, 403, 404, 409, 422])
    func otherClientErrorsAreNotRetried(status: Int) async throws {
        let stub = StubTransport(replies: [.status(status), .status(200)])
        let retrying = retrying(stub, sleeper: RecordingSleeper())
        #expect(try await send(retrying).status.code == status)
        #expect(await stub.requests.count == 1)
    }

    @Test func finalErrorsFromBelowAreNotRetried() async throws {
        for error in [APIError.unauthorized as any Error, PermanentFailure(), ResponseBodyTooLargeError(limit: 1)] {
            let stub = StubTransport(replies: [.failure(error), .status(200)])
            let retrying = retrying(stub, sleeper: RecordingSleeper())
            await #expect(throws: (any Error).self) { try await send(retrying) }
            #expect(await stub.requests.count == 1)
        }
    }

    @Test func idempotentRequestIsRetriedAfterTransportError() async throws {
        let stub = StubTransport(replies: [.failure(OpaqueFailure(detail: "reset")), .status(200)])
        let retrying = retrying(stub, sleeper: RecordingSleeper())
        #expect(try await send(retrying, method: .delete).status.code == 200)
        #expect(await stub.requests.count == 2)
    }

    @Test func cancellationStopsBeforeTheNextSleepAndAttempt() async throws {
        let gate = Gate()
        let stub = StubTransport { _ in
            try? await gate.wait()  // swallow the cancellation, answer a retryable status
            return .status(503)
        }
        let sleeper = RecordingSleeper()
        let retrying = retrying(stub, sleeper: sleeper)
        let task = Task { try await send(retrying) }
        try await stub.arrivals.wait(until: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await stub.requests.count == 1)
        #expect(await sleeper.durations.isEmpty)
    }
}

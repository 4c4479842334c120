import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct DeduplicationChainTests {
    static func request(
        _ method: HTTPRequest.Method = .get, path: String = "/products", headers: HTTPFields = [.authorization: "Bearer a"]
    ) -> HTTPRequest {
        HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headers)
    }

    /// Sends and reads the body, as a caller would.
    static func fetch(_ dedup: Decorated<DeduplicationMiddleware>, _ request: HTTPRequest, body: HTTPBody? = nil) async throws -> (Int, Data) {
        let (response, responseBody) = try await dedup.send(request, body: body, baseURL: baseURL, operationID: "t")
        var bytes: [UInt8] = []
        if let responseBody { bytes = try await [UInt8](collecting: responseBody, upTo: 1 << 20) }
        return (response.status.code, Data(bytes))
    }

    /// Waits (without sleeping) until `count` callers are parked on the decorator, or until the task is cancelled
    /// (the time limit), so a caller that never parks fails the next expectation instead of spinning forever.
    static func waitForWaiters(_ dedup: Decorated<DeduplicationMiddleware>, _ count: Int) async {
        while await dedup.waiterCount < count && !Task.isCancelled { await Task.yield() }
    }

    static func heldStub(_ gate: Gate, body: String = productJSON) -> StubTransport {
        StubTransport { _ in
            try await gate.wait()
            return .json(body)
        }
    }

    @Test func concurrentIdenticalGETsMakeOneCallAndEachGetsItsOwnBody() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        let tasks = (0..<5).map { _ in Task { try await Self.fetch(dedup, Self.request()) } }
        await Self.waitForWaiters(dedup, 5)
        #expect(await dedup.inFlightCount == 1)
        await gate.open()
        for task in tasks {
            let (status, body) = try await task.value
            #expect(status == 200)
            #expect(body == Data(productJSON.utf8))
        }
        #expect(await stub.requests.count == 1)
        #expect(await dedup.inFlightCount == 0)
    }

    @Test func entryIsEvictedWhenTheRequestEnds() async throws {
        let stub = StubTransport(replies: [.json(productJSON)])
        let dedup = deduplicating(stub)
        _ = try await Self.fetch(dedup, Self.request())
        _ = try await Self.fetch(dedup, Self.request())
        #expect(await stub.requests.count == 2)
        #expect(await dedup.inFlightCount == 0)
    }

    @Test(arguments: [
        ("authorization", "Bearer b"), ("accept", "text/csv"), ("accept-language", "de"), ("accept-encoding", "br"),
        ("cookie", "session=2"), ("range", "bytes=0-9"), ("x-tenant", "other"),
    ])
    func differentResponseHeadersAreNotMerged(name: String, value: String) async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        var other = Self.request()
        other.headerFields[HTTPField.Name(name)!] = value
        async let first = Self.fetch(dedup, Self.request())
        async let second = Self.fetch(dedup, other)
        await Self.waitForWaiters(dedup, 2)
        #expect(await dedup.inFlightCount == 2)
        await gate.open()
        _ = try await (first, second)
        #expect(await stub.requests.count == 2)
    }

    @Test func differentURLsAreNotMerged() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        async let first = Self.fetch(dedup, Self.request(path: "/products?page=1"))
        async let second = Self.fetch(dedup, Self.request(path: "/products?page=2"))
        await Self.waitForWaiters(dedup, 2)
        #expect(await dedup.inFlightCount == 2)
        await gate.open()
        _ = try await (first, second)
    }

    @Test func absoluteFormAuthoritiesSeparate() {
        var first = Self.request()
        first.authority = "a.example"
        var second = first
        second.authority = "b.example"
        #expect(DeduplicationMiddleware.key(for: first, baseURL: baseURL) != DeduplicationMiddleware.key(for: second, baseURL: baseURL))
        #expect(DeduplicationMiddleware.key(for: Self.request(), baseURL: baseURL) != DeduplicationMiddleware.key(for: Self.request(), baseURL: URL(string: "https://other.example/api")!))
    }

    @Test func tracingHeadersDoNotSeparate() {
        let plain = DeduplicationMiddleware.key(for: Self.request(), baseURL: baseURL)
        var traced = Self.request()
        traced.headerFields[HTTPField.Name("traceparent")!] = "00-abc-def-01"
        #expect(DeduplicationMiddleware.key(for: traced, baseURL: baseURL) == plain)
    }

    @Test func headerOrderAcrossNamesDoesNotSeparateButRepeatsAndValuesDo() {
        func key(_ fields: [(String, String)]) -> DeduplicationMiddleware.Key {
            var request = Self.request()
            request.headerFields = HTTPFields(fields.map { HTTPField(name: HTTPField.Name($0.0)!, value: $0.1) })
            return DeduplicationMiddleware.key(for: request, baseURL: baseURL)
        }
        let sorted = key([("accept", "application/json"), ("authorization", "Bearer a"), ("x-tenant", "1")])
        #expect(key([("X-Tenant", "1"), ("Authorization", "Bearer a"), ("Accept", "application/json")]) == sorted)
        #expect(key([("accept", "application/json"), ("authorization", "Bearer b"), ("x-tenant", "1")]) != sorted)
        #expect(key([("accept", "application/json"), ("authorization", "Bearer a")]) != sorted)
        // Repeated fields keep their order: "a, b" and "b, a" can mean different things.
        #expect(key([("x-tenant", "1"), ("accept", "a"), ("accept", "b")]) == key([("accept", "a"), ("accept", "b"), ("x-tenant", "1")]))
        #expect(key([("accept", "a"), ("accept", "b")]) != key([("accept", "b"), ("accept", "a")]))
        // A name and a value cannot run into each other.
        #expect(key([("x-a", "b: c")]) != key([("x-a", "b"), ("c", "")]))
    }

    @Test func postsAreNeverMerged() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        async let first = Self.fetch(dedup, Self.request(.post), body: HTTPBody("{}"))
        async let second = Self.fetch(dedup, Self.request(.post), body: HTTPBody("{}"))
        try await stub.arrivals.wait(until: 2)  // both reached the transport: not merged
        #expect(await dedup.inFlightCount == 0)
        await gate.open()
        _ = try await (first, second)
    }

    @Test func aWaitingCallerCancellingDoesNotCancelTheOthers() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        let leader = Task { try await Self.fetch(dedup, Self.request()) }
        try await stub.arrivals.wait(until: 1)  // the leader's request is upstream
        let leaving = Task { try await Self.fetch(dedup, Self.request()) }
        let staying = Task { try await Self.fetch(dedup, Self.request()) }
        await Self.waitForWaiters(dedup, 3)
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }  // at once, while the gate is shut
        #expect(await dedup.inFlightCount == 1)
        await gate.open()
        for task in [leader, staying] { #expect(try await task.value.0 == 200) }
        #expect(await stub.cancellations.count == 0)
        #expect(await stub.requests.count == 1)
    }

    /// The first caller sends in its own task: when it is cancelled, its request is cancelled with it, and the
    /// oldest waiting caller sends the same request again for itself and the others.
    @Test func theLeaderCancellingHandsTheRequestToTheOldestWaiter() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        let leader = Task { try await Self.fetch(dedup, Self.request()) }
        try await stub.arrivals.wait(until: 1)
        let waiting = [Task { try await Self.fetch(dedup, Self.request()) }, Task { try await Self.fetch(dedup, Self.request()) }]
        await Self.waitForWaiters(dedup, 3)
        leader.cancel()
        await #expect(throws: CancellationError.self) { try await leader.value }  // at once, while the gate is shut
        try await stub.cancellations.wait(until: 1)  // its request saw the cancellation
        try await stub.arrivals.wait(until: 2)  // and a waiting caller sent it again
        #expect(await dedup.inFlightCount == 1)
        #expect(await dedup.waiterCount == 2)
        await gate.open()
        for task in waiting {
            let (status, body) = try await task.value
            #expect(status == 200)
            #expect(body == Data(productJSON.utf8))
        }
        let requests = await stub.requests
        #expect(requests.count == 2)
        #expect(requests.first?.request == requests.last?.request)
        #expect(await stub.cancellations.count == 1)
        #expect(await dedup.inFlightCount == 0)
    }

    @Test func allWaitersCancellingCancelsTheRequest() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate)
        let dedup = deduplicating(stub)
        let tasks = [Task { try await Self.fetch(dedup, Self.request()) }, Task { try await Self.fetch(dedup, Self.request()) }]
        await Self.waitForWaiters(dedup, 2)
        try await stub.arrivals.wait(until: 1)
        for task in tasks { task.cancel() }
        for task in tasks { await #expect(throws: CancellationError.self) { try await task.value } }
        try await stub.cancellations.wait(until: 1)  // the upstream request saw the cancellation
        #expect(await dedup.inFlightCount == 0)

        // A new identical request is not joined to the cancelled one.
        await gate.open()
        #expect(try await Self.fetch(dedup, Self.request()).0 == 200)
        #expect(await stub.requests.count == 2)
    }

    @Test func oversizeSharedBodyFailsEveryWaiter() async throws {
        let gate = Gate()
        let stub = Self.heldStub(gate, body: String(repeating: "x", count: 100))
        let dedup = deduplicating(stub, maxResponseBodyBytes: 10)
        let tasks = (0..<3).map { _ in Task { try await Self.fetch(dedup, Self.request()) } }
        await Self.waitForWaiters(dedup, 3)
        await gate.open()
        for task in tasks {
            await #expect(throws: ResponseBodyTooLargeError(limit: 10)) { try await task.value }
        }
    }

    @Test func upstreamErrorReachesEveryWaiter() async throws {
        let gate = Gate()
        let stub = StubTransport { _ in
            try await gate.wait()
            return .failure(EquatableFailure(code: 5))
        }
        let dedup = deduplicating(stub)
        let tasks = (0..<3).map { _ in Task { try await Self.fetch(dedup, Self.request(.head)) } }
        await Self.waitForWaiters(dedup, 3)
        await gate.open()
        for task in tasks { await #expect(throws: EquatableFailure(code: 5)) { try await task.value } }
        #expect(await stub.requests.count == 1)
    }
}

extension DeduplicationChainTests {
    /// Issue 16 item 14: a non-2xx body is not held to the 2xx limit; each waiter gets the status and the page.
    @Test func oversizeErrorPageDeliversTheStatusToEveryWaiter() async throws {
        let gate = Gate()
        let page = String(repeating: "x", count: 100)
        let stub = StubTransport { _ in
            try await gate.wait()
            return .status(503, body: Data(page.utf8), streamed: true)
        }
        let dedup = deduplicating(stub, maxResponseBodyBytes: 10)
        let tasks = (0..<3).map { _ in Task { try await Self.fetch(dedup, Self.request()) } }
        await Self.waitForWaiters(dedup, 3)
        await gate.open()
        for task in tasks {
            let (status, body) = try await task.value
            #expect(status == 503)
            #expect(body == Data(page.utf8))
        }
        #expect(await stub.requests.count == 1)
    }

    /// Only the first 64 KiB of an error page are kept, as `APIClient` reads them.
    @Test func errorPageIsCutAt64KiB() async throws {
        let stub = StubTransport(replies: [.status(500, body: Data(count: 100_000), streamed: true)])
        let dedup = deduplicating(stub, maxResponseBodyBytes: 10)
        let (status, body) = try await Self.fetch(dedup, Self.request())
        #expect(status == 500)
        #expect(body.count == 64 * 1024)
    }

    /// An error body that breaks off still delivers its status (with no body) instead of the body's error.
    @Test func brokenErrorBodyDeliversTheStatus() async throws {
        let stub = StubTransport(replies: [.broken(404, body: Data("not fo".utf8), failure: TransientFailure())])
        let dedup = deduplicating(stub)
        let (status, body) = try await Self.fetch(dedup, Self.request())
        #expect(status == 404)
        #expect(body.isEmpty)
    }

    /// A broken 2xx body is still the transport's error: it cannot be decoded.
    @Test func broken2xxBodyFailsWithTheBodysError() async throws {
        let stub = StubTransport(replies: [.broken(200, body: Data("{".utf8), failure: TransientFailure())])
        let dedup = deduplicating(stub)
        await #expect(throws: TransientFailure()) { try await Self.fetch(dedup, Self.request()) }
    }
}

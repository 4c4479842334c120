import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct APIClientTests {
    @Test func decodesTypedResponseAndBuildsRequest() async throws {
        let stub = StubTransport(replies: [.json(productJSON)])
        let client = APIClient(baseURL: baseURL, transport: stub)
        let product = try await client.send(GetProduct(id: "42"))
        #expect(product == shoe)
        let sent = try #require(await stub.requests.first)
        #expect(sent.request.method == .get)
        #expect(sent.request.path == "/products/42")
        #expect(sent.baseURL == baseURL)
        #expect(sent.request.headerFields[.accept] == "application/json")
        #expect(sent.request.headerFields.map(\.name) == [.accept])  // nothing ShopKit-internal
    }

    @Test func encodesQueryItemsAndBody() async throws {
        let stub = StubTransport(replies: [.json(#"{"items":[]}"#), .status(204)])
        let client = APIClient(baseURL: baseURL, transport: stub)
        _ = try await client.send(ListProducts())
        _ = try await client.send(CreateOrder())
        let sent = await stub.requests
        #expect(sent[0].request.path == "/products?q=red%20shoes%2Bsocks&page=2")
        #expect(sent[1].request.path == "/orders")
        #expect(sent[1].request.method == .post)
        #expect(sent[1].body == Data(#"{"sku":"42"}"#.utf8))
        #expect(sent[1].request.headerFields[.contentType] == "application/json")
    }

    @Test func pathEncodingMatchesFoundationsPathSetWithoutQueryAndFragment() {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#")
        func foundation(_ path: String) -> String {
            let rooted = path.hasPrefix("/") ? path : "/" + path
            return rooted.addingPercentEncoding(withAllowedCharacters: allowed) ?? rooted
        }
        var samples = [
            "products/42", "/products/42", "", "/", "a b", "what?x=1", "frag#ment", "100%", "%41", "caf\u{E9}",
            "\u{1F600}/x", "a+b;c=d,e:f@g!h$i&j'k(l)m*n~o.p_q-r", "\\back\"quote<>[]{}|^`", "tab\tnew\nline", "\u{0}",
        ]
        // Every byte value once, plus random mixes of ASCII and multi-byte scalars.
        samples.append(String(decoding: (1...127).map { UInt8($0) }, as: UTF8.self))
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZ09-._~!$&'()*+,;=:@/ ?#%[]\u{E9}\u{4E2D}\u{1F600}\"<>")
        for _ in 0..<200 {
            samples.append(String((0..<Int.random(in: 0...24, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        for sample in samples {
            #expect(APIClient.encodePath(sample) == foundation(sample), "\(sample.debugDescription)")
        }
    }

    /// A transport that records whether the client asked for the current request to skip auth.
    final class SkipRecorder: ClientTransport {
        let skips = EventCounter()
        let sends = EventCounter()
        func send(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
        ) async throws -> (HTTPResponse, HTTPBody?) {
            await sends.increment()
            if AuthenticationRequirement.skipsCurrentRequest { await skips.increment() }
            return (HTTPResponse(status: .ok), HTTPBody(#"{"items":[]}"#))
        }
    }

    @Test func marksRequestsThatMustNotCarryTokens() async throws {
        let stub = StubTransport(replies: [.json(#"{"items":[]}"#)])
        _ = try await APIClient(baseURL: baseURL, transport: stub).send(PublicCatalog())
        // The mark is task-local, not a header: the request on the wire is only what the client always sets.
        #expect(await stub.requests.first?.request.headerFields.map(\.name) == [.accept])
        let recorder = SkipRecorder()
        _ = try await APIClient(baseURL: baseURL, transport: recorder).send(PublicCatalog())
        _ = try await APIClient(baseURL: baseURL, transport: recorder).send(CreateOrder())
        #expect(await recorder.sends.count == 2)
        #expect(await recorder.skips.count == 1)
        #expect(!AuthenticationRequirement.skipsCurrentRequest)  // scoped to the call
    }

    struct SneakyRequest: APIRequest {
        typealias Response = NoContent
        var path: String { "/me" }
        var headerFields: HTTPFields { [HTTPField.Name("X-ShopKit-Skip-Auth")!: "1"] }
    }

    @Test func requestsCannotOptOutOfAuthThroughHeaders() async throws {
        let recorder = SkipRecorder()
        #expect(try await APIClient(baseURL: baseURL, transport: recorder).send(SneakyRequest()) == NoContent())
        #expect(await recorder.skips.count == 0)
    }

    static let statusCases: [(Int, APIError)] = [
        (401, .unauthorized),
        (403, .forbidden),
        (404, .notFound),
        (429, .rateLimited(retryAfter: .seconds(7))),
        (400, .server(status: 400, message: "out of stock")),
        (409, .server(status: 409, message: "out of stock")),
        (422, .server(status: 422, message: "out of stock")),
        (500, .server(status: 500, message: "out of stock")),
        (503, .server(status: 503, message: "out of stock")),
        (304, .server(status: 304, message: "out of stock")),
    ]

    @Test(arguments: statusCases)
    func mapsEveryStatusClass(status: Int, expected: APIError) async throws {
        let reply = StubReply.status(
            status, headers: [.retryAfter: "7", .contentType: "application/json"],
            body: Data(#"{"message":"out of stock"}"#.utf8))
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [reply]))
        await #expect(throws: expected) { try await client.send(GetProduct(id: "42")) }
    }

    @Test func serverErrorWithoutJSONMessageHasNoMessage() async throws {
        let reply = StubReply.status(502, body: Data("<html>Bad gateway</html>".utf8))
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [reply]))
        await #expect(throws: APIError.server(status: 502, message: nil)) { try await client.send(GetProduct(id: "1")) }
    }

    @Test func rateLimitedWithoutRetryAfter() async throws {
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [.status(429)]))
        await #expect(throws: APIError.rateLimited(retryAfter: nil)) { try await client.send(GetProduct(id: "1")) }
    }

    @Test func malformedJSONNamesTypeAndCodingPath() async throws {
        let body = #"{"items":[{"id":"1","name":"a","price":1},{"id":"2","name":"b","price":"cheap"}]}"#
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [.json(body)]))
        let error = await #expect(throws: APIError.self) { try await client.send(ListProducts()) }
        guard case .decoding(let failure) = error else {
            Issue.record("expected a decoding error, got \(String(describing: error))")
            return
        }
        #expect(failure.typeName == "ProductList")
        #expect(failure.codingPath == "items[1].price")
        #expect(failure.description.contains("ProductList"))
        #expect(failure.description.contains("items[1].price"))
    }

    @Test func missingKeyAndNonJSONAreDecodingErrors() async throws {
        let missing = APIClient(baseURL: baseURL, transport: StubTransport(replies: [.json(#"{"id":"1","name":"a"}"#)]))
        let error = await #expect(throws: APIError.self) { try await missing.send(GetProduct(id: "1")) }
        guard case .decoding(let failure) = error else {
            Issue.record("expected a decoding error")
            return
        }
        #expect(failure.codingPath == "price")

        let garbage = APIClient(baseURL: baseURL, transport: StubTransport(replies: [.json("not json")]))
        let other = await #expect(throws: APIError.self) { try await garbage.send(GetProduct(id: "1")) }
        guard case .decoding(let top) = other else {
            Issue.record("expected a decoding error")
            return
        }
        #expect(top.typeName == "Product")
        #expect(top.codingPath == "")
    }

    @Test(arguments: [false, true])
    func oversizeBodyIsAnErrorNotABuffer(streamed: Bool) async throws {
        let big = StubReply.status(200, body: Data(repeating: 0x41, count: 100), streamed: streamed)
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [big]), maxResponseBodyBytes: 64)
        await #expect(throws: APIError.transport(ResponseBodyTooLargeError(limit: 64))) {
            try await client.send(GetProduct(id: "1"))
        }
    }

    @Test(arguments: [false, true])
    func largeErrorBodyDoesNotHideTheStatus(streamed: Bool) async throws {
        let page = Data(repeating: 0x3C, count: 200_000)  // an HTML error page far over the limit
        let replies: [StubReply] = [
            .status(401, body: page, streamed: streamed), .status(503, body: page, streamed: streamed),
        ]
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: replies), maxResponseBodyBytes: 64)
        await #expect(throws: APIError.unauthorized) { try await client.send(GetProduct(id: "1")) }
        await #expect(throws: APIError.server(status: 503, message: nil)) { try await client.send(GetProduct(id: "1")) }
    }

    @Test func errorMessageIsReadEvenWhenTheBodyLimitIsSmaller() async throws {
        let reply = StubReply.status(409, body: Data(#"{"message":"out of stock","detail":"…"}"#.utf8))
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [reply]), maxResponseBodyBytes: 8)
        await #expect(throws: APIError.server(status: 409, message: "out of stock")) {
            try await client.send(GetProduct(id: "1"))
        }
    }

    @Test func httpDateRetryAfterIsMeasuredFromTheInjectedClock() async throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        let reply = StubReply.status(429, headers: [.retryAfter: "Tue, 14 Nov 2023 22:13:50 GMT"])
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [reply]), now: { now })
        await #expect(throws: APIError.rateLimited(retryAfter: .seconds(30))) {
            try await client.send(GetProduct(id: "1"))
        }
    }

    @Test func bodyExactlyAtTheLimitIsRead() async throws {
        let data = Data(productJSON.utf8)
        let stub = StubTransport(replies: [.status(200, body: data, streamed: true)])
        let client = APIClient(baseURL: baseURL, transport: stub, maxResponseBodyBytes: data.count)
        #expect(try await client.send(GetProduct(id: "42")) == shoe)
    }

    @Test func transportErrorsCarryTheirCause() async throws {
        let client = APIClient(baseURL: baseURL, transport: StubTransport(replies: [.failure(EquatableFailure(code: 7))]))
        await #expect(throws: APIError.transport(EquatableFailure(code: 7))) { try await client.send(GetProduct(id: "1")) }
    }

    @Test func cancellationWhileInFlightIsCancelled() async throws {
        let gate = Gate()
        let stub = StubTransport { _ in
            try await gate.wait()
            return .json(productJSON)
        }
        let client = APIClient(baseURL: baseURL, transport: stub)
        let task = Task { () async throws(APIError) -> Product in try await client.send(GetProduct(id: "42")) }
        try await stub.arrivals.wait(until: 1)
        task.cancel()
        let result = await task.result
        #expect(throws: APIError.cancelled) { try result.get() }
        #expect(await stub.cancellations.count == 1)
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let stub = StubTransport(replies: [.json(productJSON)])
        let client = APIClient(baseURL: baseURL, transport: stub)
        let gate = Gate()
        let task = Task { () async throws(APIError) -> Product in
            try? await gate.wait()  // returns once cancelled
            return try await client.send(GetProduct(id: "42"))
        }
        task.cancel()
        let result = await task.result
        #expect(throws: APIError.cancelled) { try result.get() }
        #expect(await stub.requests.isEmpty)
    }
}

@Suite(.timeLimit(.minutes(3))) struct APIErrorTests {
    @Test func equalityIsHonestForTransportCauses() {
        #expect(APIError.transport(EquatableFailure(code: 1)) == .transport(EquatableFailure(code: 1)))
        #expect(APIError.transport(EquatableFailure(code: 1)) != .transport(EquatableFailure(code: 2)))
        #expect(APIError.transport(EquatableFailure(code: 1)) != .transport(OpaqueFailure(detail: "1")))
        #expect(APIError.transport(OpaqueFailure(detail: "a")) == .transport(OpaqueFailure(detail: "a")))
        #expect(APIError.transport(OpaqueFailure(detail: "a")) != .transport(OpaqueFailure(detail: "b")))
        #expect(APIError.transport(OpaqueFailure(detail: "a")) != .transport(EquatableFailure(code: 1)))
        #expect(APIError.transport(TransientFailure()) != .transport(EquatableFailure(code: 1)))
    }

    @Test func causesWhoseDescriptionHidesAFieldStillDiffer() {
        let first = TersePortFailure(host: "shop.example", port: 443)
        let second = TersePortFailure(host: "shop.example", port: 8443)
        #expect(String(describing: first) == String(describing: second))  // the description leaves the port out
        #expect(APIError.transport(first) != .transport(second))
        #expect(APIError.transport(first) == .transport(TersePortFailure(host: "shop.example", port: 443)))
    }

    @Test func classCausesAreEqualOnlyToThemselves() {
        let one = ReferenceFailure(code: 7)
        #expect(APIError.transport(one) == .transport(one))
        #expect(APIError.transport(one) != .transport(ReferenceFailure(code: 7)))
    }

    @Test func casesCompareByValue() {
        #expect(APIError.unauthorized == .unauthorized)
        #expect(APIError.unauthorized != .forbidden)
        #expect(APIError.rateLimited(retryAfter: .seconds(1)) != .rateLimited(retryAfter: nil))
        #expect(APIError.server(status: 500, message: nil) != .server(status: 503, message: nil))
        #expect(APIError.cancelled != .transport(CancellationError()))
    }

    @Test func descriptionsSayWhatHappened() {
        #expect(APIError.unauthorized.description.contains("401"))
        #expect(APIError.server(status: 503, message: "maintenance").description.contains("503: maintenance"))
        #expect(APIError.transport(ResponseBodyTooLargeError(limit: 10)).description.contains("limit of 10 bytes"))
        let failure = DecodingFailure(typeName: "Product", codingPath: "price", reason: "bad")
        #expect(APIError.decoding(failure).description == "The response is not the expected Product JSON at price: bad")
    }
}

/// A value error whose description omits one of its fields.
private struct TersePortFailure: Error, CustomStringConvertible {
    let host: String
    let port: Int
    var description: String { "cannot reach \(host)" }
}

/// A class error: reflection alone cannot tell two instances apart.
private final class ReferenceFailure: Error, Sendable {
    let code: Int
    init(code: Int) { self.code = code }
}

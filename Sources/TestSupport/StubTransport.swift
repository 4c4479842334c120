import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitAPI

/// A request as the stub transport received it.
package struct RecordedRequest: Sendable {
    /// The request head.
    package let request: HTTPRequest
    /// The whole request body, or `nil` when there was none.
    package let body: Data?
    /// The base URL it was sent to.
    package let baseURL: URL

    /// The `Authorization` header value.
    package var authorization: String? { request.headerFields[.authorization] }
}

/// What the stub answers: a status, headers and a body, or an error.
package struct StubReply: Sendable {
    /// The response head, or `nil` to throw ``error``.
    package var response: HTTPResponse?
    /// The response body.
    package var body: Data?
    /// Thrown instead of answering.
    package var error: (any Error)?
    /// Set to serve the body as a stream that can be iterated once (as real network bodies are).
    package var streamed: Bool
    /// When set, the body is a single-iteration stream that yields ``body`` and then throws this error (a
    /// connection that broke off mid-body).
    package var bodyFailure: (any Error)?

    /// A response with `status`, `headers` and `body`.
    package static func status(
        _ status: Int, headers: HTTPFields = [:], body: Data? = nil, streamed: Bool = false
    ) -> StubReply {
        StubReply(
            response: HTTPResponse(status: .init(code: status), headerFields: headers), body: body, error: nil,
            streamed: streamed)
    }

    /// A response with `status` whose body yields `body` and then fails with `failure` (it breaks off).
    package static func broken(_ status: Int, body: Data, failure: any Error) -> StubReply {
        StubReply(
            response: HTTPResponse(status: .init(code: status)), body: body, error: nil, streamed: true,
            bodyFailure: failure)
    }

    /// A 200 response with a JSON body built from `json`.
    package static func json(_ json: String, status: Int = 200) -> StubReply {
        .status(status, headers: [.contentType: "application/json"], body: Data(json.utf8))
    }

    /// A thrown transport error.
    package static func failure(_ error: any Error) -> StubReply {
        StubReply(response: nil, body: nil, error: error, streamed: false)
    }
}

/// A scripted `ClientTransport` for unit tests: records every request and answers from a handler.
///
/// The handler may suspend (for example on a ``Gate``) so concurrency tests decide exactly when answers go out;
/// ``arrivals`` lets a test wait until a number of requests reached the stub.
package final class StubTransport: ClientTransport {
    /// Decides the reply to one request.
    package typealias Handler = @Sendable (RecordedRequest) async throws -> StubReply

    private let handler: Handler
    private let log = RequestLog()
    /// Counts requests as they arrive (before the handler runs).
    package let arrivals = EventCounter()
    /// Counts handlers that ended with `CancellationError` (the request was cancelled while held).
    package let cancellations = EventCounter()

    /// A stub that answers with `handler`.
    package init(handler: @escaping Handler) {
        self.handler = handler
    }

    /// A stub that answers with `replies` in order, repeating the last one when they run out.
    package convenience init(replies: [StubReply]) {
        let script = ReplyScript(replies)
        self.init { _ in await script.next() }
    }

    /// Every request received so far, in arrival order.
    package var requests: [RecordedRequest] {
        get async { await log.requests }
    }

    /// Records the request (body read fully), counts the arrival, then answers from the handler.
    package func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var bytes: Data?
        if let body { bytes = Data(try await [UInt8](collecting: body, upTo: 1 << 20)) }
        let recorded = RecordedRequest(request: request, body: bytes, baseURL: baseURL)
        await log.append(recorded)
        await arrivals.increment()
        let reply: StubReply
        do {
            reply = try await handler(recorded)
        } catch is CancellationError {
            await cancellations.increment()
            throw CancellationError()
        }
        if let error = reply.error { throw error }
        let response = reply.response ?? HTTPResponse(status: .internalServerError)
        guard let data = reply.body else { return (response, nil) }
        if let failure = reply.bodyFailure {
            let stream = AsyncThrowingStream<HTTPBody.ByteChunk, any Error> { continuation in
                continuation.yield(ArraySlice(data))
                continuation.finish(throwing: failure)
            }
            return (response, HTTPBody(stream, length: .unknown, iterationBehavior: .single))
        }
        if reply.streamed {
            let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
                continuation.yield(ArraySlice(data))
                continuation.finish()
            }
            return (response, HTTPBody(stream, length: .unknown, iterationBehavior: .single))
        }
        return (response, HTTPBody(data))
    }
}

private actor RequestLog {
    var requests: [RecordedRequest] = []
    func append(_ request: RecordedRequest) { requests.append(request) }
}

private actor ReplyScript {
    private var replies: [StubReply]
    init(_ replies: [StubReply]) { self.replies = replies }
    func next() -> StubReply {
        guard replies.count > 1 else { return replies.first ?? .status(500) }
        return replies.removeFirst()
    }
}

import Foundation
import HTTPTypes
import OpenAPIRuntime
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// A request body that yields more or fewer bytes than it declares is the caller's fault, and never changes what
/// the server reads as the next request: the bytes written are counted against the declared length, nothing past it
/// is written, and a body that ends short leaves no half request on a connection anyone reuses.
@Suite(.timeLimit(.minutes(3))) struct RequestBodyFramingTests {
    /// One connection at a time, so that a second request would follow the first on the same connection.
    static func transport() -> HTTPSTransport {
        makeTransport(pool: .init(maxConnectionsPerHost: 1))
    }

    /// A body of `chunks`, declaring `length`.
    static func body(_ chunks: [String], declaring length: Int64) -> HTTPBody {
        let (stream, continuation) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        for chunk in chunks { continuation.yield(ArraySlice(Array(chunk.utf8))) }
        continuation.finish()
        return HTTPBody(stream, length: .known(length))
    }

    /// Every request answers with its own path, so a caller can tell whose answer it got.
    static func server() async throws -> LoopbackHTTPServer {
        try await LoopbackHTTPServer.startTLS { request in .ok(Array(request.uri.utf8)) }
    }

    static func isMismatch(_ error: any Error, declared: Int64) -> Bool {
        guard case .requestBodyLengthMismatch(let d, _)? = error as? HTTPSTransportError else { return false }
        return d == declared
    }

    /// Defect: `Content-Length: 1` with `A` and the start of a second request after it: the server read
    /// `GET /smuggled`, and the next caller on the connection received its answer.
    @Test func aBodyLongerThanItDeclaresSmugglesNothing() async throws {
        let server = try await Self.server()
        let transport = Self.transport()
        await #expect {
            _ = try await transport.fetch(
                .post, "/upload", baseURL: server.baseURL,
                body: Self.body(["A", "GET /smuggled HTTP/1.1\r\nX-Ignore: "], declaring: 1))
        } throws: { Self.isMismatch($0, declared: 1) }
        let (response, body) = try await transport.fetch(.get, "/r1", baseURL: server.baseURL)
        #expect(response.status == .ok)
        #expect(String(decoding: body, as: UTF8.self) == "/r1")
        #expect(!server.requests.contains { $0.uri == "/smuggled" })
        #expect(server.requests.map(\.uri).last == "/r1")
        await transport.shutdown()
        await server.stop()
    }

    /// More bytes in one chunk than declared: none of that chunk is written.
    @Test func aChunkThatRunsPastTheDeclaredLengthIsNotWritten() async throws {
        let server = try await Self.server()
        let transport = Self.transport()
        await #expect {
            _ = try await transport.fetch(
                .post, "/upload", baseURL: server.baseURL, body: Self.body(["AB", "CDE"], declaring: 4))
        } throws: { Self.isMismatch($0, declared: 4) }
        // The server never got a whole request: the connection closed with 2 of 4 bytes.
        try await server.waitUntil("the connection to close") { $0.closed == 1 }
        #expect(server.counts.requests == 0)
        let (_, body) = try await transport.fetch(.get, "/r2", baseURL: server.baseURL)
        #expect(String(decoding: body, as: UTF8.self) == "/r2")
        await transport.shutdown()
        await server.stop()
    }

    /// A body that ends short: no request end is written, the connection is closed (the server would read the
    /// next request's bytes as the rest of this body), and the caller learns it was its body.
    @Test func aBodyShorterThanItDeclaresFailsAndItsConnectionIsClosed() async throws {
        let server = try await Self.server()
        let transport = Self.transport()
        await #expect {
            _ = try await transport.fetch(.post, "/upload", baseURL: server.baseURL, body: Self.body(["abc"], declaring: 10))
        } throws: { error in
            Self.isMismatch(error, declared: 10) && "\(error)".contains("request body")
        }
        try await server.waitUntil("the connection to close") { $0.closed == 1 }
        #expect(server.counts.requests == 0)
        let (_, body) = try await transport.fetch(.get, "/r3", baseURL: server.baseURL)
        #expect(String(decoding: body, as: UTF8.self) == "/r3")
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    /// The same count holds over HTTP/2 (swift-nio-http2 also checks content-length): the same error.
    @Test func overHTTP2TheSameMismatchIsTheCallersError() async throws {
        let server = try await LoopbackHTTP2Server.start { _ in .respond(body: []) }
        let transport = HTTPSTransport(
            configuration: .init(timeouts: .wide(), pool: .init(maxConnectionsPerHost: 1)),
            security: try HTTPSTransport.makeSecurity(for: loopbackClientTLS, httpVersion: .automatic))
        let base = URL(string: "https://127.0.0.1:\(server.port)")!
        await #expect {
            _ = try await transport.fetch(.post, "/upload", baseURL: base, body: Self.body(["A", "BC"], declaring: 1))
        } throws: { Self.isMismatch($0, declared: 1) }
        await #expect {
            _ = try await transport.fetch(.post, "/upload", baseURL: base, body: Self.body(["A"], declaring: 5))
        } throws: { Self.isMismatch($0, declared: 5) }
        #expect(try await transport.fetch(.get, "/after", baseURL: base).0.status == .ok)
        await transport.shutdown()
        try await server.shutdown()
    }
}

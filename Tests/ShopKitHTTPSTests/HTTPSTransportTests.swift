import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport
@testable import ShopKitHTTPS
import ShopKitTLS

@Suite(.timeLimit(.minutes(3))) struct HTTPSTransportTests {
    @Test func requestsShareOneKeptAliveConnection() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = makeTransport()
        for _ in 0..<5 {
            let (response, body) = try await transport.fetch(baseURL: server.baseURL)
            #expect(response.status == .ok)
            #expect(body == Array("ok".utf8))
        }
        #expect(server.counts.accepted == 1)
        #expect(server.counts.requests == 5)
        await transport.shutdown()
        await server.stop()
    }

    @Test func stalePooledConnectionIsRetriedOnceForGET() async throws {
        // The second request on a connection finds it closed, as if the server's idle timeout had just fired.
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.indexOnConnection == 2 ? .closeWithoutResponse : .ok()
        }
        let transport = makeTransport()
        _ = try await transport.fetch(baseURL: server.baseURL)
        let (response, body) = try await transport.fetch(baseURL: server.baseURL)
        #expect(response.status == .ok)
        #expect(body == Array("ok".utf8))
        #expect(server.counts.accepted == 2)
        #expect(server.requests.map(\.indexOnConnection) == [1, 2, 1])
        await transport.shutdown()
        await server.stop()
    }

    @Test func stalePooledConnectionIsNotRetriedForPOST() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.indexOnConnection == 2 ? .closeWithoutResponse : .ok()
        }
        let transport = makeTransport()
        _ = try await transport.fetch(baseURL: server.baseURL)
        await #expect(throws: HTTPSTransportError.connectionClosed) {
            _ = try await transport.fetch(.post, baseURL: server.baseURL, body: HTTPBody("order"))
        }
        #expect(server.counts.requests == 2)
        #expect(server.counts.accepted == 1)
        await transport.shutdown()
        await server.stop()
    }

    @Test func freshConnectionClosedWithoutResponseIsNotRetried() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .closeWithoutResponse }
        let transport = makeTransport()
        await #expect(throws: HTTPSTransportError.connectionClosed) { _ = try await transport.fetch(baseURL: server.baseURL) }
        #expect(server.counts.requests == 1)
        await transport.shutdown()
        await server.stop()
    }

    @Test func idleConnectionsClosedByTheServerAreReplaced() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = makeTransport()
        _ = try await transport.fetch(baseURL: server.baseURL)
        await server.closeIdleConnections()
        try await server.waitUntil { $0.closed == 1 }
        let (response, _) = try await transport.fetch(baseURL: server.baseURL)
        #expect(response.status == .ok)
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func poolClosesConnectionsIdleLongerThanItsIdleTimeout() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = makeTransport(pool: HTTPSTransport.Pool(idleTimeout: .milliseconds(20)))
        _ = try await transport.fetch(baseURL: server.baseURL)
        try await server.waitUntil { $0.closed == 1 }  // closed by the client's idle timer
        _ = try await transport.fetch(baseURL: server.baseURL)
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func headAndNoContentResponsesHaveNoBodyAndKeepTheConnection() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.method == "HEAD"
                ? .raw(Array("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n".utf8), close: false)
                : .respond(status: 204, headers: [], body: [], chunked: false, close: false)
        }
        let transport = makeTransport()
        let head = HTTPRequest(method: .head, scheme: nil, authority: nil, path: "/")
        let (headResponse, headBody) = try await transport.send(head, body: nil, baseURL: server.baseURL, operationID: "t")
        #expect(headResponse.status == .ok)
        #expect(headBody == nil)
        let delete = HTTPRequest(method: .delete, scheme: nil, authority: nil, path: "/x")
        let (deleteResponse, deleteBody) = try await transport.send(
            delete, body: nil, baseURL: server.baseURL, operationID: "t")
        #expect(deleteResponse.status == .noContent)
        #expect(deleteBody == nil)
        #expect(server.counts.accepted == 1)
        await transport.shutdown()
        await server.stop()
    }

    @Test func connectionCloseFromTheServerIsHonoured() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in
            .respond(status: 200, headers: [], body: Array("bye".utf8), chunked: false, close: true)
        }
        let transport = makeTransport()
        for _ in 0..<3 { _ = try await transport.fetch(baseURL: server.baseURL) }
        #expect(server.counts.accepted == 3)
        await transport.shutdown()
        await server.stop()
    }

    @Test func connectionCloseFromTheCallerIsHonoured() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = makeTransport()
        for _ in 0..<2 {
            _ = try await transport.fetch(baseURL: server.baseURL, headers: [.connection: "close"])
        }
        #expect(server.counts.accepted == 2)
        #expect(server.requests.allSatisfy { $0.header("connection") == "close" })
        await transport.shutdown()
        await server.stop()
    }

    @Test func oneMebibyteBody() async throws {
        let payload = pattern(1 << 20)
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok(payload) }
        let transport = makeTransport()
        let (_, body) = try await transport.fetch(baseURL: server.baseURL)
        #expect(body.count == 1 << 20)
        #expect(body == payload)
        await transport.shutdown()
        await server.stop()
    }

    @Test func chunkedResponseBody() async throws {
        let payload = pattern(100_000)
        let server = try await LoopbackHTTPServer.startTLS { _ in
            .respond(status: 200, headers: [], body: payload, chunked: true, close: false)
        }
        let transport = makeTransport()
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
        let (_, body) = try await transport.send(request, body: nil, baseURL: server.baseURL, operationID: "t")
        #expect(body?.length == .unknown)
        #expect(try await [UInt8](collecting: body!, upTo: .max) == payload)
        _ = try await transport.fetch(baseURL: server.baseURL)
        #expect(server.counts.accepted == 1)
        await transport.shutdown()
        await server.stop()
    }

    @Test func chunkedAndContentLengthRequestBodies() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in .ok(Array("\(request.body.count)".utf8)) }
        let transport = makeTransport()
        let parts = [pattern(10_000), pattern(5), pattern(70_000)]
        let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
            for part in parts { continuation.yield(ArraySlice(part)) }
            continuation.finish()
        }
        let (_, chunkedReply) = try await transport.fetch(
            .post, baseURL: server.baseURL, body: HTTPBody(stream, length: .unknown))
        #expect(String(decoding: chunkedReply, as: UTF8.self) == "80005")
        let (_, knownReply) = try await transport.fetch(.put, baseURL: server.baseURL, body: HTTPBody(pattern(1234)))
        #expect(String(decoding: knownReply, as: UTF8.self) == "1234")
        let received = server.requests
        #expect(received[0].header("transfer-encoding") == "chunked")
        #expect(received[0].body == parts.flatMap { $0 })
        #expect(received[1].header("content-length") == "1234")
        #expect(received[1].body == pattern(1234))
        await transport.shutdown()
        await server.stop()
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        "NOT HTTP AT ALL\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ])
    func malformedResponsesGiveTypedErrors(_ raw: String) async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .raw(Array(raw.utf8), close: false) }
        let transport = makeTransport()
        await #expect {
            _ = try await transport.fetch(baseURL: server.baseURL)
        } throws: { error in
            isTransportError(error, code: .malformedResponse)
        }
        await transport.shutdown()
        await server.stop()
    }

    @Test func truncatedBodyFailsTheBody() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in
            .raw(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8), close: true)
        }
        let transport = makeTransport()
        await #expect {
            _ = try await transport.fetch(baseURL: server.baseURL)
        } throws: { error in
            isTransportError(error, .connectionClosed) || isTransportError(error, code: .malformedResponse)
        }
        await transport.shutdown()
        await server.stop()
    }

    @Test(arguments: [false, true])
    func oversizeBodyIsRefused(chunked: Bool) async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in
            .respond(status: 200, headers: [], body: pattern(5_000), chunked: chunked, close: false)
        }
        let transport = makeTransport(maxResponseBodyBytes: 1_000)
        await #expect {
            _ = try await transport.fetch(baseURL: server.baseURL)
        } throws: { error in
            error as? HTTPSTransportError == .responseBodyTooLarge(limit: 1_000)
                && "\(error)".contains("1000-byte limit")
        }
        await transport.shutdown()
        await server.stop()
    }

    @Test func connectionsPerHostAreLimited() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok(pattern(50_000)) }
        let transport = makeTransport(pool: HTTPSTransport.Pool(maxConnectionsPerHost: 2))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { try await transport.fetch(baseURL: server.baseURL).1.count }
            }
            for try await count in group { #expect(count == 50_000) }
        }
        #expect(server.counts.requests == 8)
        #expect(server.counts.accepted <= 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func droppedBodyIsDiscardedAndTheConnectionReused() async throws {
        // Far above the body stream's high watermark: the unread body holds the connection's reads back until
        // it is dropped; then the rest is read and discarded, and the connection goes back to the pool.
        let payload = pattern(512 * 1024)
        let server = try await LoopbackHTTPServer.startTLS { request in request.uri == "/big" ? .ok(payload) : .ok() }
        let transport = makeTransport(pool: HTTPSTransport.Pool(maxConnectionsPerHost: 1))
        do {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/big")
            let (response, body) = try await transport.send(request, body: nil, baseURL: server.baseURL, operationID: "t")
            #expect(response.status == .ok)
            #expect(body?.length == .known(Int64(payload.count)))
        }  // the body goes away unread
        let (response, reply) = try await transport.fetch(baseURL: server.baseURL)
        #expect(response.status == .ok)
        #expect(reply == Array("ok".utf8))
        #expect(server.counts.accepted == 1)
        #expect(server.requests.map(\.indexOnConnection) == [1, 2])
        await transport.shutdown()
        await server.stop()
    }

    @Test(arguments: ["https://./", "https://%00/", "https://a%00b.test/"])
    func hostsWithoutAUsableNameAreRefused(_ url: String) async throws {
        let transport = makeTransport()
        await #expect {
            _ = try await transport.fetch(baseURL: try #require(URL(string: url)))
        } throws: { error in
            guard let error = error as? HTTPSTransportError, error.code == .invalidURL, let reason = error.reason else { return false }
            return reason.contains("no usable host name")
        }
        await transport.shutdown()
    }

    @Test func redirectsAreReturnedNotFollowed() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in
            .respond(status: 302, headers: [("Location", "/elsewhere")], body: [], chunked: false, close: false)
        }
        let transport = makeTransport()
        let (response, _) = try await transport.fetch(baseURL: server.baseURL)
        #expect(response.status.code == 302)
        #expect(response.headerFields[.location] == "/elsewhere")
        #expect(server.counts.requests == 1)
        await transport.shutdown()
        await server.stop()
    }
}

/// The transport's own logger: HTTP-level events go to it, TLS events stay with the TLS configuration's logger.
@Suite(.timeLimit(.minutes(3))) struct TransportLoggerTests {
    @Test func poolEventsGoToTheTransportsLoggerAndTLSEventsDoNot() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let http = LogCapture()
        let transport = HTTPSTransport(
            configuration: .init(tls: loopbackClientTLS, timeouts: .wide(), logger: http.logger()), security: realSecurity())
        _ = try await transport.fetch(baseURL: server.baseURL)
        _ = try await transport.fetch(baseURL: server.baseURL)
        let messages = http.records.map(\.message)
        #expect(messages.contains("opening connection"))
        #expect(messages.contains("reusing connection"))
        #expect(!messages.contains { $0.contains("pin") }, "a TLS event reached the transport's logger: \(messages)")
        await transport.shutdown()
        await server.stop()
    }
}

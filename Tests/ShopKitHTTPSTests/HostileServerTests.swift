import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitHTTPS

/// A hostile or broken HTTP/1.1 server on real TLS (the scripted loopback server, which chooses where TLS records
/// are cut). Each case asserts what a caller cares about: the right body reaches the right caller, a connection
/// whose framing is in doubt is never reused, every request ends (by its deadline at the latest: a hang fails the
/// suite's time limit), and the error names who was at fault.
@Suite(.timeLimit(.minutes(3))) struct HostileServerTests {
    /// `200 OK` whose body is `body`, kept alive.
    static func response(_ body: String) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }

    /// A complete response nobody asked for.
    static let injected = response("INJECTED12345")

    /// One connection at a time. A request left waiting would end at the suite's time limit, as a cancellation,
    /// not as the error each test expects (the timers are wide, so that load cannot end a request early).
    static func contendedTransport() -> HTTPSTransport {
        // The pool's idle timeout is wide too: only what the server sends may close an idle connection here.
        makeTransport(timeouts: .wide(), pool: .init(maxConnectionsPerHost: 1, idleTimeout: .seconds(600)))
    }

    /// GETs `paths` concurrently; each path's body or error.
    static func fetchAll(_ paths: [String], on transport: HTTPSTransport, server: LoopbackHTTPServer) async
        -> [String: Result<String, any Error>]
    {
        await withTaskGroup(of: (String, Result<String, any Error>).self) { group in
            for path in paths {
                group.addTask {
                    do {
                        let (_, body) = try await transport.fetch(.get, path, baseURL: server.baseURL)
                        return (path, .success(String(decoding: body, as: UTF8.self)))
                    } catch {
                        return (path, .failure(error))
                    }
                }
            }
            var results: [String: Result<String, any Error>] = [:]
            for await (path, result) in group { results[path] = result }
            return results
        }
    }

    /// Every request reached the server once, and no connection served a second request.
    static func expectEachSentOnceOnItsOwnConnection(_ server: LoopbackHTTPServer, _ paths: [String]) {
        let requests = server.requests
        #expect(requests.map(\.uri).sorted() == paths.sorted(), "a request was sent twice, or not at all")
        #expect(requests.allSatisfy { $0.indexOnConnection == 1 }, "a connection in doubt was reused")
    }

    // MARK: Stray bytes after a complete response

    /// Defect: the stray response, in a TLS record of its own, became the next caller's response.
    @Test func strayResponseInItsOwnRecordNeverReachesTheNextCaller() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            .records([Self.response(request.uri), Self.injected], close: false)
        }
        let transport = Self.contendedTransport()
        let paths = ["/r1", "/r2", "/r3", "/r4"]
        let results = await Self.fetchAll(paths, on: transport, server: server)
        for path in paths {
            #expect(try results[path]?.get() == path, "\(path) got another response")
        }
        Self.expectEachSentOnceOnItsOwnConnection(server, paths)
        await transport.shutdown()
        await server.stop()
    }

    /// Defect: with the stray response in the same record, the waiting request was written onto the poisoned
    /// connection, failed as `connectionClosed`, and was sent twice.
    @Test func strayResponseInTheSameRecordIsNeverFollowedByARequest() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            .raw(Self.response(request.uri) + Self.injected, close: false)
        }
        let transport = Self.contendedTransport()
        let paths = ["/r1", "/r2", "/r3"]
        let results = await Self.fetchAll(paths, on: transport, server: server)
        for path in paths {
            #expect(try results[path]?.get() == path, "\(path) got another response")
        }
        Self.expectEachSentOnceOnItsOwnConnection(server, paths)
        await transport.shutdown()
        await server.stop()
    }

    /// Half a stray response head after a complete response, in the same read. The HTTP decoder takes the fragment
    /// in without a sign (the limit of detection: README, "Hostile servers"), so the next request on that
    /// connection may fail; it fails as the server's fault, never with bytes that another request caused, never
    /// by a timeout, and it is not sent twice.
    @Test func strayPartialHeadFailsTheNextResponseAsTheServersFault() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            .records([Self.response(request.uri), Array("HTTP/1.1 200 OK\r\nContent-Le".utf8)], close: false)
        }
        let transport = Self.contendedTransport()
        let paths = ["/r1", "/r2", "/r3"]
        let results = await Self.fetchAll(paths, on: transport, server: server)
        for path in paths {
            switch results[path] {
            case .success(let body)?:
                #expect(body == path, "\(path) got another response")
            case .failure(let error)?:
                #expect(isTransportError(error, code: .malformedResponse), "\(path): \(error)")
            case nil:
                Issue.record("\(path) has no outcome")
            }
        }
        #expect(results.values.contains { (try? $0.get()) != nil }, "the first response on a connection is delivered")
        #expect(server.requests.map(\.uri).sorted() == paths, "a request was sent twice, or not at all")
        await transport.shutdown()
        await server.stop()
    }

    /// A fragment that parses as the start of a response head, ending inside a header value: it would become the
    /// next caller's status and headers, with its real status line as the value of `x-splice`.
    static let splice = Array("HTTP/1.1 302 Found\r\nLocation: https://evil.example/\r\nSet-Cookie: sess=attacker\r\nX-Splice: ".utf8)

    /// Whether `response` carries anything of ``splice``.
    static func isSpliced(_ response: HTTPResponse) -> Bool {
        response.status == .found || response.headerFields[.location] != nil || response.headerFields[.setCookie] != nil
            || response.headerFields[HTTPField.Name("X-Splice")!] != nil
    }

    /// Defect: the fragment, sent while the connection sat idle in the pool, became the next caller's 302 with
    /// the attacker's `Location` and `Set-Cookie`. Bytes on an idle connection close it: nobody asked for them.
    @Test func aFragmentOnAnIdleConnectionClosesItAndReachesNobody() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in .raw(Self.response(request.uri), close: false) }
        let transport = Self.contendedTransport()
        #expect(try await transport.fetch(.get, "/r1", baseURL: server.baseURL).1 == Array("/r1".utf8))
        #expect(server.writeToIdleConnections(Self.splice) == 1)
        try await server.waitUntil("the client to close the connection the fragment arrived on") { $0.closed == 1 }
        let (response, body) = try await transport.fetch(.get, "/r2", baseURL: server.baseURL)
        #expect(!Self.isSpliced(response), "\(response.status) \(response.headerFields)")
        #expect(response.status == .ok && body == Array("/r2".utf8))
        #expect(server.counts.accepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    /// The same fragment in the read that ends a response (in its record, or in a record of its own): the
    /// response decoder ends the response exactly at its `Content-Length`, so the fragment is stray; the
    /// connection is closed, and no caller ever sees the fragment's status or headers. (With NIO's decoder the
    /// fragment, a valid header prefix, was kept for the next response: the next caller got the 302.)
    @Test(arguments: [false, true]) func aFragmentInTheReadThatEndsAResponseReachesNobody(ownRecord: Bool) async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            ownRecord
                ? .records([Self.response(request.uri), Self.splice], close: false)
                : .raw(Self.response(request.uri) + Self.splice, close: false)
        }
        let transport = Self.contendedTransport()
        let results = await Self.fetchAll(["/r1", "/r2"], on: transport, server: server)
        let (after, _) = try await transport.fetch(.get, "/r3", baseURL: server.baseURL)
        #expect(!Self.isSpliced(after), "\(after.status) \(after.headerFields)")
        for path in ["/r1", "/r2"] {
            switch results[path] {
            case .success(let body)?: #expect(body == path, "\(path) got another response")
            case .failure(let error)?: #expect(isTransportError(error, code: .malformedResponse), "\(path): \(error)")
            case nil: Issue.record("\(path) has no outcome")
            }
        }
        Self.expectEachSentOnceOnItsOwnConnection(server, ["/r1", "/r2", "/r3"])
        await transport.shutdown()
        await server.stop()
    }

    // MARK: 101 Switching Protocols, which the client never asks for

    /// Defect: `101` followed by a `200` in the same write left one queued request waiting forever.
    @Test func switchingProtocolsThenAResponseFailsThatRequestAndNoOtherHangs() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            guard request.connection == 1 else { return .raw(Self.response(request.uri), close: false) }
            return .raw(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n".utf8) + Self.response(request.uri), close: false)
        }
        let transport = Self.contendedTransport()
        let paths = ["/r1", "/r2", "/r3"]
        let results = await Self.fetchAll(paths, on: transport, server: server)
        var failed: [String] = []
        for path in paths {
            switch results[path] {
            case .success(let body)?:
                #expect(body == path, "\(path) got another response")
            case .failure(let error)?:
                failed.append(path)
                #expect(isTransportError(error, code: .malformedResponse), "\(path): \(error)")
                #expect("\(error)".contains("101"), "the error says what the server did: \(error)")
            case nil:
                Issue.record("\(path) has no outcome")
            }
        }
        #expect(failed.count == 1, "exactly the request answered with 101 fails")
        #expect(server.requests.map(\.uri).sorted() == paths, "a request was sent twice, or not at all")
        #expect(server.requests.filter { $0.connection == 1 }.count == 1, "the connection that sent 101 was reused")
        await transport.shutdown()
        await server.stop()
    }

    /// Defect: a lone `101` was taken as the final response and the connection went back to the pool.
    @Test func switchingProtocolsIsAProtocolErrorAndTheConnectionIsNotReused() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.connection == 1
                ? .raw(Array("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n".utf8), close: false)
                : .raw(Self.response(request.uri), close: false)
        }
        let transport = Self.contendedTransport()
        do {
            let (response, _) = try await transport.fetch(.get, "/upgrade", baseURL: server.baseURL)
            Issue.record("a 101 must not be a response: got \(response.status)")
        } catch {
            #expect(isTransportError(error, code: .malformedResponse), "\(error)")
        }
        let (_, body) = try await transport.fetch(.get, "/next", baseURL: server.baseURL)
        #expect(String(decoding: body, as: UTF8.self) == "/next")
        #expect(server.requests.map(\.connection) == [1, 2], "the connection that sent 101 was reused")
        await transport.shutdown()
        await server.stop()
    }

    // MARK: The request target (the caller's own input: nothing may reach the wire)

    /// Defect: the base URL's path was percent-decoded into the request target.
    @Test func baseURLPathIsSentAsEncoded() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in .raw(Self.response(request.uri), close: false) }
        let transport = makeTransport()
        for (base, expected) in [
            ("/a%3Fb=1%23/", "/a%3Fb=1%23/p"),
            ("/x%2F..%2Fy/", "/x%2F..%2Fy/p"),
            ("/a%20b/", "/a%20b/p"),
        ] {
            let url = URL(string: "https://127.0.0.1:\(server.port)\(base)")!
            let (_, body) = try await transport.fetch(.get, "/p", baseURL: url)
            #expect(String(decoding: body, as: UTF8.self) == expected, "base \(base)")
        }
        await transport.shutdown()
        await server.stop()
    }

    /// Defect: an invalid request path was reported as the server's `malformedResponse`.
    @Test func invalidRequestPathIsTheCallersErrorAndNeverConnects() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in .raw(Self.response(request.uri), close: false) }
        let transport = makeTransport()
        for path in ["/a b", "/a\r\nX-Injected: 1", "/a#fragment", "/caf\u{E9}", "/a\u{0}b"] {
            do {
                _ = try await transport.fetch(.get, path, baseURL: server.baseURL)
                Issue.record("\(path.debugDescription) must be refused")
            } catch let error as HTTPSTransportError {
                guard error.code == .invalidURL else {
                    Issue.record("\(path.debugDescription): expected invalidURL, got \(error)")
                    continue
                }
            }
        }
        #expect(server.counts.accepted == 0, "nothing reaches the wire for an invalid request")
        await transport.shutdown()
        await server.stop()
    }

    // MARK: What held before the review, kept holding

    /// A response whose framing is broken fails as the server's fault, and its connection is not used again.
    @Test(arguments: [
        ("duplicate conflicting Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
        ("Content-Length with chunked", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
        ("a chunk size that is not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
        ("a status line that is not HTTP", "HTTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ("a header with no colon", "HTTP/1.1 200 OK\r\nContent-Length 3\r\n\r\nabc"),
    ])
    func brokenFramingIsTheServersFault(_ what: String, _ response: String) async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.connection == 1 ? .raw(Array(response.utf8), close: false) : .raw(Self.response(request.uri), close: false)
        }
        let transport = Self.contendedTransport()
        do {
            _ = try await transport.fetch(.get, "/broken", baseURL: server.baseURL)
            Issue.record("\(what): must fail")
        } catch {
            #expect(isTransportError(error, code: .malformedResponse), "\(what): \(error)")
        }
        let (_, body) = try await transport.fetch(.get, "/next", baseURL: server.baseURL)
        #expect(String(decoding: body, as: UTF8.self) == "/next")
        #expect(server.requests.map(\.connection) == [1, 2], "\(what): the connection was used again")
        await transport.shutdown()
        await server.stop()
    }

    /// Interim responses are skipped, and the final one reaches its caller; the connection stays usable.
    @Test func interimResponsesAreSkipped() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            .raw(Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n".utf8)
                + Self.response(request.uri), close: false)
        }
        let transport = Self.contendedTransport()
        for path in ["/a", "/b"] {
            let (response, body) = try await transport.fetch(.get, path, baseURL: server.baseURL)
            #expect(response.status == .ok)
            #expect(String(decoding: body, as: UTF8.self) == path)
        }
        #expect(server.requests.map(\.connection) == [1, 1])
        await transport.shutdown()
        await server.stop()
    }

    /// A body after a 204 (which has none by definition) is delivered as no body, and its bytes make the
    /// connection doubtful: the next request goes out on a new connection, with its own response.
    @Test func aBodyAfterA204IsNotTakenForTheNextResponse() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.uri == "/empty"
                ? .raw(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8) + Self.injected, close: false)
                : .raw(Self.response(request.uri), close: false)
        }
        let transport = Self.contendedTransport()
        let (response, body) = try await transport.fetch(.get, "/empty", baseURL: server.baseURL)
        #expect(response.status == .noContent)
        #expect(body.isEmpty)
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: server.baseURL)
        #expect(String(decoding: next, as: UTF8.self) == "/next")
        #expect(server.requests.map(\.connection) == [1, 2], "a connection with a stray response after 204 was reused")
        await transport.shutdown()
        await server.stop()
    }

    /// A POST whose kept-alive connection the server closed without answering is never sent twice.
    @Test func aPostIsNeverSentTwice() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.method == "POST" ? .closeWithoutResponse : .raw(Self.response(request.uri), close: false)
        }
        let transport = Self.contendedTransport()
        _ = try await transport.fetch(.get, "/warm", baseURL: server.baseURL)  // a kept-alive connection to reuse
        await #expect(throws: HTTPSTransportError.connectionClosed) {
            _ = try await transport.fetch(.post, "/order", baseURL: server.baseURL, body: HTTPBody("order"))
        }
        #expect(server.requests.filter { $0.method == "POST" }.count == 1, "the POST was sent twice")
        await transport.shutdown()
        await server.stop()
    }
}

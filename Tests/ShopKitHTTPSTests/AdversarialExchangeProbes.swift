import Foundation
import HTTPTypes
import NIOCore
import OpenAPIRuntime
import ShopKitHTTPS
import ShopKitTLS
import TestSupport
import Testing

// Hostile-peer probes of the public API (HTTPSTransport.send) against what README "Pinned HTTPS transport" promises:
// every caller gets its own answer, a connection in doubt is never reused, every request ends by its deadline,
// and an error names the party at fault. Peers: RawTLSPeer (raw bytes at any point of an exchange, HTTP/1.1 or
// h2 by ALPN), LoopbackHTTPServer and LoopbackHTTP2Server.

// MARK: - Helpers

enum Probe {
    static let h1Context = try! TLSServerContext(
        certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
        applicationProtocols: ["http/1.1"])
    static let h2Context = try! TLSServerContext(
        certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
        applicationProtocols: ["h2"])

    /// A transport built by the public initializer only.
    static func transport(
        _ version: HTTPSTransport.HTTPVersionPolicy = .http1Only, connections: Int = 1,
        timeouts: HTTPSTransport.Timeouts = .wide(), maxResponseBodyBytes: Int = 1 << 20
    ) -> HTTPSTransport {
        try! HTTPSTransport(
            configuration: .init(
                tls: loopbackClientTLS, timeouts: timeouts,
                pool: .init(maxConnectionsPerHost: connections, idleTimeout: .seconds(600)),
                maxResponseBodyBytes: maxResponseBodyBytes, httpVersion: version))
    }

    static func base(_ port: Int) -> URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// Runs `body`, returning its outcome and how long it took.
    static func timed<T: Sendable>(_ body: @Sendable () async throws -> T) async -> (Result<T, any Error>, Duration) {
        let start = ContinuousClock.now
        do {
            let value = try await body()
            return (.success(value), ContinuousClock.now - start)
        } catch {
            return (.failure(error), ContinuousClock.now - start)
        }
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static func isServerFault(_ error: any Error) -> Bool {
        guard let error = error as? HTTPSTransportError else { return false }
        switch error.code {
        case .malformedResponse, .connectionClosed, .streamReset, .responseBodyTooLarge: return true
        default: return false
        }
    }
}

struct ProbeBodyError: Error, Equatable { let tag: String }

/// A request body scripted part by part.
struct ScriptedBody: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    enum Part: Sendable {
        case bytes([UInt8])
        case wait(Gate)
        case pause(Duration)
        case fail(String)
        case signal(EventCounter)
    }
    let parts: [Part]

    struct AsyncIterator: AsyncIteratorProtocol {
        let parts: [Part]
        var index = 0
        mutating func next() async throws -> HTTPBody.ByteChunk? {
            while index < parts.count {
                let part = parts[index]
                index += 1
                switch part {
                case .bytes(let bytes): return ArraySlice(bytes)
                case .wait(let gate): try await gate.wait()
                case .pause(let duration): try await Task.sleep(for: duration)
                case .fail(let tag): throw ProbeBodyError(tag: tag)
                case .signal(let counter): await counter.increment()
                }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(parts: parts) }

    static func body(_ parts: [Part], length: HTTPBody.Length, replayable: Bool = false) -> HTTPBody {
        HTTPBody(ScriptedBody(parts: parts), length: length, iterationBehavior: replayable ? .multiple : .single)
    }
}

/// HTTP/1.1 on the peer's side: requests parsed out of the received bytes, and responses.
enum H1 {
    struct Parsed {
        let line: String
        let headers: [String]
        let body: [UInt8]
        let end: Int
        var path: String { line.split(separator: " ").dropFirst().first.map(String.init) ?? "?" }
    }

    static func crlf(_ bytes: [UInt8], from: Int) -> Int? {
        var index = from
        while index + 1 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }

    static func head(_ bytes: [UInt8], from: Int) -> (line: String, headers: [String], end: Int)? {
        var index = from
        while index + 3 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
                var lines = Probe.text(Array(bytes[from..<index])).components(separatedBy: "\r\n")
                let line = lines.removeFirst()
                return (line, lines, index + 4)
            }
            index += 1
        }
        return nil
    }

    /// The next complete request from `from`, or nil while it is incomplete.
    static func request(_ bytes: [UInt8], from: Int) -> Parsed? {
        guard let head = head(bytes, from: from) else { return nil }
        let lower = head.headers.map { $0.lowercased() }
        if let length = lower.first(where: { $0.hasPrefix("content-length:") }) {
            let count = Int(length.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
            guard bytes.count >= head.end + count else { return nil }
            return Parsed(line: head.line, headers: head.headers, body: Array(bytes[head.end..<head.end + count]), end: head.end + count)
        }
        if lower.contains(where: { $0.hasPrefix("transfer-encoding:") && $0.contains("chunked") }) {
            var index = head.end
            var body: [UInt8] = []
            while true {
                guard let lineEnd = crlf(bytes, from: index) else { return nil }
                let sizeText = Probe.text(Array(bytes[index..<lineEnd])).split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                    return Parsed(line: "BROKEN-CHUNK in " + head.line, headers: [], body: body, end: bytes.count)
                }
                index = lineEnd + 2
                if size == 0 {
                    while true {
                        guard let end = crlf(bytes, from: index) else { return nil }
                        let empty = end == index
                        index = end + 2
                        if empty { break }
                    }
                    return Parsed(line: head.line, headers: head.headers, body: body, end: index)
                }
                guard bytes.count >= index + size + 2 else { return nil }
                body += bytes[index..<index + size]
                index += size + 2
            }
        }
        return Parsed(line: head.line, headers: head.headers, body: [], end: head.end)
    }

    static func response(_ body: String, extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)".utf8)
    }

    /// Answers every complete request with its path and body; `first` may answer connection 1's first request
    /// differently (or early, at its head).
    static func echo(earlyOnFirst: [UInt8]? = nil) -> RawTLSPeer.Script {
        { connection in
            var actions: [RawTLSPeer.Action] = []
            if let early = earlyOnFirst, connection.number == 1, connection.phase == 0,
                let head = head(connection.received, from: 0)
            {
                connection.phase = 1
                connection.notes.append("early-answered " + head.line)
                actions.append(.send([early]))
            }
            while let request = request(connection.received, from: connection.cursor) {
                connection.cursor = request.end
                connection.notes.append(request.line + " body=" + Probe.text(request.body))
                if earlyOnFirst != nil, connection.number == 1, connection.notes.count == 2 { continue }
                actions.append(.send([response(request.path + ":" + Probe.text(request.body))]))
            }
            return actions
        }
    }
}

/// HTTP/2 frames on the peer's side (RFC 9113 §4.1; HPACK literals without indexing, RFC 7541 §6.2.2).
enum H2 {
    struct Frame: Sendable {
        let type: UInt8
        let flags: UInt8
        let stream: UInt32
        let payload: [UInt8]
        var endStream: Bool { flags & 1 != 0 }
    }

    static func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + payload
    }

    static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func settings(_ parameters: [(UInt16, UInt32)]) -> [UInt8] {
        frame(4, 0, 0, parameters.flatMap { [UInt8($0.0 >> 8), UInt8($0.0 & 0xFF)] + u32($0.1) })
    }

    static let settingsAck = frame(4, 1, 0, [])
    static func rst(_ stream: UInt32, _ code: UInt32) -> [UInt8] { frame(3, 0, stream, u32(code)) }
    static func goAway(_ last: UInt32, _ code: UInt32) -> [UInt8] { frame(7, 0, 0, u32(last) + u32(code)) }

    static func headers(_ stream: UInt32, _ fields: [(String, String)], end: Bool) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block.append(0)
            for string in [name, value] {
                block.append(UInt8(string.utf8.count))
                block += Array(string.utf8)
            }
        }
        return frame(1, 0x4 | (end ? 1 : 0), stream, block)
    }

    static func response(_ stream: UInt32, _ body: String, contentLength: Int? = nil) -> [UInt8] {
        headers(stream, [(":status", "200"), ("content-length", "\(contentLength ?? body.utf8.count)")], end: false)
            + data(stream, body, end: true)
    }

    static func data(_ stream: UInt32, _ body: String, end: Bool) -> [UInt8] {
        frame(0, end ? 1 : 0, stream, Array(body.utf8))
    }

    /// The complete frames after `connection.cursor` (the 24-byte preface skipped).
    static func take(_ connection: inout RawTLSPeer.Connection) -> [Frame] {
        var frames: [Frame] = []
        let bytes = connection.received
        while bytes.count - connection.cursor >= 9 {
            let at = connection.cursor
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            guard bytes.count - at >= 9 + length else { break }
            let stream = UInt32(bytes[at + 5] & 0x7F) << 24 | UInt32(bytes[at + 6]) << 16 | UInt32(bytes[at + 7]) << 8
                | UInt32(bytes[at + 8])
            frames.append(Frame(type: bytes[at + 3], flags: bytes[at + 4], stream: stream, payload: Array(bytes[at + 9..<at + 9 + length])))
            connection.cursor = at + 9 + length
        }
        return frames
    }

    typealias OnFrame = @Sendable (Frame, inout RawTLSPeer.Connection) -> [RawTLSPeer.Action]

    /// A peer script: sends SETTINGS once the preface arrived, acknowledges SETTINGS and PING, notes each stream's
    /// HEADERS (in `streams`), DATA (`data <stream> <bytes>`), RST_STREAM (`rst <stream> <code>`) and GOAWAY,
    /// and hands every frame to `onFrame`.
    static func script(settings parameters: [(UInt16, UInt32)] = [], _ onFrame: @escaping OnFrame) -> RawTLSPeer.Script {
        { connection in
            guard connection.received.count >= 24 else { return [] }
            var actions: [RawTLSPeer.Action] = []
            if connection.cursor < 24 {
                connection.cursor = 24
                actions.append(.send([settings(parameters)]))
            }
            for frame in take(&connection) {
                switch frame.type {
                case 4 where frame.flags & 1 == 0: actions.append(.send([settingsAck]))
                case 6 where frame.flags & 1 == 0: actions.append(.send([H2.frame(6, 1, 0, frame.payload)]))
                case 1: connection.streams.append(frame.stream)
                case 0: connection.notes.append("data \(frame.stream) \(Probe.text(frame.payload))")
                case 3: connection.notes.append("rst \(frame.stream) \(frame.payload.last ?? 0)")
                case 7: connection.notes.append("goaway")
                default: break
                }
                actions += onFrame(frame, &connection)
            }
            return actions
        }
    }

    /// The body the stream sent so far.
    static func body(of stream: UInt32, in connection: RawTLSPeer.Connection) -> String {
        connection.notes.filter { $0.hasPrefix("data \(stream) ") }.map { String($0.dropFirst("data \(stream) ".count)) }.joined()
    }

    /// Whether this frame ends the client's side of its stream.
    static func ends(_ frame: Frame) -> Bool { (frame.type == 0 || frame.type == 1) && frame.endStream }

    /// Answers each stream, once its request ended, with `echo:<its body>`.
    static func echo(_ frame: Frame, _ connection: inout RawTLSPeer.Connection) -> [RawTLSPeer.Action] {
        guard ends(frame) else { return [] }
        return [.send([response(frame.stream, "echo:" + body(of: frame.stream, in: connection))])]
    }
}

// MARK: - HTTP/1.1

/// The adversarial pass's probes (issue "every byte accounted for"), written by a reviewer with the public API and
/// README only. Run on demand: `SHOPKIT_ADVERSARIAL=1 swift test --filter AdversarialExchangeProbes`. Not in the
/// default pass: many probes bound how soon a request ends (well before its request timer) with wall-clock
/// limits, which a loaded machine can exceed. The breaks they found have regression tests in the default pass
/// (``HTTPConversionTests``, ``HTTP2GoAwayRaceTests``, ``HTTP2ClosingConnectionTests``).
@Suite(
    .enabled(if: ProcessInfo.processInfo.environment["SHOPKIT_ADVERSARIAL"] != nil, "set SHOPKIT_ADVERSARIAL=1"),
    .timeLimit(.minutes(3)))
struct AdversarialExchangeProbes {
    // MARK: Early responses

    /// A response at the request head, before the body was sent; then the next request on a one-connection pool.
    /// Whatever the transport does with the rest of the upload, the server must never read a request it was not
    /// sent (the next request's bytes as the rest of the body), and the next caller gets its own answer.
    @Test func h1EarlyResponseThenReuseSmugglesNothing() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo(earlyOnFirst: H1.response("early")))
        let transport = Probe.transport()
        let asked = EventCounter()
        let gate = Gate()
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .signal(asked), .wait(gate), .bytes(Array("def".utf8))], length: .known(6))
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/upload")
        let (response, responseBody) = try await transport.send(request, body: body, baseURL: Probe.base(peer.port), operationID: "p")
        #expect(response.status == .ok)
        if let responseBody {
            #expect(Probe.text(try await [UInt8](collecting: responseBody, upTo: 1 << 20)) == "early")
        }
        await gate.open()
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: Probe.base(peer.port))
        #expect(Probe.text(next) == "/next:")
        let notes = peer.connections.values.flatMap(\.notes)
        let allowed: Set<String> = ["early-answered POST /upload HTTP/1.1", "POST /upload HTTP/1.1 body=abcdef", "GET /next HTTP/1.1 body="]
        for note in notes { #expect(allowed.contains(note), "the server read a request nobody sent: \(note) (all: \(notes))") }
        await transport.shutdown()
        await peer.stop()
    }

    /// The same early response, but the rest of the upload never comes: the next request on a one-connection pool
    /// must not wait behind the stuck upload (it is given up, its connection closed), and gets its own answer.
    @Test func h1EarlyResponseWithAStuckUploadDoesNotHoldThePool() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo(earlyOnFirst: H1.response("early")))
        let transport = Probe.transport()
        let gate = Gate()
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .wait(gate), .bytes(Array("def".utf8))], length: .known(6))
        let (_, early) = try await transport.fetch(.post, "/upload", baseURL: Probe.base(peer.port), body: body)
        #expect(Probe.text(early) == "early")
        let (outcome, took) = await Probe.timed { try await transport.fetch(.get, "/next", baseURL: Probe.base(peer.port)) }
        #expect((try? outcome.get().1).map(Probe.text) == "/next:", "\(outcome)")
        #expect(took < .seconds(20), "the next request waited \(took) behind a stuck upload")
        await gate.open()
        await transport.shutdown()
        await peer.stop()
    }

    // MARK: Request bodies that throw

    /// A PUT (idempotent, replayable) on a reused connection whose body throws after its first chunk: the caller
    /// gets its own body's error (not a server fault), nothing is resent, and the next caller gets its own answer.
    @Test(arguments: [HTTPBody.Length.unknown, .known(6)])
    func h1BodyThatThrowsIsTheCallersErrorAndIsNotResent(length: HTTPBody.Length) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo())
        let transport = Probe.transport()
        _ = try await transport.fetch(.get, "/warm", baseURL: Probe.base(peer.port))
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .fail("boom")], length: length, replayable: true)
        let (outcome, _) = await Probe.timed { try await transport.fetch(.put, "/put", baseURL: Probe.base(peer.port), body: body) }
        switch outcome {
        case .success(let value): Issue.record("a body that threw succeeded: \(value)")
        case .failure(let error):
            #expect(error as? ProbeBodyError == ProbeBodyError(tag: "boom"), "the caller's body error became \(type(of: error)): \(error)")
            #expect(!Probe.isServerFault(error), "the caller's body error blames the server: \(error)")
        }
        let (_, next) = try await transport.fetch(.get, "/after", baseURL: Probe.base(peer.port))
        #expect(Probe.text(next) == "/after:")
        let puts = peer.connections.values.map { Probe.text($0.received).components(separatedBy: "PUT /put").count - 1 }.reduce(0, +)
        #expect(puts == 1, "the PUT whose body threw was sent \(puts) times")
        await transport.shutdown()
        await peer.stop()
    }

    // MARK: Framing tricks

    static let sentinel = H1.response("INJECTED")

    /// Raw responses with framing tricks, each followed by a complete stray response. Either the exact body
    /// (`expected`, nil when only a failure is acceptable) or the server's fault; never the sentinel's bytes; and the
    /// next caller gets its own answer.
    @Test(arguments: [
        ("chunk extension", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=\"x\"\r\nhello\r\n0\r\n\r\n", "hello"),
        ("chunk size with leading zeros", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0005\r\nhello\r\n0\r\n\r\n", "hello"),
        ("chunk size overflowing 64 bits", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n", nil),
        ("chunk size ffffffffffffffff", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nhello\r\n0\r\n\r\n", nil),
        ("chunk size 0x5", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", nil),
        ("chunk size -5", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", nil),
        ("bare LF chunks", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n", nil),
        ("bare LF head", "HTTP/1.1 200 OK\nContent-Length: 5\n\nhello", nil),
        ("chunk longer than its size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", nil),
        ("trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", "hello"),
        ("trailer that is a status line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nHTTP/1.1 302 Found\r\n\r\n", nil),
        ("Content-Length +5", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", nil),
        ("Content-Length 5, 5", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", "?hello"),
        ("Content-Length twice the same", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", "?hello"),
        ("Content-Length 05", "HTTP/1.1 200 OK\r\nContent-Length: 05\r\n\r\nhello", "hello"),
        ("Content-Length overflowing", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nhello", nil),
        ("Content-Length 5 5", "HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\nhello", nil),
        ("space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", nil),
        ("folded Content-Length", "HTTP/1.1 200 OK\r\nX-A: a\r\n Content-Length: 3\r\nContent-Length: 5\r\n\r\nhello", nil),
        ("bare CR in a header value", "HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 3\r\nContent-Length: 5\r\n\r\nhello", nil),
        ("NUL in a header value", "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 5\r\n\r\nhello", nil),
        ("TE chunked, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "?hello"),
        ("TE chunked then identity", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n", nil),
        ("TE CHUNKED", "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "?hello"),
        ("TE with CL after it", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n", nil),
        ("TE gzip without chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello", nil),
        ("1xx with Content-Length", "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "?hello"),
        ("1xx with chunked", "HTTP/1.1 103 Early Hints\r\nTransfer-Encoding: chunked\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "?hello"),
        ("304 with a body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello", ""),
        ("status 099", "HTTP/1.1 099 Odd\r\nContent-Length: 5\r\n\r\nhello", nil),
        ("status 1000", "HTTP/1.1 1000 Odd\r\nContent-Length: 5\r\n\r\nhello", nil),
        ("HTTP/2.0 status line", "HTTP/2.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", nil),
        ("empty header name", "HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 5\r\n\r\nhello", nil),
    ] as [(String, String, String?)])
    func h1FramingTrickNeverDeliversForeignBytes(_ what: String, _ raw: String, _ expected: String?) async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.uri == "/case"
                ? .records([Array(raw.utf8), Self.sentinel], close: false)
                : .raw(H1.response(request.uri), close: false)
        }
        let transport = Probe.transport()
        let (outcome, _) = await Probe.timed { try await transport.fetch(.get, "/case", baseURL: server.baseURL) }
        switch outcome {
        case .success(let (response, body)):
            let text = Probe.text(body)
            #expect(!text.contains("INJECTED"), "\(what): the stray response's bytes reached the caller")
            if let expected {
                #expect(text == expected.replacingOccurrences(of: "?", with: ""), "\(what): body \(text.debugDescription), status \(response.status)")
            } else {
                Issue.record("\(what): accepted (status \(response.status.code), body \(text.debugDescription)); must fail as malformed")
            }
        case .failure(let error):
            #expect(Probe.isServerFault(error), "\(what): \(error)")
            if let expected, !expected.hasPrefix("?") {
                Issue.record("\(what): a valid response failed: \(error)")
            }
        }
        let (nextOutcome, _) = await Probe.timed { try await transport.fetch(.get, "/next", baseURL: server.baseURL) }
        #expect((try? nextOutcome.get().1).map(Probe.text) == "/next", "\(what): the next caller got \(nextOutcome)")
        await transport.shutdown()
        await server.stop()
    }

    /// A HEAD answered with a body (and then a stray response): no body for HEAD, the bytes after the head answer no
    /// request, and the next caller gets its own answer.
    @Test func h1HeadWithABodyDeliversNothingToAnyone() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.method == "HEAD"
                ? .raw(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8) + Self.sentinel, close: false)
                : .raw(H1.response(request.uri), close: false)
        }
        let transport = Probe.transport()
        let (head, headBody) = try await transport.fetch(.head, "/h", baseURL: server.baseURL)
        #expect(head.status == .ok && headBody.isEmpty)
        for path in ["/n1", "/n2"] {
            let (_, body) = try await transport.fetch(.get, path, baseURL: server.baseURL)
            #expect(Probe.text(body) == path)
        }
        #expect(server.requests.map(\.connection) == [1, 2, 2], "a connection with bytes after a HEAD response was reused")
        await transport.shutdown()
        await server.stop()
    }

    /// An HTTP/1.0 response without keep-alive: the server closes after it (RFC 9112 §9.3), so the connection must
    /// not be handed to the next request (a POST on it would fail as the server's fault, never resent).
    @Test func h1HTTP10ResponseIsNotReused() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.uri == "/old"
                ? .raw(Array("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8), close: false)
                : .raw(H1.response(request.uri), close: false)
        }
        let transport = Probe.transport()
        _ = try await transport.fetch(.get, "/old", baseURL: server.baseURL)
        let (_, body) = try await transport.fetch(.post, "/new", baseURL: server.baseURL, body: HTTPBody("x"))
        #expect(Probe.text(body) == "/new")
        #expect(server.requests.map(\.connection) == [1, 2], "an HTTP/1.0 connection without keep-alive was reused")
        await transport.shutdown()
        await server.stop()
    }

    // MARK: Truncation

    @Test(arguments: [
        ("Content-Length short, close_notify", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", true),
        ("Content-Length short, bare FIN", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", false),
        ("chunked without last chunk, close_notify", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", true),
        ("chunked mid-chunk, close_notify", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true),
        ("chunked without final CRLF, close_notify", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n", true),
        ("head cut, close_notify", "HTTP/1.1 200 OK\r\nContent-Len", true),
    ] as [(String, String, Bool)])
    func h1TruncatedBodyIsNeverComplete(_ what: String, _ raw: String, _ notify: Bool) async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .steps([.send([Array(raw.utf8)]), .close(notify: notify)]) }
        let transport = Probe.transport()
        let (outcome, _) = await Probe.timed { try await transport.fetch(.get, "/t", baseURL: server.baseURL) }
        switch outcome {
        case .success(let (_, body)): Issue.record("\(what): a truncated response was delivered as complete: \(Probe.text(body))")
        case .failure(let error): #expect(Probe.isServerFault(error), "\(what): \(error)")
        }
        #expect(server.requests.count == 1, "\(what): sent \(server.requests.count) times")
        await transport.shutdown()
        await server.stop()
    }

    // MARK: Deadlines

    static let shortRequest = HTTPSTransport.Timeouts.wide(idleRead: .seconds(1), request: .seconds(2))

    /// Bytes trickled one at a time, each well within idleRead: the request deadline still ends it.
    @Test(arguments: [
        ("trickled body", "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "x", count: 1000)),
        ("trickled head", "HTTP/1.1 200 OK\r\nX-Slow: " + String(repeating: "a", count: 1000)),
        ("trickled 1xx flood", String(repeating: "HTTP/1.1 102 Processing\r\n\r\n", count: 100)),
        ("trickled chunk extensions", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 1000)),
    ])
    func h1TrickledResponseEndsAtTheRequestDeadline(_ what: String, _ raw: String) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context) { connection in
            guard connection.phase == 0, H1.request(connection.received, from: 0) != nil else { return [] }
            connection.phase = 1
            return [.trickle(Array(raw.utf8), every: .milliseconds(50))]
        }
        let transport = Probe.transport(timeouts: Self.shortRequest)
        let (outcome, took) = await Probe.timed { try await transport.fetch(.get, "/slow", baseURL: Probe.base(peer.port)) }
        #expect(throws: HTTPSTransportError.timeout(.request), "\(what)") { try outcome.get() }
        #expect(took < .seconds(12), "\(what): ended after \(took), request timeout 2 s")
        await transport.shutdown()
        await peer.stop()
    }

    /// Ten thousand interim responses at once, then the real one: the real one, or the server's fault; never a
    /// hang.
    @Test func h1InterimFloodEndsEitherWay() async throws {
        let flood = String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 10_000)
        let server = try await LoopbackHTTPServer.startTLS { request in .raw(Array(flood.utf8) + H1.response(request.uri), close: false) }
        let transport = Probe.transport(timeouts: .wide(request: .seconds(20)))
        let (outcome, took) = await Probe.timed { try await transport.fetch(.get, "/f", baseURL: server.baseURL) }
        switch outcome {
        case .success(let (_, body)): #expect(Probe.text(body) == "/f")
        case .failure(let error): #expect(Probe.isServerFault(error), "\(error) after \(took)")
        }
        await transport.shutdown()
        await server.stop()
    }

    /// An upload whose body never yields again: the request deadline ends it (not idleRead, not the body's own
    /// gate), over both protocols.
    @Test(arguments: [HTTPSTransport.HTTPVersionPolicy.http1Only, .http2Only])
    func stuckUploadEndsAtTheRequestDeadline(version: HTTPSTransport.HTTPVersionPolicy) async throws {
        let port: Int
        let stop: @Sendable () async -> Void
        if version == .http1Only {
            let server = try await LoopbackHTTPServer.startTLS { request in .ok(Array(request.uri.utf8)) }
            port = server.port
            stop = { await server.stop() }
        } else {
            let server = try await LoopbackHTTP2Server.start { request in .respond(body: Array(request.path.utf8)) }
            port = server.port
            stop = { try? await server.shutdown() }
        }
        let transport = Probe.transport(version, timeouts: Self.shortRequest)
        let gate = Gate()
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .wait(gate), .bytes(Array("def".utf8))], length: .known(6))
        let (outcome, took) = await Probe.timed { try await transport.fetch(.post, "/stuck", baseURL: Probe.base(port), body: body) }
        #expect(throws: HTTPSTransportError.timeout(.request)) { try outcome.get() }
        #expect(took < .seconds(12), "ended after \(took)")
        await gate.open()
        await transport.shutdown()
        await stop()
    }

    /// A slow upload (a chunk every 400 ms, idleRead 1 s) is not silence: it succeeds, over both protocols.
    @Test(arguments: [HTTPSTransport.HTTPVersionPolicy.http1Only, .http2Only])
    func slowUploadIsNotIdle(version: HTTPSTransport.HTTPVersionPolicy) async throws {
        let port: Int
        let stop: @Sendable () async -> Void
        if version == .http1Only {
            let server = try await LoopbackHTTPServer.startTLS { request in .ok(request.body) }
            port = server.port
            stop = { await server.stop() }
        } else {
            let server = try await LoopbackHTTP2Server.start { request in .respond(body: request.body) }
            port = server.port
            stop = { try? await server.shutdown() }
        }
        let transport = Probe.transport(version, timeouts: .wide(idleRead: .seconds(1)))
        let parts: [ScriptedBody.Part] = (0..<6).flatMap { i in [.pause(.milliseconds(400)), .bytes([UInt8(ascii: "a") + UInt8(i)])] }
        let (outcome, _) = await Probe.timed {
            try await transport.fetch(.post, "/slow", baseURL: Probe.base(port), body: ScriptedBody.body(parts, length: .known(6)))
        }
        #expect((try? outcome.get().1).map(Probe.text) == "abcdef", "\(outcome)")
        await transport.shutdown()
        await stop()
    }

    // MARK: Retries

    /// A PUT whose body can be read only once, on a reused connection the server closes without answering: not
    /// resent (its body cannot be replayed), and the error is the connection's.
    @Test func h1SingleUseBodyIsNeverResent() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in request.method == "PUT" ? .closeWithoutResponse : .ok() }
        let transport = Probe.transport()
        _ = try await transport.fetch(.get, "/warm", baseURL: server.baseURL)
        let body = ScriptedBody.body([.bytes(Array("abc".utf8))], length: .known(3))
        let (outcome, _) = await Probe.timed { try await transport.fetch(.put, "/put", baseURL: server.baseURL, body: body) }
        #expect(throws: HTTPSTransportError.connectionClosed) { try outcome.get() }
        #expect(server.requests.filter { $0.method == "PUT" }.count == 1, "a PUT with a single-use body was sent twice")
        await transport.shutdown()
        await server.stop()
    }

    /// A GET on a reused connection answered with a few response bytes and then a close: a response byte arrived,
    /// so it is not resent.
    @Test(arguments: [true, false]) func h1PartialResponseThenCloseIsNotResent(notify: Bool) async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.uri == "/x" ? .steps([.send([Array("HTTP/1.1 2".utf8)]), .close(notify: notify)]) : .ok()
        }
        let transport = Probe.transport()
        _ = try await transport.fetch(.get, "/warm", baseURL: server.baseURL)
        let (outcome, _) = await Probe.timed { try await transport.fetch(.get, "/x", baseURL: server.baseURL) }
        if case .failure(let error) = outcome {
            #expect(Probe.isServerFault(error), "\(error)")
        } else {
            Issue.record("a partial response succeeded: \(outcome)")
        }
        #expect(server.requests.filter { $0.uri == "/x" }.count == 1, "resent after a response byte arrived")
        await transport.shutdown()
        await server.stop()
    }

    /// A DELETE the server drops every time: sent exactly twice (once more on another connection), then the
    /// connection's error.
    @Test func h1IdempotentRequestIsResentOnlyOnce() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in request.method == "DELETE" ? .closeWithoutResponse : .ok() }
        let transport = Probe.transport(connections: 2)
        _ = try await transport.fetch(.get, "/warm", baseURL: server.baseURL)
        let (outcome, _) = await Probe.timed { try await transport.fetch(.delete, "/d", baseURL: server.baseURL) }
        #expect(throws: HTTPSTransportError.connectionClosed) { try outcome.get() }
        #expect(server.requests.filter { $0.method == "DELETE" }.count == 2)
        await transport.shutdown()
        await server.stop()
    }
}

// MARK: - HTTP/2

extension AdversarialExchangeProbes {
    /// POSTs `token` and returns the answer's body.
    static func post(_ token: String, _ transport: HTTPSTransport, _ port: Int) async throws -> String {
        Probe.text(try await transport.fetch(.post, "/p", baseURL: Probe.base(port), body: HTTPBody(token)).1)
    }

    /// After a complete response, DATA on the closed stream (EVIL), in the same record or a later one: no caller
    /// ever reads it, and later callers get their own answers. Intermittently fails (sameRecord false) through the
    /// defect shown by `h2RequestAfterAnIdleConnectionErrorGetsItsAnswer`: a later caller fails as
    /// `connectionClosed`, unsent. EVIL itself never reached a caller.
    @Test(arguments: [true, false]) func h2DataOnAClosedStreamReachesNobody(sameRecord: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            let answer = H2.response(frame.stream, "echo:" + H2.body(of: frame.stream, in: connection))
            guard connection.number == 1, connection.streams.first == frame.stream else { return [.send([answer])] }
            let evil = H2.data(frame.stream, "EVIL", end: true)
            return sameRecord ? [.send([answer + evil])] : [.send([answer]), .after(.milliseconds(50), [.send([evil])])]
        })
        let transport = Probe.transport(.http2Only)
        var seen: [String: Result<String, any Error>] = [:]
        for token in ["A", "B", "C"] {
            do { seen[token] = .success(try await Self.post(token, transport, peer.port)) } catch { seen[token] = .failure(error) }
        }
        for (token, result) in seen {
            switch result {
            case .success(let body): #expect(body == "echo:" + token, "\(token) got \(body)")
            case .failure(let error): #expect(Probe.isServerFault(error) && token != "C", "\(token): \(error)")
            }
        }
        await transport.shutdown()
        await peer.stop()
    }

    /// A response on a stream the client has not opened yet (the id its next request will take), sent before the
    /// real answer, in the same record or while the connection is idle: no caller reads it.
    @Test(arguments: [true, false]) func h2ResponseOnAStreamNeverOpenedReachesNobody(beforeAnswer: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            let answer = H2.response(frame.stream, "echo:" + H2.body(of: frame.stream, in: connection))
            guard connection.number == 1, connection.streams.first == frame.stream else { return [.send([answer])] }
            let evil = H2.response(frame.stream + 2, "EVIL")
            // Never later than the answer's flush: once the client may have opened that stream, a frame on it is the
            // server's own answer to whoever sent it.
            return beforeAnswer ? [.send([evil + answer])] : [.send([answer, evil])]
        })
        let transport = Probe.transport(.http2Only)
        var bodies: [String] = []
        for token in ["A", "B", "C", "D"] {
            do {
                let body = try await Self.post(token, transport, peer.port)
                bodies.append(body)
                #expect(body == "echo:" + token, "\(token) got \(body)")
            } catch {
                #expect(Probe.isServerFault(error) && token != "D", "\(token): \(error)")
            }
        }
        #expect(!bodies.contains { $0.contains("EVIL") })
        await transport.shutdown()
        await peer.stop()
    }

    /// content-length that disagrees with the DATA: never delivered as a complete body.
    @Test(arguments: [("okEVIL", 2), ("ok", 10), ("", 5)]) func h2ContentLengthMismatchFails(body: String, declared: Int) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            if connection.streams.first == frame.stream, connection.number == 1 {
                return [.send([H2.response(frame.stream, body, contentLength: declared)])]
            }
            return H2.echo(frame, &connection)
        })
        let transport = Probe.transport(.http2Only)
        do {
            let got = try await Self.post("A", transport, peer.port)
            Issue.record("content-length \(declared) with \(body.utf8.count) bytes delivered: \(got)")
        } catch {
            #expect(Probe.isServerFault(error), "\(error)")
        }
        #expect(try await Self.post("B", transport, peer.port) == "echo:B")
        await transport.shutdown()
        await peer.stop()
    }

    /// A complete response while the upload is still streaming (optionally followed by RST_STREAM NO_ERROR, which
    /// RFC 9113 §8.1 says must not discard the response): the caller gets it; the connection carries on.
    @Test(arguments: [false, true]) func h2EarlyResponseMidUploadIsDeliveredAndTheConnectionStays(resetNoError: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            if frame.type == 1, !frame.endStream, connection.phase == 0 {
                connection.phase = 1
                var bytes = H2.response(frame.stream, "early")
                if resetNoError { bytes += H2.rst(frame.stream, 0) }
                return [.send([bytes])]
            }
            if H2.ends(frame), frame.stream != connection.streams.first { return H2.echo(frame, &connection) }
            return []
        })
        let transport = Probe.transport(.http2Only)
        let gate = Gate()
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .wait(gate), .bytes(Array("def".utf8))], length: .known(6))
        let (outcome, took) = await Probe.timed {
            try await transport.fetch(.post, "/upload", baseURL: Probe.base(peer.port), body: body)
        }
        #expect((try? outcome.get().1).map(Probe.text) == "early", "\(outcome) after \(took)")
        await gate.open()
        #expect(try await Self.post("B", transport, peer.port) == "echo:B")
        #expect(peer.connections.count == 1, "the early response cost the connection")
        await transport.shutdown()
        await peer.stop()
    }

    /// RST_STREAM in the middle of an upload whose body waits: the request ends at once as the server's reset
    /// (not at the gate's or the request's deadline), and the connection carries on.
    @Test func h2ResetMidUploadEndsTheRequestAtOnce() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            if frame.type == 1, !frame.endStream, connection.phase == 0 {
                connection.phase = 1
                return [.send([H2.rst(frame.stream, 0x8)])]
            }
            if H2.ends(frame), frame.stream != connection.streams.first { return H2.echo(frame, &connection) }
            return []
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(request: .seconds(60)))
        let gate = Gate()
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .wait(gate), .bytes(Array("def".utf8))], length: .known(6))
        let (outcome, took) = await Probe.timed {
            try await transport.fetch(.post, "/upload", baseURL: Probe.base(peer.port), body: body)
        }
        #expect(throws: HTTPSTransportError.streamReset(code: .cancel)) { try outcome.get() }
        #expect(took < .seconds(10), "a reset upload ended only after \(took)")
        await gate.open()
        #expect(try await Self.post("B", transport, peer.port) == "echo:B")
        #expect(peer.connections.count == 1)
        await transport.shutdown()
        await peer.stop()
    }

    /// GOAWAY with last stream 0 while an upload streams: not processed, so `refusedByGoAway` at once; a POST or a
    /// single-use body is never resent, a replayable PUT is sent once more and succeeds.
    @Test(arguments: [("POST", true), ("PUT", false), ("PUT", true)])
    func h2GoAwayMidUploadRefusesAndResendsOnlyWhatMayBe(method: String, replayable: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            if connection.number == 1 {
                if frame.type == 1, connection.phase == 0 {
                    connection.phase = 1
                    return [.send([H2.goAway(0, 0)])]
                }
                return []
            }
            return H2.echo(frame, &connection)
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(request: .seconds(40)))
        let gate = Gate()
        let parts: [ScriptedBody.Part] = [.bytes(Array("abc".utf8)), .wait(gate), .bytes(Array("def".utf8))]
        let upload = Task {
            try await transport.fetch(
                method == "POST" ? .post : .put, "/u", baseURL: Probe.base(peer.port),
                body: ScriptedBody.body(parts, length: .known(6), replayable: replayable))
        }
        try await peer.waitUntil("the GOAWAY") { $0[1]?.phase == 1 }
        await gate.open()
        let (outcome, took) = await Probe.timed { try await upload.value }
        let resendable = method == "PUT" && replayable
        if resendable {
            #expect((try? outcome.get().1).map(Probe.text) == "echo:abcdef", "\(outcome) after \(took)")
        } else {
            #expect(throws: HTTPSTransportError.refusedByGoAway(code: .noError), "after \(took)") { try outcome.get() }
        }
        #expect(took < .seconds(15), "ended only after \(took)")
        let sent = peer.connections.values.map(\.streams.count).reduce(0, +)
        #expect(sent == (resendable ? 2 : 1), "\(method) sent \(sent) times")
        await transport.shutdown()
        await peer.stop()
    }

    /// An upload stalled by flow control (window 16, never topped up): cancelling its caller ends it promptly and
    /// resets only its stream; a request timeout ends it as `.request`, not `.idleRead` (nothing was sent in full).
    @Test(arguments: [false, true]) func h2UploadStalledByFlowControl(cancel: Bool) async throws {
        let peer = try await RawTLSPeer.start(
            tlsContext: Probe.h2Context,
            script: H2.script(settings: [(0x4, 16)]) { frame, connection in
                frame.stream == connection.streams.first ? [] : H2.echo(frame, &connection)
            })
        let transport = Probe.transport(
            .http2Only, timeouts: cancel ? .wide() : .wide(idleRead: .seconds(1), request: .seconds(3)))
        let payload = String(repeating: "z", count: 100)
        let upload = Task { try await transport.fetch(.post, "/big", baseURL: Probe.base(peer.port), body: HTTPBody(payload)) }
        try await peer.waitUntil("16 bytes of the upload") { ($0[1].map { H2.body(of: 1, in: $0).count } ?? 0) >= 16 }
        if cancel { upload.cancel() }
        let (outcome, took) = await Probe.timed { try await upload.value }
        if cancel {
            if case .success = outcome { Issue.record("a cancelled upload succeeded") }
            #expect(took < .seconds(10), "a cancelled upload ended only after \(took)")
            try await peer.waitUntil("the client's RST_STREAM") { $0[1]?.notes.contains { $0.hasPrefix("rst 1 ") } ?? false }
        } else {
            #expect(throws: HTTPSTransportError.timeout(.request)) { try outcome.get() }
            #expect(took < .seconds(12), "ended only after \(took)")
        }
        #expect(try await Self.post("B", transport, peer.port) == "echo:B")
        #expect(peer.connections.count == 1)
        await transport.shutdown()
        await peer.stop()
    }

    /// A DATA frame trickled one byte at a time: the request deadline ends it.
    @Test func h2TrickledFrameEndsAtTheRequestDeadline() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            let head = H2.headers(frame.stream, [(":status", "200")], end: false)
            return [.send([head]), .trickle(H2.data(frame.stream, String(repeating: "x", count: 1000), end: true), every: .milliseconds(50))]
        })
        let transport = Probe.transport(.http2Only, timeouts: Self.shortRequest)
        let (outcome, took) = await Probe.timed { try await transport.fetch(.get, "/slow", baseURL: Probe.base(peer.port)) }
        #expect(throws: HTTPSTransportError.timeout(.request)) { try outcome.get() }
        #expect(took < .seconds(12), "ended after \(took)")
        await transport.shutdown()
        await peer.stop()
    }

    /// Many uploads at once whose bodies arrive in a random order, with GETs between them, on one connection:
    /// every caller gets its own answer and the connection never fails (stream ids in write order).
    @Test func h2ManyStreamedUploadsInRandomOrder() async throws {
        let server = try await LoopbackHTTP2Server.start { request in .respond(body: Array((request.path + ":" + Probe.text(request.body)).utf8)) }
        let transport = Probe.transport(.http2Only)
        let gates = (0..<24).map { _ in Gate() }
        let asked = EventCounter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<24 {
                group.addTask {
                    let path = "/u\(i)"
                    let body = ScriptedBody.body(
                        [.signal(asked), .wait(gates[i]), .bytes(Array("p\(i)".utf8))], length: i % 3 == 0 ? .unknown : .known(Int64("p\(i)".utf8.count)))
                    let (response, bytes) = try await transport.fetch(.post, path, baseURL: Probe.base(server.port), body: body)
                    #expect(response.status == .ok && Probe.text(bytes) == "\(path):p\(i)")
                }
            }
            try await asked.wait(until: 24)
            var random = SeededRandom(seed: 37)
            var order = Array(0..<24)
            for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, random.next(upperBound: i + 1)) }
            for (n, i) in order.enumerated() {
                await gates[i].open()
                if n % 4 == 0 {
                    let (_, bytes) = try await transport.fetch(.get, "/g\(n)", baseURL: Probe.base(server.port))
                    #expect(Probe.text(bytes) == "/g\(n):")
                }
            }
            try await group.waitForAll()
        }
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }

    /// An HTTP/2 upload whose body throws: the caller's error, the stream reset, the connection kept.
    @Test func h2BodyThatThrowsIsTheCallersError() async throws {
        let server = try await LoopbackHTTP2Server.start { request in .respond(body: Array(request.path.utf8)) }
        let transport = Probe.transport(.http2Only)
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .fail("boom")], length: .known(6))
        let (outcome, _) = await Probe.timed { try await transport.fetch(.post, "/x", baseURL: Probe.base(server.port), body: body) }
        switch outcome {
        case .success: Issue.record("a body that threw succeeded")
        case .failure(let error):
            #expect(error as? ProbeBodyError == ProbeBodyError(tag: "boom"), "the caller's body error became \(error)")
        }
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: Probe.base(server.port))
        #expect(Probe.text(next) == "/next")
        #expect(server.counts.connections == 1)
        await transport.shutdown()
        try await server.shutdown()
    }
}

// MARK: - Second round: request framing from the caller's side, early refusals, cancellation

extension AdversarialExchangeProbes {
    /// A chunked (unknown-length) body that yields an empty chunk in the middle: written as `0\r\n\r\n` it would end
    /// the body early, and what follows would be read as a request of its own.
    @Test func h1EmptyChunkMidBodyEndsNothingEarly() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo())
        let transport = Probe.transport()
        let smuggled = "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .bytes([]), .bytes(Array(smuggled.utf8))], length: .unknown)
        let (outcome, _) = await Probe.timed { try await transport.fetch(.post, "/up", baseURL: Probe.base(peer.port), body: body) }
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: Probe.base(peer.port))
        #expect(Probe.text(next) == "/next:", "the next caller got \(Probe.text(next))")
        let notes = peer.connections.values.flatMap(\.notes)
        #expect(!notes.contains { $0.contains("/smuggled") && !$0.hasPrefix("POST") }, "smuggled: \(notes); first: \(outcome)")
        if case .success(let (_, bytes)) = outcome { #expect(Probe.text(bytes) == "/up:abc" + smuggled) }
        await transport.shutdown()
        await peer.stop()
    }

    /// Framing headers set by the caller (a generated client may set them): the transport frames the body itself;
    /// the server reads exactly one request with exactly the body, never a smuggled one, never the caller's Host.
    @Test(arguments: [
        ("content-length 0", [("content-length", "0")]),
        ("content-length 3", [("content-length", "3")]),
        ("transfer-encoding chunked", [("transfer-encoding", "chunked")]),
        ("both", [("content-length", "0"), ("transfer-encoding", "chunked")]),
        ("host", [("host", "evil.example")]),
        ("connection close", [("connection", "close")]),
    ] as [(String, [(String, String)])])
    func h1CallerFramingHeadersSmuggleNothing(_ what: String, _ fields: [(String, String)]) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo())
        let transport = Probe.transport()
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        let smuggled = "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        let fixed = headers
        let (outcome, _) = await Probe.timed {
            try await transport.fetch(.post, "/up", baseURL: Probe.base(peer.port), body: HTTPBody(smuggled), headers: fixed)
        }
        let (nextOutcome, _) = await Probe.timed { try await transport.fetch(.get, "/next", baseURL: Probe.base(peer.port)) }
        #expect((try? nextOutcome.get().1).map(Probe.text) == "/next:", "\(what): the next caller got \(nextOutcome)")
        let notes = peer.connections.values.flatMap(\.notes)
        #expect(!notes.contains { $0.hasPrefix("GET /smuggled") }, "\(what): smuggled; saw \(notes); caller got \(outcome)")
        if case .success(let (_, bytes)) = outcome { #expect(Probe.text(bytes) == "/up:" + smuggled, "\(what)") }
        let raw = peer.connections.values.map { Probe.text($0.received) }.joined()
        #expect(!raw.lowercased().contains("host: evil.example"), "\(what): the caller's Host went out")
        await transport.shutdown()
        await peer.stop()
    }

    /// A header value with CR LF from the caller: never a header line or a request of its own on the wire.
    @Test func h1CallerHeaderValueWithCRLFInjectsNothing() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo())
        let transport = Probe.transport()
        var headers = HTTPFields()
        headers.append(HTTPField(name: HTTPField.Name("x-a")!, value: "a\r\nx-injected: 1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"))
        let fixed = headers
        let (outcome, _) = await Probe.timed { try await transport.fetch(.get, "/h", baseURL: Probe.base(peer.port), headers: fixed) }
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: Probe.base(peer.port))
        #expect(Probe.text(next) == "/next:")
        let raw = peer.connections.values.map { Probe.text($0.received) }.joined()
        #expect(!raw.contains("\r\nx-injected: 1\r\n") && !raw.contains("\r\nGET /smuggled"), "injected: \(raw.debugDescription); \(outcome)")
        await transport.shutdown()
        await peer.stop()
    }

    /// `Expect: 100-continue` from the caller, to a server that never sends 100: the request still completes.
    @Test func h1ExpectContinueToAServerThatNeverSends100() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in .ok(request.body) }
        let transport = Probe.transport(timeouts: .wide(request: .seconds(20)))
        var headers = HTTPFields()
        headers[.expect] = "100-continue"
        let fixed = headers
        let (outcome, took) = await Probe.timed {
            try await transport.fetch(.post, "/e", baseURL: server.baseURL, body: HTTPBody("payload"), headers: fixed)
        }
        #expect((try? outcome.get().1).map(Probe.text) == "payload", "\(outcome) after \(took)")
        await transport.shutdown()
        await server.stop()
    }

    /// The server refuses a large upload at its head (413, Connection: close) and closes while the client is still
    /// writing: the caller gets the 413, not a write error blamed on the connection.
    @Test(arguments: [true, false]) func h1EarlyRefusalOfALargeUploadReachesTheCaller(notify: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context) { connection in
            guard connection.phase == 0, H1.head(connection.received, from: 0) != nil else { return [] }
            connection.phase = 1
            let refusal = Array("HTTP/1.1 413 Content Too Large\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoo big".utf8)
            return [.send([refusal]), .close(notify: notify)]
        }
        let transport = Probe.transport()
        let payload = [UInt8](repeating: 0x61, count: 8 << 20)
        let (outcome, took) = await Probe.timed {
            try await transport.fetch(.post, "/big", baseURL: Probe.base(peer.port), body: HTTPBody(payload))
        }
        switch outcome {
        case .success(let (response, body)):
            #expect(response.status.code == 413 && Probe.text(body) == "too big")
        case .failure(let error):
            Issue.record("the server's 413 became \(error) after \(took)")
        }
        await transport.shutdown()
        await peer.stop()
    }

    /// A dropped (unread) body followed by a stray response: the drain reads the body, the stray bytes close the
    /// connection, the next caller gets its own answer.
    @Test func h1DroppedBodyThenStrayResponseReachesNobody() async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in
            request.uri == "/drop"
                ? .records([H1.response(String(repeating: "d", count: 3000)), Self.sentinel], close: false)
                : .raw(H1.response(request.uri), close: false)
        }
        let transport = Probe.transport()
        do {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/drop")
            let (response, body) = try await transport.send(request, body: nil, baseURL: server.baseURL, operationID: "d")
            #expect(response.status == .ok)
            _ = body
        }
        for path in ["/n1", "/n2", "/n3"] {
            let (_, body) = try await transport.fetch(.get, path, baseURL: server.baseURL)
            #expect(Probe.text(body) == path)
        }
        await transport.shutdown()
        await server.stop()
    }

    /// Callers cancelled at random points of an exchange whose response comes in pieces: each later caller gets
    /// its own answer (a connection cancelled mid-exchange is never reused), over both protocols.
    @Test(arguments: [HTTPSTransport.HTTPVersionPolicy.http1Only, .http2Only])
    func randomCancellationNeverHandsOnAnotherAnswer(version: HTTPSTransport.HTTPVersionPolicy) async throws {
        let port: Int
        let stop: @Sendable () async -> Void
        if version == .http1Only {
            let server = try await LoopbackHTTPServer.startTLS { request in
                let whole = H1.response(request.uri + "-" + String(repeating: "p", count: 2000))
                let cut1 = whole.count / 3, cut2 = 2 * whole.count / 3
                return .steps([
                    .send([Array(whole[..<cut1])]), .delay(.milliseconds(3)), .send([Array(whole[cut1..<cut2])]),
                    .delay(.milliseconds(3)), .send([Array(whole[cut2...])]),
                ])
            }
            port = server.port
            stop = { await server.stop() }
        } else {
            let server = try await LoopbackHTTP2Server.start { request in
                let body = Array((request.path + "-" + String(repeating: "p", count: 2000)).utf8)
                return .steps([
                    .head(status: 200, headers: [], contentLength: body.count), .delay(.milliseconds(3)),
                    .data(Array(body[..<1000]), end: false), .delay(.milliseconds(3)), .data(Array(body[1000...]), end: true),
                ])
            }
            port = server.port
            stop = { try? await server.shutdown() }
        }
        let transport = Probe.transport(version)
        var random = SeededRandom(seed: 3737)
        for round in 0..<30 {
            let path = "/c\(round)"
            let victim = Task { try await transport.fetch(.get, path, baseURL: Probe.base(port)) }
            let wait = random.next(upperBound: 12)
            if wait > 0 { try? await Task.sleep(for: .milliseconds(wait)) }  // pacing only: where the cancel lands
            victim.cancel()
            if case .success(let (_, body)) = await victim.result {
                #expect(Probe.text(body) == path + "-" + String(repeating: "p", count: 2000), "round \(round): the cancelled caller got another answer")
            }
            let check = "/k\(round)"
            let (_, body) = try await transport.fetch(.get, check, baseURL: Probe.base(port))
            #expect(Probe.text(body) == check + "-" + String(repeating: "p", count: 2000), "round \(round): got \(Probe.text(body).prefix(20))")
        }
        await transport.shutdown()
        await stop()
    }

    // MARK: HTTP/2 protocol violations

    /// Protocol violations on the first stream: the caller fails as the server's fault, promptly; the next caller
    /// gets its own answer.
    @Test(arguments: [
        "push promise", "data before headers", "second status as trailers", "1xx with end stream", "window overflow",
        "headers on stream 0", "uppercase header name", "connection header", "two statuses", "path in a response",
        "204 with data", "transfer-encoding header",
    ])
    func h2ProtocolViolationIsTheServersFault(_ what: String) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            guard connection.number == 1, connection.streams.first == frame.stream else { return H2.echo(frame, &connection) }
            let s = frame.stream
            let bytes: [UInt8]
            switch what {
            case "push promise":
                bytes = H2.frame(5, 0x4, s, H2.u32(2) + [0, 7] + Array(":method".utf8) + [3] + Array("GET".utf8)) + H2.response(s, "ok")
            case "data before headers": bytes = H2.data(s, "EVIL", end: false) + H2.response(s, "ok")
            case "second status as trailers":
                bytes = H2.headers(s, [(":status", "200")], end: false) + H2.data(s, "ok", end: false)
                    + H2.headers(s, [(":status", "302"), ("location", "https://evil.example/")], end: true)
            case "1xx with end stream": bytes = H2.headers(s, [(":status", "100")], end: true)
            case "window overflow": bytes = H2.frame(8, 0, 0, H2.u32(0x7FFF_FFFF)) + H2.response(s, "ok")
            case "headers on stream 0": bytes = H2.headers(0, [(":status", "200")], end: true) + H2.response(s, "ok")
            case "uppercase header name": bytes = H2.headers(s, [(":status", "200"), ("X-Evil", "1")], end: true)
            case "two statuses": bytes = H2.headers(s, [(":status", "200"), (":status", "302")], end: true)
            case "path in a response": bytes = H2.headers(s, [(":status", "200"), (":path", "/x")], end: true)
            case "204 with data": bytes = H2.headers(s, [(":status", "204")], end: false) + H2.data(s, "EVIL", end: true)
            case "transfer-encoding header":
                bytes = H2.headers(s, [(":status", "200"), ("transfer-encoding", "chunked")], end: false) + H2.data(s, "ok", end: true)
            default: bytes = H2.headers(s, [(":status", "200"), ("connection", "close")], end: true)
            }
            return [.send([bytes])]
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(idleRead: .seconds(50), request: .seconds(55)))
        let (outcome, took) = await Probe.timed { try await transport.fetch(.get, "/v", baseURL: Probe.base(peer.port)) }
        switch outcome {
        case .success(let (response, body)) where what == "204 with data":
            #expect(body.isEmpty, "\(what): the 204's DATA reached the caller: \(response.status.code) \(Probe.text(body))")
        case .success(let (response, body)):
            Issue.record("\(what): accepted: \(response.status.code) \(response.headerFields) \(Probe.text(body))")
        case .failure(let error):
            // README: a connection error fails its streams with `malformedResponse` naming the HTTP/2 error.
            #expect(Probe.isServerFault(error), "\(what): \(error)")
            if [.malformedResponse, .streamReset].contains((error as? HTTPSTransportError)?.code) {} else {
                Issue.record("\(what): the server's protocol violation came back as \(error), not malformedResponse")
            }
            #expect(took < .seconds(10), "\(what): ended only after \(took)")
        }
        let (nextOutcome, _) = await Probe.timed { try await Self.post("B", transport, peer.port) }
        #expect((try? nextOutcome.get()) == "echo:B", "\(what): next caller got \(nextOutcome)")
        await transport.shutdown()
        await peer.stop()
    }

    /// A server that allows no stream at all (MAX_CONCURRENT_STREAMS 0): the request ends at its deadline.
    @Test func h2ZeroConcurrentStreamsEndsAtTheRequestDeadline() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script(settings: [(0x3, 0)], H2.echo))
        let transport = Probe.transport(.http2Only, timeouts: Self.shortRequest)
        let (outcome, took) = await Probe.timed { try await transport.fetch(.get, "/z", baseURL: Probe.base(peer.port)) }
        if case .success = outcome { Issue.record("a stream was opened against MAX_CONCURRENT_STREAMS 0") }
        #expect(throws: HTTPSTransportError.timeout(.request)) { try outcome.get() }
        #expect(took < .seconds(12), "ended only after \(took)")
        await transport.shutdown()
        await peer.stop()
    }
}

extension AdversarialExchangeProbes {
    /// A frame on a stream that already ended (DATA after END_STREAM, or HEADERS), sent while another stream is in
    /// flight, whose answer comes 100 ms later: the in-flight caller either gets its own answer (a stream error on
    /// the dead stream only) or, if the connection dies of it, fails as `malformedResponse` naming the HTTP/2 error
    /// (README), never as `connectionClosed` (retryable, "closed before the response was complete").
    @Test(arguments: ["data", "headers", "rst"]) func h2FrameOnAnEndedStreamWhileAnotherIsInFlight(_ kind: String) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            guard connection.number == 1, let first = connection.streams.first, frame.stream != first else {
                return H2.echo(frame, &connection)
            }
            let answer = H2.response(frame.stream, "echo:" + H2.body(of: frame.stream, in: connection))
            let evil: [UInt8]
            switch kind {
            case "data": evil = H2.data(first, "EVIL", end: true)
            case "headers": evil = H2.headers(first, [(":status", "200")], end: true)
            default: evil = H2.rst(first, 0x2)
            }
            return [.send([evil]), .after(.milliseconds(100), [.send([answer])])]
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(idleRead: .seconds(50), request: .seconds(55)))
        #expect(try await Self.post("A", transport, peer.port) == "echo:A")
        let (outcome, took) = await Probe.timed { try await Self.post("B", transport, peer.port) }
        switch outcome {
        case .success(let body): #expect(body == "echo:B")
        case .failure(let error):
            if (error as? HTTPSTransportError)?.code == .malformedResponse {} else {
                Issue.record("\(kind) on an ended stream failed the in-flight caller with \(error) after \(took)")
            }
        }
        let (next, _) = await Probe.timed { try await Self.post("C", transport, peer.port) }
        #expect((try? next.get()) == "echo:C", "\(next)")
        await transport.shutdown()
        await peer.stop()
    }
}

extension AdversarialExchangeProbes {
    /// DATA on a stream that already ended, while the connection is idle in the pool: the client treats it as a
    /// connection error (it sends GOAWAY). A request started after that must go out on a new connection and get
    /// its own answer, never fail on the connection in doubt.
    ///
    /// Found broken by the adversarial pass (most runs): the first request after the stray frame was leased onto
    /// the connection the client had just sent GOAWAY on, and failed within about 1 ms as `connectionClosed`
    /// although its stream never reached the server. Now the connection takes no stream from its connection error
    /// on (the pool is told at once), and a stream refused before anything was written goes out elsewhere.
    @Test(arguments: ["data", "headers on an unopened stream"], [false, true])
    func h2RequestAfterAnIdleConnectionErrorGetsItsAnswer(_ kind: String, getFirst: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            let answer = H2.response(frame.stream, "echo:" + H2.body(of: frame.stream, in: connection))
            guard connection.number == 1, connection.streams.first == frame.stream else { return [.send([answer])] }
            let evil = kind == "data" ? H2.data(frame.stream, "EVIL", end: true) : H2.response(frame.stream + 2, "EVIL")
            return [.send([answer]), .after(.milliseconds(100), [.send([evil])])]
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(idleRead: .seconds(50), request: .seconds(55)))
        #expect(try await Self.post("A", transport, peer.port) == "echo:A")
        try await peer.waitUntil("the client's GOAWAY or close after the stray frame") {
            $0[1].map { $0.notes.contains("goaway") || $0.closed } ?? false
        }
        let sawClose = peer.connections[1]?.closed ?? false
        if getFirst {
            let (get, getTook) = await Probe.timed { try await transport.fetch(.get, "/idempotent", baseURL: Probe.base(peer.port)) }
            #expect((try? get.get().1).map(Probe.text) == "echo:", "a GET after the client's own GOAWAY got \(get) after \(getTook)")
        }
        let (outcome, took) = await Probe.timed { try await Self.post("B", transport, peer.port) }
        #expect((try? outcome.get()) == "echo:B", "a request after the client's own GOAWAY got \(outcome) after \(took) (peer had closed: \(sawClose); B's stream reached connection 1: \(peer.connections[1]?.streams ?? []))")
        // How long the doubt lasts: every later request must get its own answer, and connection 1 must close.
        for token in ["C", "D", "E"] {
            let (later, _) = await Probe.timed { try await Self.post(token, transport, peer.port) }
            #expect((try? later.get()) == "echo:" + token, "\(token) after the client's own GOAWAY: \(later)")
        }
        let (closed, _) = await Probe.timed { try await peer.waitUntil("connection 1 to close", timeout: .seconds(10)) { $0[1]?.closed ?? false } }
        #expect((try? closed.get()) != nil, "the connection the client sent GOAWAY on was still open 10 s later: \(closed)")
        await transport.shutdown()
        await peer.stop()
    }
}

extension AdversarialExchangeProbes {
    /// README: "A 101 Switching Protocols (the client never asks for an upgrade) fails its request as
    /// malformedResponse", the server's fault. Found broken by the adversarial pass (low severity): the caller's
    /// own `Connection: upgrade` / `Upgrade` fields went out as they were. They are dropped now.
    @Test func h1CallerUpgradeFieldsAreNotSent() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context, script: H1.echo())
        let transport = Probe.transport()
        var headers = HTTPFields()
        headers[.connection] = "upgrade"
        headers[HTTPField.Name("upgrade")!] = "websocket"
        let fixed = headers
        _ = await Probe.timed { try await transport.fetch(.get, "/ws", baseURL: Probe.base(peer.port), headers: fixed) }
        let raw = peer.connections.values.map { Probe.text($0.received) }.joined().lowercased()
        #expect(!raw.contains("upgrade: websocket"), "the caller's Upgrade went out: \(raw.debugDescription)")
        await transport.shutdown()
        await peer.stop()
    }

    /// The request's own `authority` and `scheme` (HTTPTypes fields a caller may set) never replace the URL's host.
    /// README ("One server name"): the canonical server name is what the `Host` header uses.
    ///
    /// Found broken by the adversarial pass over HTTP/1.1: `HTTPRequest(authority: "evil.example")` went out as
    /// `Host: evil.example` on a connection verified and pinned for 127.0.0.1. `Host` is always the target's
    /// canonical name now (over HTTP/2, `:authority` already was).
    @Test(arguments: [HTTPSTransport.HTTPVersionPolicy.http1Only, .http2Only])
    func callerAuthorityNeverReplacesTheHost(version: HTTPSTransport.HTTPVersionPolicy) async throws {
        let peer = try await RawTLSPeer.start(
            tlsContext: version == .http1Only ? Probe.h1Context : Probe.h2Context,
            script: version == .http1Only ? H1.echo() : H2.script(H2.echo))
        let transport = Probe.transport(version)
        let request = HTTPRequest(method: .get, scheme: "http", authority: "evil.example", path: "/a")
        _ = await Probe.timed { try await transport.send(request, body: nil, baseURL: Probe.base(peer.port), operationID: "a") }
        let raw = peer.connections.values.map { Probe.text($0.received) }.joined()
        #expect(!raw.contains("evil.example"), "the caller's authority went out")
        await transport.shutdown()
        await peer.stop()
    }

    /// An early response followed, in the same record, by a stray response: the caller gets the early one, and
    /// the connection is not reused.
    @Test func h1EarlyResponseWithAStrayAfterItReachesNobody() async throws {
        let peer = try await RawTLSPeer.start(
            tlsContext: Probe.h1Context, script: H1.echo(earlyOnFirst: H1.response("early") + H1.response("INJECTED")))
        let transport = Probe.transport()
        let body = ScriptedBody.body([.bytes(Array("abc".utf8)), .pause(.milliseconds(50)), .bytes(Array("def".utf8))], length: .known(6))
        let (outcome, _) = await Probe.timed { try await transport.fetch(.post, "/up", baseURL: Probe.base(peer.port), body: body) }
        #expect((try? outcome.get().1).map(Probe.text) == "early", "\(outcome)")
        for path in ["/n1", "/n2"] {
            let (_, next) = try await transport.fetch(.get, path, baseURL: Probe.base(peer.port))
            #expect(Probe.text(next) == path + ":")
        }
        await transport.shutdown()
        await peer.stop()
    }

    /// Six uploads streaming on one connection (three replayable PUTs, three POSTs), then GOAWAY naming the third
    /// stream as the last processed: streams up to it are answered there; above it, a PUT is sent once more on a
    /// new connection, a POST comes back as `refusedByGoAway`; no upload is processed twice.
    @Test func h2GoAwayAmongManyStreamingUploads() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard connection.number == 1 else { return H2.echo(frame, &connection) }
            var actions: [RawTLSPeer.Action] = []
            if frame.type == 1, connection.streams.count == 6, connection.phase == 0 {
                connection.phase = 1
                actions.append(.send([H2.goAway(connection.streams.sorted()[2], 0)]))
            }
            if H2.ends(frame), connection.streams.sorted().prefix(3).contains(frame.stream) {
                actions += H2.echo(frame, &connection)
            }
            return actions
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(request: .seconds(30)))
        let gate = Gate()
        let asked = EventCounter()
        let results = try await withThrowingTaskGroup(of: (Int, Result<String, any Error>, Duration).self) { group in
            for i in 0..<6 {
                group.addTask {
                    let body = ScriptedBody.body(
                        [.bytes(Array("t\(i)-".utf8)), .signal(asked), .wait(gate), .bytes(Array("end".utf8))],
                        length: .known(Int64("t\(i)-end".utf8.count)), replayable: i % 2 == 0)
                    let (outcome, took) = await Probe.timed {
                        Probe.text(try await transport.fetch(i % 2 == 0 ? .put : .post, "/u", baseURL: Probe.base(peer.port), body: body).1)
                    }
                    return (i, outcome, took)
                }
            }
            try await asked.wait(until: 6)
            try await peer.waitUntil("the GOAWAY") { $0[1]?.phase == 1 }
            await gate.open()
            var results: [Int: (Result<String, any Error>, Duration)] = [:]
            for try await (i, outcome, took) in group { results[i] = (outcome, took) }
            return results
        }
        // Which token went on which stream of connection 1 (its first DATA frame).
        let first = peer.connections[1]!
        let processed = Set(first.streams.sorted().prefix(3).map { H2.body(of: $0, in: first).prefix(3) }.map(String.init))
        for (i, (outcome, took)) in results.sorted(by: { $0.key < $1.key }) {
            let token = "t\(i)-"
            if processed.contains(String(token.prefix(3))) {
                #expect((try? outcome.get()) == "echo:\(token)end", "\(token) (processed): \(outcome) after \(took)")
            } else if i % 2 == 0 {
                #expect((try? outcome.get()) == "echo:\(token)end", "\(token) (PUT above the GOAWAY): \(outcome) after \(took)")
            } else {
                #expect(throws: HTTPSTransportError.refusedByGoAway(code: .noError), "\(token) (POST above) after \(took)") { try outcome.get() }
            }
            #expect(took < .seconds(20), "\(token) ended only after \(took)")
        }
        let second = peer.connections[2].map { c in c.streams.map { H2.body(of: $0, in: c) } } ?? []
        for body in second { #expect(!processed.contains(String(body.prefix(3))), "\(body) was processed twice") }
        await transport.shutdown()
        await peer.stop()
    }
}

extension AdversarialExchangeProbes {
    /// An `authority` with CR LF (HTTPRequest does not check it): never a header line or a request of its own.
    @Test(arguments: [HTTPSTransport.HTTPVersionPolicy.http1Only, .http2Only])
    func callerAuthorityWithCRLFInjectsNothing(version: HTTPSTransport.HTTPVersionPolicy) async throws {
        let peer = try await RawTLSPeer.start(
            tlsContext: version == .http1Only ? Probe.h1Context : Probe.h2Context,
            script: version == .http1Only ? H1.echo() : H2.script(H2.echo))
        let transport = Probe.transport(version)
        let authority = "127.0.0.1\r\nX-Injected: 1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"
        let request = HTTPRequest(method: .get, scheme: "https", authority: authority, path: "/a")
        let (outcome, _) = await Probe.timed {
            try await transport.send(request, body: nil, baseURL: Probe.base(peer.port), operationID: "a")
        }
        let (_, next) = try await transport.fetch(.get, "/next", baseURL: Probe.base(peer.port))
        let raw = peer.connections.values.map { Probe.text($0.received) }.joined()
        #expect(!raw.contains("\r\nX-Injected") && !raw.contains("\r\nGET /smuggled"), "injected through authority: \(raw.debugDescription); first: \(outcome)")
        #expect(Probe.text(next) == (version == .http1Only ? "/next:" : "echo:"), "the next caller got \(Probe.text(next))")
        let notes = peer.connections.values.flatMap(\.notes)
        #expect(!notes.contains { $0.hasPrefix("GET /smuggled") }, "the server read a smuggled request: \(notes)")
        await transport.shutdown()
        await peer.stop()
    }
}

extension AdversarialExchangeProbes {
    /// A response that stalls mid-body until idleRead fires, whose rest (and a stray response) arrives later: the
    /// timed-out connection is never reused, so the next caller reads none of it.
    @Test func h1TimedOutConnectionIsNeverReused() async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context) { connection in
            var actions: [RawTLSPeer.Action] = []
            while let request = H1.request(connection.received, from: connection.cursor) {
                connection.cursor = request.end
                connection.notes.append(request.line)
                if connection.number == 1 && connection.notes.count == 1 {
                    let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n0123456789".utf8)
                    actions.append(.send([head]))
                    actions.append(.after(.milliseconds(1800), [.send([Array("abcdefghij".utf8) + H1.response("INJECTED")])]))
                } else {
                    actions.append(.send([H1.response(request.path)]))
                }
            }
            return actions
        }
        let transport = Probe.transport(timeouts: .wide(idleRead: .seconds(1)))
        let (outcome, _) = await Probe.timed { try await transport.fetch(.get, "/stall", baseURL: Probe.base(peer.port)) }
        #expect(throws: HTTPSTransportError.timeout(.idleRead)) { try outcome.get() }
        // The next requests span the moment the rest arrives (1.8 s after the head).
        let start = ContinuousClock.now
        var round = 0
        while ContinuousClock.now - start < .seconds(2) {
            round += 1
            let (_, body) = try await transport.fetch(.get, "/n\(round)", baseURL: Probe.base(peer.port))
            #expect(Probe.text(body) == "/n\(round)", "round \(round) got \(Probe.text(body))")
            try await Task.sleep(for: .milliseconds(100))  // pacing only: requests across the late bytes' arrival
        }
        #expect(!(peer.connections[1]?.notes.count ?? 0 > 1), "the timed-out connection was reused: \(peer.connections[1]?.notes ?? [])")
        await transport.shutdown()
        await peer.stop()
    }

    /// A body over maxResponseBodyBytes (declared, chunked, or over HTTP/2 in DATA): `responseBodyTooLarge`, and the
    /// next caller gets its own answer.
    @Test(arguments: ["declared", "chunked", "h2"]) func responseOverTheLimitFailsAndLeavesNothing(_ kind: String) async throws {
        let big = String(repeating: "b", count: 5000)
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + String(5000, radix: 16) + "\r\n" + big + "\r\n0\r\n\r\n"
        let h2Script: RawTLSPeer.Script = H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            if frame.stream == connection.streams.first, connection.number == 1 { return [.send([H2.response(frame.stream, big)])] }
            return H2.echo(frame, &connection)
        }
        let bigResponse: [UInt8] = (kind == "declared" ? H1.response(big) : Array(chunked.utf8)) + H1.response("INJECTED")
        let h1Script: RawTLSPeer.Script = { connection in
            var actions: [RawTLSPeer.Action] = []
            while let request = H1.request(connection.received, from: connection.cursor) {
                connection.cursor = request.end
                connection.notes.append(request.line)
                actions.append(.send([request.path == "/big" ? bigResponse : H1.response(request.path)]))
            }
            return actions
        }
        let peer = try await RawTLSPeer.start(
            tlsContext: kind == "h2" ? Probe.h2Context : Probe.h1Context, script: kind == "h2" ? h2Script : h1Script)
        let transport = Probe.transport(kind == "h2" ? .http2Only : .http1Only, maxResponseBodyBytes: 1000)
        let (outcome, _) = await Probe.timed { try await transport.fetch(.get, "/big", baseURL: Probe.base(peer.port)) }
        #expect(throws: HTTPSTransportError.responseBodyTooLarge(limit: 1000), "\(kind)") { try outcome.get() }
        if kind == "h2" {
            #expect(try await Self.post("B", transport, peer.port) == "echo:B")
        } else {
            for path in ["/n1", "/n2"] {
                let (_, body) = try await transport.fetch(.get, path, baseURL: Probe.base(peer.port))
                #expect(Probe.text(body) == path)
            }
        }
        await transport.shutdown()
        await peer.stop()
    }
}

extension AdversarialExchangeProbes {
    /// The server ends an idle pooled HTTP/2 connection (GOAWAY then close_notify, close_notify alone, or a bare FIN);
    /// once it is closed, a POST (never resent) must go out on a new connection and get its own answer.
    ///
    /// Found broken by the adversarial pass ("close_notify", "bare FIN"; every run): the POST, started right after
    /// the server's side closed, was handed that connection and failed within about 1 ms as `connectionClosed`.
    /// An idle HTTP/2 connection now gets a liveness check before a stream is opened on it (the server's FIN), as
    /// a kept-alive HTTP/1.1 connection does. With GOAWAY first the POST may come back as `refusedByGoAway`, which
    /// README allows (accepted here).
    @Test(arguments: ["goaway+close", "close_notify", "bare FIN"]) func h2PostAfterTheServerClosedAnIdleConnection(_ how: String) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h2Context, script: H2.script { frame, connection in
            guard H2.ends(frame) else { return [] }
            let answer = H2.response(frame.stream, "echo:" + H2.body(of: frame.stream, in: connection))
            guard connection.number == 1 else { return [.send([answer])] }
            var later: [RawTLSPeer.Action] = []
            if how == "goaway+close" { later.append(.send([H2.goAway(frame.stream, 0)])) }
            later.append(.close(notify: how != "bare FIN"))
            return [.send([answer]), .after(.milliseconds(50), later)]
        })
        let transport = Probe.transport(.http2Only, timeouts: .wide(idleRead: .seconds(50), request: .seconds(55)))
        #expect(try await Self.post("A", transport, peer.port) == "echo:A")
        try await peer.waitUntil("connection 1 to close") { $0[1]?.closed ?? false }
        let (outcome, took) = await Probe.timed { try await Self.post("B", transport, peer.port) }
        if how == "goaway+close", case .failure(let error) = outcome, error as? HTTPSTransportError == .refusedByGoAway(code: .noError) {
            // README: a request above the GOAWAY that cannot be resent comes back as refusedByGoAway.
        } else {
            #expect((try? outcome.get()) == "echo:B", "\(how): a POST after the server closed the idle connection got \(outcome) after \(took)")
        }
        await transport.shutdown()
        await peer.stop()
    }

    /// The same over HTTP/1.1: the server closes an idle kept-alive connection; a POST afterwards goes out on a new
    /// connection.
    @Test(arguments: [true, false]) func h1PostAfterTheServerClosedAnIdleConnection(notify: Bool) async throws {
        let peer = try await RawTLSPeer.start(tlsContext: Probe.h1Context) { connection in
            var actions: [RawTLSPeer.Action] = []
            while let request = H1.request(connection.received, from: connection.cursor) {
                connection.cursor = request.end
                connection.notes.append(request.line)
                actions.append(.send([H1.response(request.path + ":" + Probe.text(request.body))]))
                if connection.number == 1 { actions.append(.after(.milliseconds(50), [.close(notify: notify)])) }
            }
            return actions
        }
        let transport = Probe.transport()
        _ = try await transport.fetch(.get, "/warm", baseURL: Probe.base(peer.port))
        try await peer.waitUntil("connection 1 to close") { $0[1]?.closed ?? false }
        let (outcome, took) = await Probe.timed { try await transport.fetch(.post, "/p", baseURL: Probe.base(peer.port), body: HTTPBody("B")) }
        #expect((try? outcome.get().1).map(Probe.text) == "/p:B", "a POST after the server closed the idle connection got \(outcome) after \(took)")
        await transport.shutdown()
        await peer.stop()
    }
}

import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS

/// The response decoder frames every response exactly: each ends where its framing says, however the bytes are
/// cut into reads, and nothing after that end is ever decoded. It refuses what parsers could frame differently.
/// On valid responses it agrees with NIO's decoder (``HTTP1ResponseDecoderDifferentialTests``).
@Suite(.timeLimit(.minutes(3))) struct HTTP1ResponseDecoderTests {
    /// What a decoded response came to: its heads (interim ones too), its body bytes, whether it ended and with
    /// which trailers, and what was left stray.
    struct Decoded: Equatable {
        var heads: [HTTPResponseHead] = []
        var body: [UInt8] = []
        var ended = false
        var trailers: HTTPHeaders?
        var stray: [UInt8] = []
        var malformed: String?
    }

    /// Decodes `bytes` cut into reads at `cuts` (offsets), as the handler does: until more data is needed or the
    /// rest is stray; `atEOF`: the connection then ends cleanly.
    static func decode(_ bytes: [UInt8], cuts: [Int] = [], isHead: Bool = false, atEOF: Bool = false) -> Decoded {
        var decoder = HTTP1ResponseDecoder()
        decoder.expectResponse(isHead: isHead)
        var decoded = Decoded()
        var start = 0
        for end in cuts.filter({ $0 > 0 && $0 < bytes.count }).sorted() + [bytes.count] {
            var buffer = ByteBuffer(bytes: bytes[start..<end])
            start = end
            reading: while true {
                do {
                    switch try decoder.next(&buffer) {
                    case .needMoreData: break reading
                    case .stray:
                        decoded.stray += buffer.readableBytesView
                        break reading
                    case .part(let part): decoded.take(part)
                    }
                } catch {
                    decoded.malformed = error.reason
                    return decoded
                }
            }
        }
        if atEOF, let end = decoder.connectionEnded() { decoded.take(end) }
        return decoded
    }

    static func decode(_ text: String, cuts: [Int] = [], isHead: Bool = false, atEOF: Bool = false) -> Decoded {
        decode(Array(text.utf8), cuts: cuts, isHead: isHead, atEOF: atEOF)
    }

    @Test func aContentLengthBodyEndsAtItsLengthAndTheRestIsStray() {
        let decoded = Self.decode("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 302 Found\r\nX-Splice: ")
        #expect(decoded.heads.map(\.status) == [.ok])
        #expect(decoded.body == Array("abc".utf8))
        #expect(decoded.ended)
        #expect(decoded.stray == Array("HTTP/1.1 302 Found\r\nX-Splice: ".utf8))
    }

    /// The splice: a fragment that parses as a header prefix, after a complete response, in the same read
    /// or cut anywhere: always stray, never a head.
    @Test func aHeaderFragmentAfterTheEndIsStrayWhereverTheReadsAreCut() {
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let fragment = "HTTP/1.1 302 Found\r\nLocation: https://evil.example/\r\nSet-Cookie: sess=attacker\r\nX-Splice: "
        let bytes = Array((response + fragment).utf8)
        for cut in 1..<bytes.count {
            let decoded = Self.decode(bytes, cuts: [cut])
            #expect(decoded.heads.count == 1 && decoded.body == Array("ok".utf8) && decoded.ended, "cut at \(cut)")
            #expect(decoded.stray == Array(fragment.utf8), "cut at \(cut)")
        }
    }

    @Test func chunkedBodiesWithExtensionsAndTrailers() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
            + "3;name=value\r\nabc\r\n10 ; x\r\n0123456789abcdef\r\n0\r\nX-Checksum: 1\r\nX-More:  two \r\n\r\nstray"
        let whole = Self.decode(text)
        #expect(whole.body == Array("abc0123456789abcdef".utf8))
        #expect(whole.ended)
        #expect(whole.trailers?["X-Checksum"] == ["1"])
        #expect(whole.trailers?["x-more"] == ["two"])
        #expect(whole.stray == Array("stray".utf8))
        // Cut at every place, and byte by byte: the same response.
        let bytes = Array(text.utf8)
        for cut in 1..<bytes.count { #expect(Self.decode(bytes, cuts: [cut]) == whole, "cut at \(cut)") }
        #expect(Self.decode(bytes, cuts: Array(1..<bytes.count)) == whole)
    }

    @Test func anEmptyTrailerSectionCutAnywhere() {
        let bytes = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n".utf8)
        let whole = Self.decode(bytes)
        #expect(whole.body == [UInt8(ascii: "a")] && whole.ended && whole.trailers == nil && whole.stray.isEmpty)
        for cut in 1..<bytes.count { #expect(Self.decode(bytes, cuts: [cut]) == whole, "cut at \(cut)") }
        #expect(Self.decode(bytes, cuts: Array(1..<bytes.count)) == whole)
    }

    @Test func responsesWithoutABodyEndAtTheirHead() {
        for (text, isHead) in [
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true),
            ("HTTP/1.1 204 No Content\r\n\r\n", false),
            ("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", false),
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        ] {
            let decoded = Self.decode(text + "hello", isHead: isHead)
            #expect(decoded.heads.count == 1 && decoded.body.isEmpty && decoded.ended, "\(text)")
            #expect(decoded.stray == Array("hello".utf8), "\(text)")
        }
    }

    @Test func interimHeadsComeBeforeTheFinalOne() {
        let decoded = Self.decode(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
        #expect(decoded.heads.map(\.status.code) == [100, 103, 200])
        #expect(decoded.body == [UInt8(ascii: "x")] && decoded.ended && decoded.stray.isEmpty)
    }

    /// After a 101 nothing is HTTP/1.1 any more: the bytes after its head are never decoded.
    @Test func nothingAfterA101IsDecoded() {
        let decoded = Self.decode("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nHTTP/1.1 200 OK\r\n\r\n")
        #expect(decoded.heads.map(\.status.code) == [101])
        #expect(decoded.stray == Array("HTTP/1.1 200 OK\r\n\r\n".utf8))
    }

    @Test func aBodyFramedByTheConnectionsEndEndsOnlyThere() {
        let text = "HTTP/1.0 200 OK\r\n\r\neverything until the end"
        let open = Self.decode(text)
        #expect(open.body == Array("everything until the end".utf8) && !open.ended)
        let closed = Self.decode(text, atEOF: true)
        #expect(closed.ended)
        // A response cut short by the end is not complete: the caller fails it.
        #expect(!Self.decode("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", atEOF: true).ended)
    }

    @Test func headersAreTrimmedAndKeptInOrder() throws {
        let decoded = Self.decode("HTTP/1.1 404 Not Found\r\nA: 1\r\nB:\t two words\t\r\nA: 3\r\nEmpty:\r\nContent-Length: 0\r\n\r\n")
        let head = try #require(decoded.heads.first)
        #expect(head.status == .notFound)
        #expect(head.headers.map { [$0.name, $0.value] } == [["A", "1"], ["B", "two words"], ["A", "3"], ["Empty", ""], ["Content-Length", "0"]])
        #expect(head.version == .http1_1)
    }

    @Test(arguments: [
        ("Transfer-Encoding with Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ("Transfer-Encoding not ending in chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
        ("chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ("Transfer-Encoding in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ("two different Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
        ("a Content-Length list that differs", "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n"),
        ("a signed Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\n"),
        ("an empty Content-Length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"),
        ("a huge Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 9999999999999999999999\r\n\r\n"),
        ("a bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"),
        // Found by the adversarial pass: with no CRLF CRLF ever coming, this waited for the request's deadline.
        ("a head with LF line ends only", "HTTP/1.1 200 OK\nContent-Length: 4\n\n/bad"),
        ("trailers with LF line ends only", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\n\n"),
        ("a bare CR", "HTTP/1.1 200 OK\r\nA: b\rc\r\nContent-Length: 0\r\n\r\n"),
        ("a folded header", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\nContent-Length: 0\r\n\r\n"),
        ("a space before the colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n"),
        ("a header with no colon", "HTTP/1.1 200 OK\r\nContent-Length 3\r\n\r\n"),
        ("a NUL in a value", "HTTP/1.1 200 OK\r\nA: b\u{0}c\r\nContent-Length: 0\r\n\r\n"),
        ("not HTTP", "HTTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ("HTTP/2 in a status line", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ("a two-digit status", "HTTP/1.1 20 OK\r\n\r\n"),
        ("a status above 599", "HTTP/1.1 600 Odd\r\n\r\n"),
        ("an empty line first", "\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ("a chunk size that is not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
        ("a chunk size with a sign", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n"),
        ("a chunk size too large", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"),
        ("chunk data longer than its size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n"),
        ("a chunk-size line with a bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\na\r\n0\r\n\r\n"),
        ("junk after a chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\na\r\n0\r\n\r\n"),
    ])
    func framingThatParsersCouldReadDifferentlyIsMalformed(_ what: String, _ text: String) {
        let bytes = Array(text.utf8)
        #expect(Self.decode(bytes).malformed != nil, "\(what)")
        #expect(Self.decode(bytes, cuts: Array(1..<bytes.count)).malformed != nil, "\(what), byte by byte")
    }

    /// Cases from the adversarial pass (a black-box attack through the transport, kept here at the decoder):
    /// each is either refused, or read as one response with body `/bad` and nothing decoded after it.
    @Test(arguments: [
        ("obs-fold hiding a Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-A: a\r\n Content-Length: 9\r\n\r\n/bad", nil),
        ("a bare CR hiding a Content-Length", "HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 99\r\nContent-Length: 4\r\n\r\n/bad", nil),
        ("an empty header name", "HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 4\r\n\r\n/bad", nil),
        ("lower-case http", "http/1.1 200 OK\r\nContent-Length: 4\r\n\r\n/bad", nil),
        ("a chunk size 0x4", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x4\r\n/bad\r\n0\r\n\r\n", nil),
        ("identity with Content-Length", "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 4\r\n\r\n/bad", nil),
        ("a Content-Length in the trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n/bad\r\n0\r\nContent-Length: 999\r\n\r\nX", "X"),
        ("a tab around Content-Length", "HTTP/1.1 200 OK\r\nContent-Length:\t4\t\r\n\r\n/badX", "X"),
        ("two thousand interim heads", String(repeating: "HTTP/1.1 103 Early Hints\r\n\r\n", count: 2000) + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n/badX", "X"),
        ("a 304 with a body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 4\r\n\r\n/bad", "/bad"),
    ] as [(String, String, String?)])
    func variantsFromTheAdversarialPass(_ what: String, _ text: String, _ stray: String?) {
        let decoded = Self.decode(text)
        guard let stray else {
            #expect(decoded.malformed != nil, "\(what)")
            return
        }
        #expect(decoded.malformed == nil && decoded.ended, "\(what)")
        #expect(decoded.body == (text.contains("304") ? [] : Array("/bad".utf8)), "\(what)")
        #expect(decoded.stray == Array(stray.utf8), "\(what)")
    }

    @Test func aHeadOverTheLimitIsMalformedEvenWhenItNeverEnds() {
        let big = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: HTTP1ResponseDecoder.maxHeadBytes) + "\r\n\r\n"
        #expect(Self.decode(big).malformed?.contains("exceeds") == true)
        let endless = Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: HTTP1ResponseDecoder.maxHeadBytes)).utf8)
        #expect(Self.decode(endless, cuts: stride(from: 1000, to: endless.count, by: 1000).map { $0 }).malformed != nil)
        let longChunkLine = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 2000)
        #expect(Self.decode(longChunkLine).malformed != nil)
    }

    /// Bytes that cannot start `HTTP/1.` are refused as soon as they arrive: an HTTP/2 server's GOAWAY (what a
    /// server that speaks only h2 answers an HTTP/1.1 request with) never ends a line, so waiting for the head's end
    /// held the request until its timeout. A head that starts right, cut anywhere, still waits for its bytes.
    @Test func aHeadThatCannotStartWithTheVersionIsRefusedAtOnce() throws {
        let goAway: [UInt8] = [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        #expect(Self.decode(goAway).malformed == "the status line is not HTTP/1.x")
        // Fed a byte at a time: refused at the first byte that differs from `HTTP/1.`, and not before.
        for (refused, at) in [("HTTP/2", 5), ("HTTQ", 3), ("\u{16}\u{03}\u{03}", 0), (" HTTP/1.1", 0)] {
            var decoder = HTTP1ResponseDecoder()
            decoder.expectResponse(isHead: false)
            var refusedAt: Int?
            for (index, byte) in refused.utf8.enumerated() where refusedAt == nil {
                var buffer = ByteBuffer(bytes: [byte])
                do { _ = try decoder.next(&buffer) } catch { refusedAt = index }
            }
            #expect(refusedAt == at, "\(refused)")
        }
        let whole = Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx".utf8)
        for cut in 1..<whole.count {
            let decoded = Self.decode(whole, cuts: [cut])
            #expect(decoded.malformed == nil && decoded.ended && decoded.body == Array("x".utf8), "cut at \(cut)")
        }
        var decoder = HTTP1ResponseDecoder()
        decoder.expectResponse(isHead: false)
        var start = ByteBuffer(string: "HTTP/1.")
        #expect(try decoder.next(&start) == .needMoreData)
    }

    /// Found by the fuzz target (its cut-independence invariant): a trailer section starting with a bare LF was
    /// refused in one read, but cut into 1-byte reads the LF was kept unscanned, and the section later ended as an
    /// empty one. Refused however the reads are cut.
    @Test func aBareLFStartingTheTrailerSectionIsRefusedWhereverTheReadsAreCut() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\n\r\n\r\n"
        for cut in 0..<text.utf8.count {
            #expect(Self.decode(text, cuts: [cut, cut + 1, cut + 2]).malformed?.contains("bare LF") == true, "cuts at \(cut)")
        }
        let bytes = Array(text.utf8)
        #expect(Self.decode(bytes, cuts: Array(1..<bytes.count)).malformed?.contains("bare LF") == true)
    }

    /// With no response expected, every byte is stray, and nothing is decoded after a malformed response.
    @Test func nothingIsDecodedWhenNoResponseIsExpected() throws {
        var decoder = HTTP1ResponseDecoder()
        var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try decoder.next(&buffer) == .stray)
        #expect(buffer.readableBytes == 38)
        decoder.expectResponse(isHead: false)
        var bad = ByteBuffer(string: "HTTP/1.1 200 OK\nA: b\r\n\r\n")
        #expect(throws: HTTP1ResponseDecoder.Malformed.self) { try decoder.next(&bad) }
        var more = ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try decoder.next(&more) == .stray)
    }
}

extension HTTP1ResponseDecoderTests.Decoded {
    mutating func take(_ part: HTTP1ResponseDecoder.Part) {
        switch part {
        case .head(let head): heads.append(head)
        case .body(let buffer): body += buffer.readableBytesView
        case .end(let trailers):
            ended = true
            self.trailers = trailers
        }
    }
}

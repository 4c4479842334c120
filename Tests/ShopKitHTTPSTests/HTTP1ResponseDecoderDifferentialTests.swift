import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS
import TestSupport

/// On valid responses the response decoder agrees with NIO's (llhttp's) decoder, part for part: the same heads,
/// the same body bytes, the same end and trailers. Responses come from a seeded generator (status, version,
/// header fields, `Content-Length`, chunked with extensions and trailers, HEAD, 1xx, bodies framed by the
/// connection's end), and each is fed whole and cut at random.
@Suite(.timeLimit(.minutes(3))) struct HTTP1ResponseDecoderDifferentialTests {
    /// What a decoder made of one response, in a form both decoders can be compared in.
    struct Outcome: Equatable, CustomStringConvertible {
        var heads: [String] = []
        var body: [UInt8] = []
        var ended = false
        var trailers: [String] = []

        var description: String { "heads \(heads), \(body.count) body bytes, ended \(ended), trailers \(trailers)" }

        mutating func head(_ head: HTTPResponseHead) {
            heads.append("\(head.version) \(head.status.code) \(head.headers.map { "\($0.name)=\($0.value)" })")
        }
    }

    /// A valid response from `random`, and whether it answers HEAD, and whether its body ends with the connection.
    static func response(_ random: inout SeededRandom) -> (bytes: [UInt8], isHead: Bool, untilClose: Bool) {
        let isHead = random.next(upperBound: 8) == 0
        let http10 = random.next(upperBound: 6) == 0
        var text = http10 ? "" : (random.next(upperBound: 4) == 0 ? "HTTP/1.1 100 Continue\r\n\r\n" : "")
        let status = [200, 201, 204, 206, 301, 304, 404, 418, 500, 503, 299, 599][random.next(upperBound: 12)]
        let reason = ["OK", "", "Some Reason", "caf\u{e9}"][random.next(upperBound: 4)]
        text += "HTTP/1.\(http10 ? 0 : 1) \(status) \(reason)\r\n"
        let names = ["Server", "X-A", "set-cookie", "Cache-Control", "x_y", "Vary", "A1!#$%&'*+-.^_`|~"]
        for _ in 0..<random.next(upperBound: 6) {
            let value = String((0..<random.next(upperBound: 20)).map { _ in
                Character(Unicode.Scalar(UInt8(0x21 + random.next(upperBound: 0x5E))))
            })
            text += "\(names[random.next(upperBound: names.count)]): \(value)\r\n"
        }
        let bodyless = isHead || status == 204 || status == 304
        let body = String(repeating: "b", count: random.next(upperBound: 300))
        var untilClose = false
        switch (http10, random.next(upperBound: 3)) {
        case (false, 0):
            text += "Transfer-Encoding: chunked\r\n\r\n"
            if !bodyless {
                var rest = Substring(body)
                while !rest.isEmpty {
                    let size = min(rest.count, 1 + random.next(upperBound: 64))
                    let ext = random.next(upperBound: 4) == 0 ? ";a=b" : ""
                    text += String(size, radix: 16, uppercase: random.next(upperBound: 2) == 0) + ext + "\r\n"
                    text += rest.prefix(size) + "\r\n"
                    rest = rest.dropFirst(size)
                }
                text += "0\r\n" + (random.next(upperBound: 3) == 0 ? "X-Trailer: t\r\n" : "") + "\r\n"
            }
        case (_, 1) where !bodyless || random.next(upperBound: 2) == 0:
            untilClose = !bodyless
            text += "\r\n" + (bodyless ? "" : body)
        default:
            text += "Content-Length: \(body.count)\r\n\r\n" + (bodyless ? "" : body)
        }
        return (Array(text.utf8), isHead, untilClose)
    }

    static func ours(_ bytes: [UInt8], cuts: [Int], isHead: Bool, untilClose: Bool) -> Outcome {
        let decoded = HTTP1ResponseDecoderTests.decode(bytes, cuts: cuts, isHead: isHead, atEOF: untilClose)
        var outcome = Outcome(body: decoded.body, ended: decoded.ended)
        // NIO's client decoder drops interim (1xx) heads; the request state machine skips them the same way.
        decoded.heads.filter { !(100..<200).contains($0.status.code) }.forEach { outcome.head($0) }
        outcome.trailers = decoded.trailers.map { $0.map { "\($0.name)=\($0.value)" } } ?? []
        #expect(decoded.malformed == nil && decoded.stray.isEmpty, "\(String(decoding: bytes, as: UTF8.self))")
        return outcome
    }

    static func nios(_ bytes: [UInt8], cuts: [Int], isHead: Bool, untilClose: Bool) throws -> Outcome {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHTTPClientHandlers()
        try channel.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: isHead ? .HEAD : .GET, uri: "/")))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        var outcome = Outcome()
        func drain() throws {
            while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
                switch part {
                case .head(let head): outcome.head(head)
                case .body(let buffer): outcome.body += buffer.readableBytesView
                case .end(let trailers):
                    outcome.ended = true
                    outcome.trailers = trailers.map { $0.map { "\($0.name)=\($0.value)" } } ?? []
                }
            }
        }
        var start = 0
        for end in cuts.filter({ $0 > 0 && $0 < bytes.count }).sorted() + [bytes.count] {
            try channel.writeInbound(ByteBuffer(bytes: bytes[start..<end]))
            start = end
            try drain()
        }
        if untilClose {
            channel.pipeline.fireChannelInactive()
            try drain()
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        return outcome
    }

    @Test func bothDecodersReadEveryGeneratedResponseAlike() throws {
        var random = SeededRandom(seed: 0x5EED_37)
        for round in 0..<2_000 {
            let (bytes, isHead, untilClose) = Self.response(&random)
            let cuts = (0..<random.next(upperBound: 4)).map { _ in random.next(upperBound: bytes.count) }
            let nio = try Self.nios(bytes, cuts: [], isHead: isHead, untilClose: untilClose)
            let ours = Self.ours(bytes, cuts: cuts, isHead: isHead, untilClose: untilClose)
            #expect(nio.ended, "round \(round): NIO did not end \(String(decoding: bytes, as: UTF8.self))")
            #expect(ours == nio, "round \(round), cuts \(cuts): \(String(decoding: bytes, as: UTF8.self))")
        }
    }
}

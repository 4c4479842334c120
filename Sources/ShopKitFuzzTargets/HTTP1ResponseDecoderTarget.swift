import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import ShopKitHTTPS

/// The HTTP/1.1 response decoder alone (``HTTP1ResponseDecoder``), facing any bytes, checked against itself and
/// against NIO's decoder.
///
/// Input: one control byte, then the server's bytes.
/// - bit 0: the response answers HEAD;
/// - bits 1–6: the size of the reads the bytes arrive in (1–63 bytes; 0: all at once).
///
/// Invariants:
/// - Framing does not depend on how the bytes are cut: the same heads, body bytes, end, trailers, stray bytes
///   and refusal, whole or cut into reads.
/// - Nothing is lost or invented: the bytes the decoder took, plus those it left stray, are the input, in order
///   (the body bytes it delivered are bytes of the input).
/// - A `Content-Length` body delivers exactly that many bytes when it ends, never more.
/// - Where NIO's decoder reads the whole input as exactly one complete response, without an error, and this
///   decoder accepts it too, both agree on the heads, the body and the trailers.
package enum HTTP1ResponseDecoderTarget {
    /// What one decoding came to.
    package struct Decoded: Equatable {
        package var heads: [HTTPResponseHead] = []
        package var body: [UInt8] = []
        package var ended = false
        package var trailers: HTTPHeaders?
        package var stray: [UInt8] = []
        package var malformed = false
        /// The bytes the decoder took in (consumed from the reads).
        package var taken = 0
    }

    package static func run(_ input: [UInt8]) {
        guard let control = input.first else { return }
        let isHead = control & 1 != 0
        let readSize = Int(control >> 1) & 0x3F
        let bytes = Array(input.dropFirst())

        let whole = decode(bytes, readSize: 0, isHead: isHead)
        let cut = decode(bytes, readSize: readSize, isHead: isHead)
        if !whole.malformed {
            FuzzCheck.require(cut == whole, "the framing depends on the read cuts (\(readSize))")
            FuzzCheck.require(whole.taken + whole.stray.count == bytes.count, "bytes lost or invented")
            FuzzCheck.require(
                Array(bytes[whole.taken...]).starts(with: whole.stray), "stray bytes that are not the input's rest")
        } else {
            FuzzCheck.require(cut.malformed, "refused whole, accepted cut into reads of \(readSize)")
        }
        if whole.ended, let final = whole.heads.last, !isHead, final.status.code != 204, final.status.code != 304,
            let length = final.headers.first(name: "content-length").flatMap(Int.init)
        {
            FuzzCheck.require(whole.body.count == length, "a Content-Length body of \(whole.body.count) bytes, not \(length)")
        }
        if !whole.malformed, whole.ended, whole.stray.isEmpty, whole.taken == bytes.count,
            let nio = nioDecode(bytes, isHead: isHead)
        {
            // NIO's client decoder drops interim (1xx) heads; the request state machine skips them the same way.
            let final = whole.heads.filter { !(100..<200).contains($0.status.code) || $0.status.code == 101 }
            FuzzCheck.require(nio.heads.map(fieldValues) == final.map(fieldValues), "NIO's decoder reads other heads")
            FuzzCheck.require(nio.body == whole.body, "NIO's decoder reads another body")
            FuzzCheck.require(
                fieldValues(nio.trailers ?? [:]) == fieldValues(whole.trailers ?? [:]), "NIO's decoder reads other trailers")
        }
    }

    /// A head as RFC 9110 reads it: its version, status code and fields, each field value without the whitespace
    /// around it. NIO's decoder keeps a value's trailing spaces and tabs (`Server: x \r\n` is `x `), which RFC 9110
    /// §5.5 excludes from the value and this decoder trims, and drops the reason phrase of a code it does not know
    /// (`240 OK`), which a client ignores (RFC 9112 §4); neither difference is a framing one.
    static func fieldValues(_ head: HTTPResponseHead) -> String {
        "\(head.version) \(head.status.code) \(fieldValues(head.headers))"
    }

    static func fieldValues(_ headers: HTTPHeaders) -> [String] {
        headers.map { "\($0.name): \($0.value.trimmingCharacters(in: [" ", "\t"]))" }
    }

    /// Decodes `bytes` in reads of `readSize` (0: one read), as the connection handler does.
    package static func decode(_ bytes: [UInt8], readSize: Int, isHead: Bool) -> Decoded {
        var decoder = HTTP1ResponseDecoder()
        decoder.expectResponse(isHead: isHead)
        var decoded = Decoded()
        var offset = 0
        repeat {
            let end = readSize == 0 ? bytes.count : min(offset + readSize, bytes.count)
            var buffer = ByteBuffer(bytes: bytes[offset..<end])
            offset = end
            reading: while true {
                let before = buffer.readableBytes
                let event: HTTP1ResponseDecoder.Event
                do {
                    event = try decoder.next(&buffer)
                } catch {
                    decoded.malformed = true
                    return decoded
                }
                decoded.taken += before - buffer.readableBytes
                switch event {
                case .needMoreData:
                    break reading
                case .stray:
                    // Everything after the first stray byte stays stray (no response is expected again here).
                    decoded.stray += buffer.readableBytesView
                    decoded.stray += bytes[offset...]
                    return decoded
                case .part(.head(let head)): decoded.heads.append(head)
                case .part(.body(let body)): decoded.body += body.readableBytesView
                case .part(.end(let trailers)):
                    decoded.ended = true
                    decoded.trailers = trailers
                }
            }
        } while offset < bytes.count
        return decoded
    }

    /// NIO's decoder on the same bytes, when it reads them as exactly one complete response without an error.
    static func nioDecode(_ bytes: [UInt8], isHead: Bool) -> Decoded? {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        do {
            try channel.pipeline.syncOperations.addHTTPClientHandlers()
            let head = HTTPRequestHead(version: .http1_1, method: isHead ? .HEAD : .GET, uri: "/")
            try channel.writeOutbound(HTTPClientRequestPart.head(head))
            try channel.writeOutbound(HTTPClientRequestPart.end(nil))
            try channel.writeInbound(ByteBuffer(bytes: bytes))
            var decoded = Decoded()
            var ends = 0
            while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
                switch part {
                case .head(let head): decoded.heads.append(head)
                case .body(let body): decoded.body += body.readableBytesView
                case .end(let trailers):
                    ends += 1
                    decoded.trailers = trailers
                }
            }
            return ends == 1 ? decoded : nil
        } catch {
            return nil
        }
    }
}

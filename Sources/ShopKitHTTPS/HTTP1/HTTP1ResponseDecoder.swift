import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

/// Exact HTTP/1.1 response framing (RFC 9112 §6): where each response starts and ends, byte for byte, as a pure
/// decoder (bytes in, one event out per call, no I/O).
///
/// A response is read only while one is expected (``expectResponse(isHead:)``, when a request starts), and it ends
/// exactly where its framing says: `Content-Length`, the chunked coding, no body at all (HEAD, 1xx, 204, 304), or
/// the connection's end. A byte after that end answers no request: ``next(_:)`` reports ``Event/stray`` and leaves
/// it undecoded, so no byte of it can become part of the next caller's response (a stray header fragment once
/// became the next caller's status line and headers, inside NIO's decoder, which keeps a partial head across
/// messages).
///
/// Strict wherever lenience lets two parsers disagree about where a message ends: CRLF line ends only, no line
/// folding, no space before a colon, `Transfer-Encoding` only with `chunked` last and never beside
/// `Content-Length`, every `Content-Length` value the same, a head at most ``maxHeadBytes`` long. Such a response
/// is ``Malformed``: the server's fault.
package struct HTTP1ResponseDecoder {
    /// A decoded part of a response.
    package enum Part: Equatable {
        case head(HTTPResponseHead)
        case body(ByteBuffer)
        /// The response's end, with its trailer fields if it had any.
        case end(HTTPHeaders?)
    }

    /// What ``next(_:)`` found.
    package enum Event: Equatable {
        case part(Part)
        /// Every byte given was taken in; more are needed for the next part.
        case needMoreData
        /// The bytes left in the buffer come after the expected response's end (or when none is expected): they
        /// answer no request. They were not consumed.
        case stray
    }

    /// A response the decoder refuses: not HTTP/1.1, or framed so that parsers could disagree on its end.
    package struct Malformed: Error, Equatable, CustomStringConvertible {
        package let reason: String
        package var description: String { reason }
    }

    /// The most bytes a response head (status line and header fields) or a trailer section may take.
    package static let maxHeadBytes = HTTPResponseLimits.maxHeadBytes
    /// The most bytes a chunk-size line (with its extensions) may take.
    package static let maxChunkLineBytes = 1024

    private enum State: Equatable {
        /// No response is expected: every byte is stray.
        case idle
        /// Reading a head, up to its empty line; `isHead`: it answers a HEAD request.
        case head(isHead: Bool)
        /// A head without a body was delivered: the end is due.
        case endDue
        /// A `Content-Length` body with `remaining` bytes to go.
        case body(remaining: Int)
        /// A chunk-size line.
        case chunkLine
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkDataEnd
        /// The trailer section, up to its empty line.
        case trailers
        /// A body framed by the connection's end.
        case untilClose
        /// The response was malformed: nothing more is decoded.
        case failed
    }

    private var state = State.idle
    /// The start of a line or section that has not ended yet (a head cut across reads, a chunk-size line, the
    /// CRLF after a chunk's data, a trailer section), copied out of the reads it came in.
    private var pending: [UInt8] = []

    package init() {}

    /// Whether a response is being read (expected and not ended).
    package var isReading: Bool {
        switch state {
        case .idle, .failed: return false
        default: return true
        }
    }

    /// A request started: its response is expected now. `isHead`: the request is HEAD, so the response has no body
    /// whatever its head says.
    package mutating func expectResponse(isHead: Bool) {
        state = .head(isHead: isHead)
        pending.removeAll(keepingCapacity: true)
    }

    /// The next event from `buffer`, consuming what it decodes. Call it until it returns ``Event/needMoreData`` or
    /// ``Event/stray``.
    package mutating func next(_ buffer: inout ByteBuffer) throws(Malformed) -> Event {
        do {
            return try step(&buffer)
        } catch {
            state = .failed
            pending = []
            // Every throw below is a `Malformed` (the closures that rethrow them erase the type).
            throw error as? Malformed ?? Malformed(reason: "\(error)")
        }
    }

    /// The connection ended (cleanly: a TLS close_notify or, below TLS, a FIN the caller accepts). A body framed by
    /// the connection's end is complete; any other response in progress is cut short (nil: the caller fails it).
    package mutating func connectionEnded() -> Part? {
        guard state == .untilClose else { return nil }
        state = .idle
        return .end(nil)
    }

    // MARK: Decoding

    private mutating func step(_ buffer: inout ByteBuffer) throws -> Event {
        switch state {
        case .idle, .failed:
            return buffer.readableBytes == 0 ? .needMoreData : .stray
        case .endDue:
            state = .idle
            return .part(.end(nil))
        case .head(let isHead):
            try checkStatusLineStart(buffer)
            guard let head = try section(&buffer, limit: Self.maxHeadBytes, what: "response head", Self.parseHead) else {
                return .needMoreData
            }
            return .part(.head(try startBody(head, isHead: isHead)))
        case .body(let remaining):
            guard buffer.readableBytes > 0 else { return .needMoreData }
            let count = min(remaining, buffer.readableBytes)
            let slice = buffer.readSlice(length: count)!
            state = remaining == count ? .endDue : .body(remaining: remaining - count)
            return .part(.body(slice))
        case .untilClose:
            guard buffer.readableBytes > 0 else { return .needMoreData }
            return .part(.body(buffer.readSlice(length: buffer.readableBytes)!))
        case .chunkLine:
            guard let size = try chunkLine(&buffer) else { return .needMoreData }
            state = size == 0 ? .trailers : .chunkData(remaining: size)
            return try step(&buffer)
        case .chunkData(let remaining):
            guard buffer.readableBytes > 0 else { return .needMoreData }
            let count = min(remaining, buffer.readableBytes)
            let slice = buffer.readSlice(length: count)!
            state = remaining == count ? .chunkDataEnd : .chunkData(remaining: remaining - count)
            return .part(.body(slice))
        case .chunkDataEnd:
            guard try crlf(&buffer) else { return .needMoreData }
            state = .chunkLine
            return try step(&buffer)
        case .trailers:
            guard let trailers = try trailerSection(&buffer) else { return .needMoreData }
            state = .idle
            return .part(.end(trailers))
        }
    }

    /// A head must start with `HTTP/1.`: bytes that cannot (an HTTP/2 server's frames, a TLS alert, binary noise)
    /// are malformed as soon as they arrive, without waiting for a CRLF CRLF that may never come.
    private func checkStatusLineStart(_ buffer: ByteBuffer) throws {
        let seen = pending.count
        guard seen < Self.statusLinePrefix.count else { return }
        let more = buffer.readableBytesView.prefix(Self.statusLinePrefix.count - seen)
        for (offset, byte) in more.enumerated() where byte != Self.statusLinePrefix[seen + offset] {
            throw Malformed(reason: "the status line is not HTTP/1.x")
        }
    }

    private static let statusLinePrefix: [UInt8] = Array("HTTP/1.".utf8)

    /// The bytes of a section that ends with an empty line (a head), once all of it is here: `pending` and
    /// `buffer` together, up to and including its final CRLF CRLF. Nil: the section goes on in a later read (the
    /// buffer was taken into `pending`). A line that ends with a bare LF is malformed at once, without waiting for
    /// a CRLF CRLF that may never come.
    private mutating func section<Parsed>(
        _ buffer: inout ByteBuffer, limit: Int, what: String, _ parse: (UnsafeRawBufferPointer) throws -> Parsed
    ) throws -> Parsed? {
        let pendingCount = pending.count
        let readable = buffer.readableBytes
        if pendingCount == 0 {
            // The common case: a whole head in one read, found and parsed where it lies, never copied.
            switch buffer.withUnsafeReadableBytes({ Self.endOfSection(in: $0, from: 0) }) {
            case .end(let end):
                guard end <= limit else { throw Malformed(reason: "the \(what) exceeds \(limit) bytes") }
                let parsed = try buffer.withUnsafeReadableBytes { try parse(UnsafeRawBufferPointer(rebasing: $0[..<end])) }
                buffer.moveReaderIndex(forwardBy: end)
                return parsed
            case .bareLF:
                throw Malformed(reason: "a line of the \(what) ends with a bare LF")
            case .notYet:
                pending.append(contentsOf: buffer.readableBytesView)
                buffer.moveReaderIndex(forwardBy: readable)
                guard pending.count <= limit else { throw Malformed(reason: "the \(what) exceeds \(limit) bytes") }
                return nil
            }
        }
        pending.append(contentsOf: buffer.readableBytesView)
        buffer.moveReaderIndex(forwardBy: readable)
        switch pending.withUnsafeBytes({ Self.endOfSection(in: $0, from: pendingCount) }) {
        case .end(let end):
            guard end <= limit else { throw Malformed(reason: "the \(what) exceeds \(limit) bytes") }
            // Give back what follows the section: it belongs to the body, or is stray.
            buffer.moveReaderIndex(to: buffer.readerIndex - (pending.count - end))
            let parsed = try pending.withUnsafeBytes { try parse(UnsafeRawBufferPointer(rebasing: $0[..<end])) }
            pending.removeAll(keepingCapacity: true)
            return parsed
        case .bareLF:
            throw Malformed(reason: "a line of the \(what) ends with a bare LF")
        case .notYet:
            guard pending.count <= limit else { throw Malformed(reason: "the \(what) exceeds \(limit) bytes") }
            return nil
        }
    }

    private enum SectionEnd {
        /// The index just past the section's CRLF CRLF.
        case end(Int)
        /// A line ends with a LF that no CR precedes.
        case bareLF
        case notYet
    }

    /// Looks at each LF in `bytes` from `from` on (the bytes before were looked at already): the first CRLF CRLF
    /// ends the section; a LF without its CR is a bare LF.
    private static func endOfSection(in bytes: UnsafeRawBufferPointer, from: Int) -> SectionEnd {
        guard let base = bytes.baseAddress else { return .notYet }
        var index = from
        while index < bytes.count {
            // The next LF, found by memchr (a word at a time).
            guard let lf = memchr(base + index, Int32(UInt8(ascii: "\n")), bytes.count - index) else { return .notYet }
            index = base.distance(to: UnsafeRawPointer(lf))
            guard index > 0, bytes[index - 1] == UInt8(ascii: "\r") else { return .bareLF }
            if index >= 3, bytes[index - 2] == UInt8(ascii: "\n"), bytes[index - 3] == UInt8(ascii: "\r") {
                return .end(index + 1)
            }
            index += 1
        }
        return .notYet
    }

    /// The trailer section: nil trailers for an immediate empty line, else the fields up to the empty line.
    /// `.some(nil)` is the end with no trailers; nil means more bytes are needed.
    private mutating func trailerSection(_ buffer: inout ByteBuffer) throws -> HTTPHeaders?? {
        if pending.isEmpty {
            guard buffer.readableBytes >= 2 else {
                // The byte kept here is never scanned again (`section` scans from what is pending): a LF first is
                // a bare one, refused now, as it is when the section comes in one read.
                if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == UInt8(ascii: "\n") {
                    throw Malformed(reason: "a line of the trailer section ends with a bare LF")
                }
                pending.append(contentsOf: buffer.readableBytesView)
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                return nil
            }
            if buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) == Self.crlfWord {
                buffer.moveReaderIndex(forwardBy: 2)
                return .some(nil)
            }
        } else if pending.count == 1, pending[0] == UInt8(ascii: "\r") {
            guard buffer.readableBytes >= 1 else { return nil }
            if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == UInt8(ascii: "\n") {
                buffer.moveReaderIndex(forwardBy: 1)
                pending.removeAll(keepingCapacity: true)
                return .some(nil)
            }
        }
        guard let headers = try section(&buffer, limit: Self.maxHeadBytes, what: "trailer section", Self.fields) else {
            return nil
        }
        return .some(headers)
    }

    private static let crlfWord = UInt16(UInt8(ascii: "\r")) << 8 | UInt16(UInt8(ascii: "\n"))

    /// Takes a CRLF (the end of a chunk's data) from `pending` and `buffer`; false: more bytes are needed.
    private mutating func crlf(_ buffer: inout ByteBuffer) throws -> Bool {
        while pending.count < 2, let byte = buffer.readInteger(as: UInt8.self) { pending.append(byte) }
        guard pending.count == 2 else { return false }
        guard pending[0] == UInt8(ascii: "\r"), pending[1] == UInt8(ascii: "\n") else {
            throw Malformed(reason: "a chunk's data does not end with CRLF")
        }
        pending.removeAll(keepingCapacity: true)
        return true
    }

    /// A chunk-size line's size (its extensions are checked and ignored); nil: more bytes are needed.
    private mutating func chunkLine(_ buffer: inout ByteBuffer) throws -> Int? {
        let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n"))
        guard let newline else {
            pending.append(contentsOf: buffer.readableBytesView)
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            guard pending.count <= Self.maxChunkLineBytes else {
                throw Malformed(reason: "a chunk-size line exceeds \(Self.maxChunkLineBytes) bytes")
            }
            return nil
        }
        pending.append(contentsOf: buffer.readableBytesView[..<(newline + 1)])
        buffer.moveReaderIndex(to: newline + 1)
        guard pending.count <= Self.maxChunkLineBytes else {
            throw Malformed(reason: "a chunk-size line exceeds \(Self.maxChunkLineBytes) bytes")
        }
        defer { pending.removeAll(keepingCapacity: true) }
        return try pending.withUnsafeBytes { (bytes) throws -> Int in
            guard bytes.count >= 2, bytes[bytes.count - 2] == UInt8(ascii: "\r") else {
                throw Malformed(reason: "a chunk-size line does not end with CRLF")
            }
            let line = UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - 2)])
            var size = 0
            var digits = 0
            for byte in line {
                guard let value = Self.hexValue(byte) else { break }
                digits += 1
                guard digits <= 15 else { throw Malformed(reason: "a chunk size is too large") }
                size = size << 4 | value
            }
            guard digits > 0 else { throw Malformed(reason: "a chunk size is not hexadecimal") }
            // Extensions: `;name[=value]` after optional whitespace; visible characters only.
            let rest = line[(line.startIndex + digits)...]
            if let first = rest.first(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) {
                guard first == UInt8(ascii: ";"), rest.allSatisfy(Self.isFieldValueByte) else {
                    throw Malformed(reason: "a chunk-size line has bytes after its size that are not an extension")
                }
            }
            return size
        }
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    // MARK: The head

    /// Parses a whole head and sets the state its framing calls for.
    private mutating func startBody(_ parsed: ParsedHead, isHead: Bool) throws -> HTTPResponseHead {
        let head = parsed.head
        let code = Int(head.status.code)
        switch code {
        case 101:
            // Never asked for (the request state machine fails it); nothing after it is HTTP/1.1.
            state = .idle
            return head
        case 100..<200:
            // Interim: the final response follows.
            state = .head(isHead: isHead)
            return head
        default:
            break
        }
        let framing = try Self.bodyFraming(parsed)
        if isHead || code == 204 || code == 304 {
            state = .endDue
            return head
        }
        switch framing {
        case .length(0): state = .endDue
        case .length(let length): state = .body(remaining: length)
        case .chunked: state = .chunkLine
        case .untilClose: state = .untilClose
        }
        return head
    }

    private enum BodyFraming: Equatable {
        case length(Int)
        case chunked
        case untilClose
    }

    /// RFC 9112 §6.3, strictly: `Transfer-Encoding` must end in `chunked` (once), never beside `Content-Length`,
    /// never in an HTTP/1.0 response; every `Content-Length` value is the same run of digits.
    private static func bodyFraming(_ parsed: ParsedHead) throws -> BodyFraming {
        let head = parsed.head
        let hasLength = !parsed.contentLengths.isEmpty
        if !parsed.transferEncodings.isEmpty {
            guard !hasLength else { throw Malformed(reason: "the response has both Transfer-Encoding and Content-Length") }
            guard head.version == .http1_1 else { throw Malformed(reason: "an HTTP/1.0 response has Transfer-Encoding") }
            let codings = Self.listElements(parsed.transferEncodings)
            let chunked = codings.map { $0.lowercased() == "chunked" }
            guard chunked.last == true, chunked.dropLast().allSatisfy({ !$0 }) else {
                throw Malformed(reason: "the response's Transfer-Encoding does not end in chunked exactly once")
            }
            return .chunked
        }
        guard hasLength else { return .untilClose }
        let lengths = Self.listElements(parsed.contentLengths)
        guard let first = lengths.first else { throw Malformed(reason: "the response's Content-Length is empty") }
        guard let length = contentLength(first), lengths.allSatisfy({ contentLength($0) == length }) else {
            throw Malformed(reason: "the response's Content-Length is not one number")
        }
        return .length(length)
    }

    /// A `Content-Length` value: 1 to 18 digits.
    private static func contentLength(_ value: Substring) -> Int? {
        guard (1...18).contains(value.utf8.count) else { return nil }
        var length = 0
        for byte in value.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            length = length * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return length
    }

    /// A parsed head, with the values of its framing fields gathered while parsing (so framing needs no
    /// second pass over the fields).
    private struct ParsedHead {
        var head: HTTPResponseHead
        var contentLengths: [String] = []
        var transferEncodings: [String] = []
    }

    /// The status line and header fields of a head (its final empty line included).
    private static func parseHead(_ bytes: UnsafeRawBufferPointer) throws -> ParsedHead {
        var lines = Lines(bytes)
        guard let statusLine = try lines.next() else { throw Malformed(reason: "the response has no status line") }
        let (version, status) = try Self.statusLine(statusLine)
        var fields: [(String, String)] = []
        var contentLengths: [String] = []
        var transferEncodings: [String] = []
        while let line = try lines.next(), !line.isEmpty {
            let (name, value) = try field(line)
            if Self.isName(name, "content-length") {
                contentLengths.append(value)
            } else if Self.isName(name, "transfer-encoding") {
                transferEncodings.append(value)
            }
            fields.append((name, value))
        }
        // `HTTPHeaders(_:)` takes the fields as they are: every name was checked to be a token (ASCII) above,
        // which is what `add(name:value:)` would check again, one field at a time.
        return ParsedHead(
            head: HTTPResponseHead(version: version, status: status, headers: HTTPHeaders(fields)),
            contentLengths: contentLengths, transferEncodings: transferEncodings)
    }

    /// Whether the field name `name` (a token: checked by ``field(_:)``) is `lowercase` in any case. In a token,
    /// only a letter's case bit (0x20) tells two bytes apart from a lowercase letter or `-`.
    private static func isName(_ name: String, _ lowercase: StaticString) -> Bool {
        guard name.utf8.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            var index = 0
            for byte in name.utf8 {
                guard byte | 0x20 == expected[index] else { return false }
                index += 1
            }
            return true
        }
    }

    /// The header fields of a trailer section (its final empty line included).
    private static func fields(_ bytes: UnsafeRawBufferPointer) throws -> HTTPHeaders {
        var lines = Lines(bytes)
        var fields: [(String, String)] = []
        while let line = try lines.next(), !line.isEmpty { fields.append(try field(line)) }
        return HTTPHeaders(fields)
    }

    /// The comma-separated elements of a list field's values, trimmed, empty ones dropped (RFC 9110 §5.6.1), as
    /// NIO's `headers[canonicalForm:]` gives them.
    private static func listElements(_ values: [String]) -> [Substring] {
        var elements: [Substring] = []
        for value in values {
            for element in value.split(separator: ",", omittingEmptySubsequences: true) {
                let trimmed = element.drop(while: { $0 == " " || $0 == "\t" })
                var end = trimmed.endIndex
                while end > trimmed.startIndex, trimmed[trimmed.index(before: end)] == " " || trimmed[trimmed.index(before: end)] == "\t" {
                    end = trimmed.index(before: end)
                }
                let result = trimmed[..<end]
                if !result.isEmpty { elements.append(result) }
            }
        }
        return elements
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason]`.
    private static func statusLine(_ line: UnsafeRawBufferPointer) throws -> (HTTPVersion, HTTPResponseStatus) {
        let prefix = statusLinePrefix
        guard line.count >= 12, line.starts(with: prefix), line[8] == UInt8(ascii: " ") else {
            throw Malformed(reason: "the status line is not HTTP/1.x")
        }
        let version: HTTPVersion
        switch line[7] {
        case UInt8(ascii: "1"): version = .http1_1
        case UInt8(ascii: "0"): version = .http1_0
        default: throw Malformed(reason: "the status line is not HTTP/1.0 or HTTP/1.1")
        }
        var code = 0
        for index in 9..<12 {
            let byte = line[index]
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else {
                throw Malformed(reason: "the status code is not three digits")
            }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard (100...599).contains(code) else { throw Malformed(reason: "the status code \(code) is not from 100 to 599") }
        var reason = ""
        if line.count > 12 {
            let rest = UnsafeRawBufferPointer(rebasing: line[13...])
            guard line[12] == UInt8(ascii: " "), rest.allSatisfy(isFieldValueByte) else {
                throw Malformed(reason: "the status line's reason phrase has a byte it may not have")
            }
            reason = String(decoding: rest, as: UTF8.self)
        }
        return (version, HTTPResponseStatus(statusCode: code, reasonPhrase: reason))
    }

    /// `name ":" OWS value OWS`, with a token for a name and visible characters, spaces and tabs for a value.
    private static func field(_ line: UnsafeRawBufferPointer) throws -> (String, String) {
        guard let base = line.baseAddress, let found = memchr(base, Int32(UInt8(ascii: ":")), line.count),
            case let colon = base.distance(to: UnsafeRawPointer(found)), colon > 0
        else {
            throw Malformed(reason: line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t")
                ? "a header field is folded onto a second line" : "a header field has no name or no colon")
        }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        guard name.allSatisfy({ tokenBytes.contains($0) }) else { throw Malformed(reason: "a header field name has a byte it may not have") }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, line[end - 1] == UInt8(ascii: " ") || line[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        guard value.allSatisfy(isFieldValueByte) else {
            throw Malformed(reason: "a header field value has a byte it may not have")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// RFC 9110 tchar, as a bit set: one test per byte of a field name.
    private static let tokenBytes = ByteSet((0...255).map(UInt8.init).filter(isTokenByte))

    /// RFC 9110 tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// A field value's bytes (RFC 9110 field-vchar, SP, HTAB; obs-text included): no control characters.
    private static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\t") || (byte >= 0x20 && byte != 0x7F)
    }

    /// A set of bytes as 256 bits.
    struct ByteSet {
        private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        init(_ bytes: [UInt8]) {
            for byte in bytes {
                let bit = UInt64(1) << UInt64(byte & 63)
                switch byte >> 6 {
                case 0: words.0 |= bit
                case 1: words.1 |= bit
                case 2: words.2 |= bit
                default: words.3 |= bit
                }
            }
        }

        @inline(__always) func contains(_ byte: UInt8) -> Bool {
            let word: UInt64
            switch byte >> 6 {
            case 0: word = words.0
            case 1: word = words.1
            case 2: word = words.2
            default: word = words.3
            }
            return word & (UInt64(1) << UInt64(byte & 63)) != 0
        }
    }

    /// Whether a response lets its connection be kept alive (RFC 9112 §9.3): an HTTP/1.1 response unless its
    /// `Connection` field lists `close`, an HTTP/1.0 one only when it lists `keep-alive`. What NIO's
    /// `isKeepAlive` answers, without splitting the field's value into strings.
    static func isKeepAlive(_ head: HTTPResponseHead) -> Bool {
        var close = false
        var keepAlive = false
        for (name, value) in head.headers where isName(name, "connection") {
            for token in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
                var token = token[...]
                while let first = token.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { token = token.dropFirst() }
                while let last = token.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { token = token.dropLast() }
                if equalsLowercased(token, "close") { close = true }
                if equalsLowercased(token, "keep-alive") { keepAlive = true }
            }
        }
        if close { return false }
        return head.version.major == 1 && head.version.minor >= 1 ? true : keepAlive
    }

    /// Whether `bytes` are `lowercase` in any letter case.
    private static func equalsLowercased(_ bytes: Substring.UTF8View.SubSequence, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            var index = 0
            for byte in bytes {
                let folded = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
                guard folded == expected[index] else { return false }
                index += 1
            }
            return true
        }
    }

    /// The CRLF-ended lines of a section; a CR or LF inside a line is malformed.
    private struct Lines {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func next() throws -> UnsafeRawBufferPointer? {
            guard offset < bytes.count, let base = bytes.baseAddress else { return nil }
            // The line's end is its first CR (memchr: the head's bytes are scanned a word at a time); a LF before
            // it, or a CR that no LF follows, is malformed.
            let rest = bytes.count - offset
            let cr = memchr(base + offset, Int32(UInt8(ascii: "\r")), rest).map { $0 - UnsafeMutableRawPointer(mutating: base) }
            let index = cr ?? bytes.count
            guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n"),
                memchr(base + offset, Int32(UInt8(ascii: "\n")), index - offset) == nil
            else {
                throw Malformed(reason: "a line ends with a bare CR or LF")
            }
            let line = UnsafeRawBufferPointer(rebasing: bytes[offset..<index])
            offset = index + 2
            return line
        }
    }
}

/// Limits on what a server may send, one value per fact.
package enum HTTPResponseLimits {
    /// The most bytes of a response head: an HTTP/1.1 status line and header fields, or an HTTP/2 header list.
    package static let maxHeadBytes = 64 * 1024
}

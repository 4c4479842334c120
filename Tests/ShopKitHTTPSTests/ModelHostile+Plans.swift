import Foundation
import NIOCore
import NIOHTTP2
import TestSupport

/// The model-based hostile test's vocabulary: what each request is, what the server may do with it, and the bytes
/// both sides derive from a request's token (so the server can tell a caller's body from another's, and the
/// checker can tell a caller's response from another's).
enum Model {
    /// The header that carries a request's token to the server and back.
    static let tokenHeader = "x-model-token"
    /// The header that tells the server how many body bytes the caller sent.
    static let bodySizeHeader = "x-model-body"

    /// A stable 64-bit hash of `text` (FNV-1a): a request's token seeds the choices made for it.
    static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    /// `count` bytes that only `token` yields (its text, then a counter mixed with its hash).
    static func bytes(_ token: String, salt: String, count: Int) -> [UInt8] {
        let seed = hash(salt + token)
        let prefix = Array("<\(token)>".utf8)
        return (0..<count).map { index in
            index < prefix.count ? prefix[index] : UInt8(truncatingIfNeeded: seed >> UInt64((index % 8) * 8) &+ UInt64(index))
        }
    }

    /// The request body the caller with `token` sends (`count` bytes).
    static func requestBody(_ token: String, count: Int) -> [UInt8] { bytes(token, salt: "request", count: count) }

    /// The response body the server sends for `token` (its length is derived from the token too).
    static func responseBody(_ token: String) -> [UInt8] {
        var random = SeededRandom(seed: hash("size" + token))
        let count = random.next(upperBound: 5) == 0 ? random.next(upperBound: 20_000) : random.next(upperBound: 1_500)
        return bytes(token, salt: "response", count: count)
    }

    /// What the server did with one request it received, as far as the invariants care.
    enum Fate: Sendable, Equatable {
        /// A whole response was sent, and the connection may serve the next request.
        case answered
        /// A whole response was sent, and then bytes that answer no request (or, over HTTP/2, the connection
        /// was kept): a client must never write another request on this connection.
        case answeredThenStray
        /// A whole response, then the connection was closed (with close_notify, or with the response framed by
        /// its length, so that it is complete either way).
        case answeredThenClosed
        /// Part of a response (or a response that cannot be proved complete, such as a body framed by a close
        /// without close_notify), then the connection or stream ended. `responseBytes` is false when not one
        /// response byte was sent.
        case cut(responseBytes: Bool)
        /// Refused by GOAWAY (HTTP/2): the stream is above the last stream id, never processed or answered.
        case refusedByGoAway

        /// Whether a caller may be handed this response as a success.
        var deliversWholeResponse: Bool {
            switch self {
            case .answered, .answeredThenStray, .answeredThenClosed: return true
            case .cut, .refusedByGoAway: return false
            }
        }
    }

    /// One request the server received (the server's log).
    struct Receipt: Sendable {
        let token: String
        let method: String
        /// The connection it came on (1-based, in accept order; HTTP/1.1 only, else 0), and its place there.
        let connection: Int
        let indexOnConnection: Int
        /// The request body was exactly the bytes its caller's token yields.
        let bodyIntact: Bool
        let fate: Fate
        /// What the server did, in words (for the failure report).
        let plan: String
    }

    /// How one caller's request ended.
    enum Outcome: Sendable {
        case response(status: Int, token: String?, body: [UInt8])
        case failed(String, typed: Bool, timer: Bool)
        /// Did not end within its request timeout plus the margin.
        case hung(String)
    }

    /// One request a caller made, and how it ended.
    struct Call: Sendable {
        let token: String
        let method: String
        /// The body can be sent again (none, or in memory): only such a request may be resent.
        let replayable: Bool
        let streamedBody: Bool
        let cancelled: Bool
        let outcome: Outcome
        let seconds: Double
    }
}

/// The seeded choices for one round: what the server does with each request, as scripts for the scripted servers.
struct ModelServerPlans: Sendable {
    let seed: UInt64

    /// A generator for the `attempt`-th receipt of `token` (a resent request meets a fresh choice).
    private func random(_ token: String, attempt: Int) -> SeededRandom {
        SeededRandom(seed: seed ^ Model.hash(token) &* 31 &+ UInt64(attempt))
    }

    // MARK: HTTP/1.1

    /// The steps for one HTTP/1.1 request, and its fate. `otherToken` names another request, whose response is the
    /// stray one a hostile server injects.
    func http1(
        token: String, method: String, attempt: Int, otherToken: String
    ) -> (steps: [LoopbackHTTPServer.Step], fate: Model.Fate, plan: String) {
        var random = random(token, attempt: attempt)
        let isHead = method == "HEAD"
        let body = Model.responseBody(token)
        let interim = random.next(upperBound: 5) == 0
        let chunked = random.next(upperBound: 3) == 0
        let kind = random.next(upperBound: 20)
        var plan: [String] = []
        // The response, framed by length or chunks, or (kind 3) by the connection's end.
        let framedByClose = kind == 3 && !isHead
        if interim { plan.append("1xx") }
        plan.append(framedByClose ? "framed by close" : chunked ? "chunked" : "length")
        var head = interim ? "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n" : ""
        head += "HTTP/1.1 200 OK\r\n\(Model.tokenHeader): \(token)\r\n"
        var response: [UInt8]
        if framedByClose {
            head += "Connection: close\r\n\r\n"
            response = Array(head.utf8) + body
        } else if chunked {
            head += "Transfer-Encoding: chunked\r\n\r\n"
            response = Array(head.utf8)
            if !isHead {
                var offset = 0
                while offset < body.count {
                    let size = min(body.count - offset, 1 + random.next(upperBound: 3_000))
                    response += Array((String(size, radix: 16) + "\r\n").utf8) + body[offset..<offset + size] + Array("\r\n".utf8)
                    offset += size
                }
                response += Array((random.next(upperBound: 2) == 0 ? "0\r\n\r\n" : "0\r\nx-trailer: t\r\n\r\n").utf8)
            }
        } else {
            head += "Content-Length: \(body.count)\r\n\r\n"
            response = Array(head.utf8) + (isHead ? [] : body)
        }

        let fate: Model.Fate
        var tail: [UInt8] = []
        var close: Bool? = nil  // nil: keep the connection; else close, with close_notify when true
        switch kind {
        case 0..<3:  // stray bytes after the whole response, in the same flush
            let injected = Model.responseBody(otherToken)
            let stray = Array("HTTP/1.1 200 OK\r\n\(Model.tokenHeader): \(otherToken)\r\nContent-Length: \(injected.count)\r\n\r\n".utf8) + injected
            switch random.next(upperBound: isHead ? 5 : 4) {
            case 0: tail = stray; plan.append("stray response")
            case 1: tail = Array("HTTP/1.1 302 Found\r\nLocation: https://evil.example/\r\nSet-Cookie: sess=attacker\r\nX-Splice: ".utf8); plan.append("stray splice")
            case 2: tail = Array(stray.prefix(1 + random.next(upperBound: stray.count - 1))); plan.append("stray prefix \(tail.count)")
            case 3: tail = (0..<1 + random.next(upperBound: 40)).map { _ in UInt8(random.next(upperBound: 256)) }; plan.append("stray garbage")
            default: tail = body.isEmpty ? Array("x".utf8) : body; plan.append("body after HEAD")
            }
            fate = .answeredThenStray
        case 3:  // framed by the connection's end
            let notify = random.next(upperBound: 2) == 0
            close = notify
            plan.append(isHead ? "close after HEAD" : "body to EOF, close_notify \(notify)")
            fate = notify || isHead ? .answeredThenClosed : .cut(responseBytes: true)
        case 4..<8:  // cut anywhere, even before the first byte, then closed
            let cut = random.next(upperBound: 3) == 0 ? 0 : random.next(upperBound: response.count)
            let notify = random.next(upperBound: 2) == 0
            response = Array(response.prefix(cut))
            close = notify
            plan.append("cut at \(cut), close_notify \(notify)")
            fate = .cut(responseBytes: cut > 0)
        case 8:  // answered, then closed
            let notify = random.next(upperBound: 2) == 0
            close = notify
            plan.append("then close, close_notify \(notify)")
            fate = .answeredThenClosed
        default:
            fate = .answered
        }

        // The bytes, cut into records anywhere; some groups of records wait a little (a slow body). The stray
        // bytes go in the same flush as the response's end: they are there before the response is complete.
        let slow = random.next(upperBound: 4) == 0
        if slow { plan.append("slow") }
        var steps: [LoopbackHTTPServer.Step] = []
        if random.next(upperBound: 4) == 0 { steps.append(.delay(.milliseconds(Int64(random.next(upperBound: 20))))) }
        let all = response + tail
        var records: [[UInt8]] = []
        var offset = 0
        while offset < all.count {
            var size = all.count - offset
            if random.next(upperBound: 3) != 0 { size = 1 + random.next(upperBound: min(size, 4_000)) }
            // A flush (with a pause) only inside the response, never between its end and the stray bytes.
            let end = offset + size
            records.append(Array(all[offset..<end]))
            offset = end
            if slow, end < response.count, random.next(upperBound: 3) == 0 {
                steps.append(.send(records))
                steps.append(.delay(.milliseconds(Int64(1 + random.next(upperBound: 15)))))
                records = []
            }
        }
        if !records.isEmpty { steps.append(.send(records)) }
        if let close { steps.append(.close(notify: close)) }
        return (steps, fate, plan.joined(separator: ", "))
    }

    // MARK: HTTP/2

    /// The steps for one HTTP/2 request, and its fate (a GOAWAY step may refuse it after all: the server's
    /// script is told so).
    func http2(
        token: String, method: String, attempt: Int, refused: @escaping @Sendable () -> Void
    ) -> (steps: [LoopbackHTTP2Server.Step], fate: Model.Fate, plan: String) {
        var random = random(token, attempt: attempt)
        let isHead = method == "HEAD"
        let body = isHead ? [] : Model.responseBody(token)
        var steps: [LoopbackHTTP2Server.Step] = []
        var plan: [String] = []
        func jitter() {
            if random.next(upperBound: 4) == 0 { steps.append(.delay(.milliseconds(Int64(random.next(upperBound: 15))))) }
        }
        let kind = random.next(upperBound: 20)
        // Where an ending step goes: 0 before the head, 1 after it, 2 inside the body, 3 after the end.
        var at = random.next(upperBound: 3)
        if at == 2, body.isEmpty { at = 1 }
        var ending: LoopbackHTTP2Server.Step? = nil
        var fate = Model.Fate.answered
        switch kind {
        case 0..<3:
            let codes: [HTTP2ErrorCode] = [.internalError, .cancel, .refusedStream, .enhanceYourCalm, .protocolError]
            let code = codes[random.next(upperBound: codes.count)]
            ending = .reset(code)
            plan.append("RST_STREAM \(code) at \(at)")
            fate = .cut(responseBytes: at > 0)
        case 3..<5:
            let notify = random.next(upperBound: 2) == 0
            ending = .closeConnection(notify: notify)
            plan.append("close at \(at), close_notify \(notify)")
            fate = .cut(responseBytes: at > 0)
        case 5..<8:
            let processThis = random.next(upperBound: 2) == 0
            let codes: [HTTP2ErrorCode] = [.noError, .noError, .enhanceYourCalm, .internalError]
            let code = codes[random.next(upperBound: codes.count)]
            steps.append(.goAway(code, processThis: processThis, refused: refused))
            plan.append("GOAWAY \(code), this stream \(processThis ? "processed" : "refused if it can be")")
        default:
            break
        }
        jitter()
        if ending != nil, at == 0 { steps.append(ending!); return (steps, fate, plan.joined(separator: ", ")) }
        if random.next(upperBound: 5) == 0 {
            steps.append(.interim(status: 103))
            plan.append("103")
        }
        let withLength = random.next(upperBound: 3) != 0
        steps.append(.head(status: 200, headers: [(Model.tokenHeader, token)], contentLength: withLength ? body.count : nil))
        jitter()
        if ending != nil, at == 1 { steps.append(ending!); return (steps, fate, plan.joined(separator: ", ")) }
        var offset = 0
        var cutAt = ending != nil ? random.next(upperBound: max(1, body.count)) : -1
        repeat {
            let size = min(body.count - offset, random.next(upperBound: 2) == 0 ? body.count : 1 + random.next(upperBound: 4_000))
            if cutAt >= 0, offset + size > cutAt {
                steps.append(.data(Array(body[offset..<cutAt]), end: false))
                steps.append(ending!)
                cutAt = -1
                return (steps, fate, plan.joined(separator: ", "))
            }
            steps.append(.data(Array(body[offset..<offset + size]), end: offset + size == body.count))
            offset += size
            jitter()
        } while offset < body.count
        return (steps, fate, plan.joined(separator: ", "))
    }
}

import NIOHPACK
import NIOHTTP1

/// The header blocks of one HTTP/2 request and its response (RFC 9113 §8.3), from and to the HTTP/1-style heads
/// the request state machine speaks.
enum HTTP2Headers {
    /// Fields that belong to one HTTP/1.1 connection and are malformed in HTTP/2 (RFC 9113 §8.2.2); `host` becomes
    /// `:authority`.
    private static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
    ]

    /// Fields whose values the HPACK encoder never puts in its dynamic table (RFC 7541 §7.1.3): a credential
    /// stays out of what a compression side channel could probe.
    private static let neverIndexed: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The request's header block: the pseudo-header fields first, then the regular fields, names lowercased,
    /// without connection-specific fields (and those the `Connection` field names), `TE` only as `trailers`.
    static func request(_ head: HTTPRequestHead) -> HPACKHeaders {
        var block = HPACKHeaders()
        block.reserveCapacity(head.headers.count + 4)
        block.add(name: ":method", value: head.method.rawValue)
        block.add(name: ":scheme", value: "https")
        block.add(name: ":authority", value: head.headers.first(name: "host") ?? "")
        block.add(name: ":path", value: head.uri)
        let named = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        for (name, value) in head.headers {
            let lowercased = name.lowercased()
            if connectionSpecific.contains(lowercased) || named.contains(lowercased) { continue }
            if lowercased == "te" && value.lowercased() != "trailers" { continue }
            block.add(name: lowercased, value: value, indexing: neverIndexed.contains(lowercased) ? .neverIndexed : .indexable)
        }
        return block
    }

    /// The response head a header block carries: its `:status` and its regular fields.
    ///
    /// - Throws: ``HTTPSTransportError/malformedResponse(_:)`` for a block without one three-digit `:status`.
    static func response(_ block: HPACKHeaders) throws(HTTPSTransportError) -> HTTPResponseHead {
        var status: Int?
        var fields: [(String, String)] = []
        fields.reserveCapacity(block.count)
        for (name, value, _) in block {
            if name.utf8.first == UInt8(ascii: ":") {
                guard name == ":status", status == nil else {
                    throw .malformedResponse(.http2PseudoHeader(name))
                }
                guard value.utf8.count == 3, let code = Int(value), code >= 100 else {
                    throw .malformedResponse(.http2InvalidStatus)
                }
                status = code
            } else {
                fields.append((name, value))
            }
        }
        guard let status else { throw .malformedResponse(.http2MissingStatus) }
        return HTTPResponseHead(
            version: .http2, status: HTTPResponseStatus(statusCode: status), headers: HTTPHeaders(fields))
    }

    /// The regular fields of a block (trailers), as HTTP/1-style headers.
    static func regularHeaders(_ block: HPACKHeaders) -> HTTPHeaders {
        HTTPHeaders(block.lazy.filter { $0.name.utf8.first != UInt8(ascii: ":") }.map { ($0.name, $0.value) })
    }
}

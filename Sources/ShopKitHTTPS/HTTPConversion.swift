import Foundation
import HTTPTypes
import NIOHTTP1
import OpenAPIRuntime
import ShopKitCore
import ShopKitPinning

/// Pure conversions between swift-http-types and NIOHTTP1 heads (no I/O, no state).
enum HTTPConversion {
    /// The request head for `request` sent to `target`, with `Host` and body framing headers filled in.
    ///
    /// Framing: a known body length becomes `Content-Length`; an unknown one `Transfer-Encoding: chunked`;
    /// no body gives no framing header, except `Content-Length: 0` for methods that usually carry one.
    /// Framing headers the caller set are replaced, so the head always matches the bytes written.
    ///
    /// `Host` is always the target's canonical name (the one the connection was verified and pinned for),
    /// whatever the request's `authority` or fields say: a request never names another host on a connection
    /// verified for this one. The client never asks for a protocol upgrade (a 101 is the server's fault), so the
    /// caller's `Upgrade` field and an `upgrade` token of its `Connection` field are not sent.
    static func requestHead(
        _ request: HTTPRequest, baseURL: URL, target: RequestTarget, bodyLength: BodyLength
    ) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        for field in request.headerFields {
            switch field.name {
            case .contentLength, .transferEncoding, .upgrade: continue
            case .connection:
                if let kept = withoutUpgradeToken(field.value) { headers.add(name: field.name.rawName, value: kept) }
            default: headers.add(name: field.name.rawName, value: field.value)
            }
        }
        headers.replaceOrAdd(name: "Host", value: target.hostHeader)
        switch bodyLength {
        case .none:
            if [.post, .put, .patch].contains(request.method) { headers.add(name: "Content-Length", value: "0") }
        case .known(let count):
            headers.add(name: "Content-Length", value: String(count))
        case .unknown:
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        return HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue),
            uri: requestURI(path: request.path, baseURL: baseURL), headers: headers)
    }

    /// A `Connection` field's value without its `upgrade` token (nil when nothing is left).
    static func withoutUpgradeToken(_ value: String) -> String? {
        guard value.range(of: "upgrade", options: .caseInsensitive) != nil else { return value }
        let kept = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0.lowercased() != "upgrade" }
        return kept.isEmpty ? nil : kept.joined(separator: ", ")
    }

    /// The request's body framing.
    enum BodyLength: Equatable {
        case none
        case known(Int64)
        case unknown
    }

    /// The origin-form URI: the base URL's path, as encoded in the URL (never decoded: `%2F` stays a byte of a
    /// segment, `%3F` never starts a query), followed by the request's path and query.
    static func requestURI(path: String?, baseURL: URL) -> String {
        var base = baseURL.path(percentEncoded: true)
        if base.hasSuffix("/") { base.removeLast() }
        let path = path ?? "/"
        let uri = base + (path.hasPrefix("/") ? path : "/" + path)
        return uri.isEmpty ? "/" : uri
    }

    /// Checks that `uri` can go on the wire as a request target: visible ASCII only (RFC 9112 §3.2, RFC 3986: a
    /// space, a control byte or a non-ASCII character must be percent-encoded) and no `#` (a fragment is never
    /// sent). The caller's own mistake, found before anything is sent; the message names the byte and where it
    /// is, never the path itself (it may carry a token in its query).
    ///
    /// - Throws: ``HTTPSTransportError/invalidURL(reason:)``.
    static func validateRequestTarget(_ uri: String) throws(HTTPSTransportError) {
        var offset = 0
        for byte in uri.utf8 {
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "#") else {
                let what =
                    switch byte {
                    case 0x20: "a space"
                    case UInt8(ascii: "#"): "'#' (a fragment is never sent)"
                    case 0x80...: "a non-ASCII byte"
                    default: "the control byte 0x" + String(byte, radix: 16, uppercase: true)
                    }
                throw .invalidURL(reason: "the request path has \(what) at byte \(offset); percent-encode it")
            }
            offset += 1
        }
    }

    /// The HTTPTypes response for a NIOHTTP1 response head.
    ///
    /// - Throws: ``HTTPSTransportError/malformedResponse(_:)`` for a field name swift-http-types refuses.
    static func response(_ head: HTTPResponseHead) throws(HTTPSTransportError) -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(head.headers.count)
        for (name, value) in head.headers {
            guard let fieldName = commonName(name) ?? HTTPField.Name(name) else {
                throw .malformedResponse(.invalidHeaderFieldName(name))
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        let status = HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase)
        return HTTPResponse(status: status, headerFields: fields)
    }

    /// Field names common in responses, as swift-http-types' constants.
    static let commonResponseNames: [HTTPField.Name] = [
        .contentType, .contentLength, .date, .server, .connection, .lastModified, .eTag, .acceptRanges,
        .cacheControl, .transferEncoding, .vary, .contentEncoding, .location, .setCookie, .expires, .age,
        .strictTransportSecurity, .wwwAuthenticate, .retryAfter, .xContentTypeOptions,
    ]

    /// ``commonResponseNames``' lowercase bytes, end to end, and where each one starts and how long it is.
    private static let commonBytes: [UInt8] = Array(commonResponseNames.map(\.canonicalName).joined().utf8)
    private static let commonBounds: [(start: Int, count: Int)] = {
        var start = 0
        return commonResponseNames.map { name in
            defer { start += name.canonicalName.utf8.count }
            return (start, name.canonicalName.utf8.count)
        }
    }()

    /// The constant for `name` when it is one of ``commonResponseNames`` (ASCII letters in any case, every
    /// other byte equal), else nil. Such a name needs none of `HTTPField.Name.init?(_:)`'s validation and
    /// lowercasing, which ran for every field of every response. Only letters are folded, so a name that
    /// differs from a common one in any other byte (`content_type`, or a control byte) is never taken for it.
    static func commonName(_ name: String) -> HTTPField.Name? {
        let found = name.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            commonBytes.withUnsafeBufferPointer { common in
                commonBounds.withUnsafeBufferPointer { bounds in
                    candidates: for index in bounds.indices where bounds[index].count == bytes.count {
                        let start = bounds[index].start
                        for offset in 0..<bytes.count {
                            let byte = bytes[offset]
                            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                            if folded != common[start + offset] { continue candidates }
                        }
                        return index
                    }
                    return nil
                }
            }
        }
        guard let index = found ?? nil else { return nil }
        return commonResponseNames[index]
    }

    /// The declared `Content-Length` of a response, if any and valid.
    static func contentLength(_ head: HTTPResponseHead) -> Int? {
        guard let value = head.headers.first(name: "Content-Length") else { return nil }
        // Optional whitespace is spaces and tabs (RFC 9110 §5.6.3); trimmed by hand, not by Foundation's
        // CharacterSet, because this runs for every response.
        var digits = Substring(value)
        while let first = digits.first, first == " " || first == "\t" { digits.removeFirst() }
        while let last = digits.last, last == " " || last == "\t" { digits.removeLast() }
        return Int(digits)
    }

    /// Whether a retry of `request` after a stale-connection failure is safe: the method is idempotent
    /// (RFC 9110 §9.2.2) and the body, if any, can be sent again.
    static func isRetryable(_ request: HTTPRequest, body: HTTPBody?) -> Bool {
        guard request.method.isIdempotent else { return false }
        return body == nil || body?.iterationBehavior == .multiple
    }
}

/// Where a request goes: scheme-checked host and port from the base URL, and the route there. The pool's key:
/// connections are shared only between requests to the same origin by the same route.
struct RequestTarget: Hashable, Sendable {
    /// The server's canonical name (``ServerName``'s text): the one value that the TCP connect, SNI, OpenSSL's
    /// name check, the pin lookup, the pool, the proxy's `CONNECT` line and the `Host` header all use.
    let host: String
    /// The TCP port (443 by default).
    let port: Int
    /// Directly, or through a proxy's tunnel.
    private(set) var route: Route = .direct

    /// The target of `baseURL`, which must be an `https` URL with a host.
    ///
    /// - Throws: ``HTTPSTransportError/invalidURL(reason:)`` for a non-https URL (the transport never
    ///   sends plaintext), and for a host that is no ``ServerName`` (empty, a NUL, CR or LF byte, a name that is
    ///   neither a DNS name nor an IP address in standard form).
    init(baseURL: URL) throws(HTTPSTransportError) {
        guard let host = baseURL.host, !host.isEmpty else {
            throw .invalidURL(reason: "base URL \(baseURL) has no host")
        }
        let port = baseURL.port ?? 443
        guard baseURL.scheme?.lowercased() == "https" else {
            throw .invalidURL(reason: "base URL scheme must be https; this transport never sends plaintext")
        }
        do {
            self.host = try ServerName(host).text
        } catch {
            throw .invalidURL(reason: "base URL has no usable host name: \(error)")
        }
        self.port = port
    }

    init(host: String, port: Int, route: Route = .direct) {
        self.host = host
        self.port = port
        self.route = route
    }

    /// This target reached through `proxy`, unless `proxy` is nil or its ``ProxyConfiguration/noProxy`` rules
    /// match the host and port.
    func routed(through proxy: ProxyConfiguration?) -> RequestTarget {
        guard let proxy, proxy.applies(toHost: host, port: port) else { return self }
        return RequestTarget(host: host, port: port, route: .tunnel(proxy))
    }

    /// The `Host` header value: the port is omitted when it is 443; IPv6 literals get brackets.
    var hostHeader: String {
        // A byte scan: Foundation's String.contains(String) costs a locale-aware search on every request.
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == 443 ? name : "\(name):\(port)"
    }
}

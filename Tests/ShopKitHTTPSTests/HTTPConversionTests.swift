import Foundation
import HTTPTypes
import NIOHTTP1
import OpenAPIRuntime
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

@Suite(.timeLimit(.minutes(3))) struct HTTPConversionTests {
    let base = URL(string: "https://api.example.com/v1/")!

    @Test(arguments: [
        ("https://h.test", "/items?x=1", "/items?x=1"),
        ("https://h.test/v1", "/items", "/v1/items"),
        ("https://h.test/v1/", "/items", "/v1/items"),
        ("https://h.test", "items", "/items"),
        ("https://h.test", "", "/"),
    ])
    func joinsBasePathAndRequestPath(_ base: String, _ path: String, _ expected: String) {
        #expect(HTTPConversion.requestURI(path: path, baseURL: URL(string: base)!) == expected)
    }

    @Test func requestHeadCarriesHostFieldsAndFraming() throws {
        let target = try RequestTarget(baseURL: URL(string: "https://API.example.com:8443/v1")!)
        var request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/orders")
        request.headerFields[.contentType] = "application/json"
        request.headerFields[.contentLength] = "999"  // replaced: framing follows the body actually sent
        let known = HTTPConversion.requestHead(request, baseURL: base, target: target, bodyLength: .known(12))
        #expect(known.method == .POST)
        #expect(known.uri == "/v1/orders")
        #expect(known.headers["Host"] == ["api.example.com:8443"])
        #expect(known.headers["Content-Type"] == ["application/json"])
        #expect(known.headers["Content-Length"] == ["12"])
        let chunked = HTTPConversion.requestHead(request, baseURL: base, target: target, bodyLength: .unknown)
        #expect(chunked.headers["Transfer-Encoding"] == ["chunked"])
        #expect(chunked.headers["Content-Length"].isEmpty)
        let empty = HTTPConversion.requestHead(request, baseURL: base, target: target, bodyLength: .none)
        #expect(empty.headers["Content-Length"] == ["0"])
        let get = HTTPConversion.requestHead(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), baseURL: base,
            target: RequestTarget(host: "::1", port: 443), bodyLength: .none)
        #expect(get.headers["Host"] == ["[::1]"])
        #expect(get.headers["Content-Length"].isEmpty)
    }

    /// `Host` is the target's canonical name whatever the request says; the caller never asks for an upgrade.
    @Test func theHostIsTheTargetsAndNoUpgradeIsAskedFor() throws {
        let target = try RequestTarget(baseURL: URL(string: "https://api.example.com")!)
        var request = HTTPRequest(method: .get, scheme: "http", authority: "evil.example", path: "/")
        request.headerFields[HTTPField.Name("Host")!] = "other.example"
        request.headerFields[.connection] = "Upgrade, close"
        request.headerFields[.upgrade] = "websocket"
        let head = HTTPConversion.requestHead(request, baseURL: base, target: target, bodyLength: .none)
        #expect(head.headers["Host"] == ["api.example.com"])
        #expect(head.headers["Upgrade"].isEmpty)
        #expect(head.headers["Connection"] == ["close"])
        request.headerFields[.connection] = "upgrade"
        #expect(HTTPConversion.requestHead(request, baseURL: base, target: target, bodyLength: .none).headers["Connection"].isEmpty)
    }

    @Test func responseHeadConvertsStatusAndFields() throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Set-Cookie", value: "a=1")
        headers.add(name: "Set-Cookie", value: "b=2")
        let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: 299, reasonPhrase: "Custom"), headers: headers)
        let response = try HTTPConversion.response(head)
        #expect(response.status.code == 299)
        #expect(response.status.reasonPhrase == "Custom")
        #expect(response.headerFields[.contentType] == "text/plain")
        #expect(response.headerFields[values: .setCookie] == ["a=1", "b=2"])
    }

    @Test func commonResponseFieldNamesAreMatchedInAnyCaseAndNothingElseIs() throws {
        for name in HTTPConversion.commonResponseNames {
            for spelling in [name.canonicalName, name.canonicalName.uppercased(), name.rawName] {
                #expect(HTTPConversion.commonName(spelling) == name, "\(spelling)")
            }
        }
        // Only letters are folded: a name one other byte away from a common one is not that one.
        for near in ["content_type", "content\rtype", "content\u{0D}type", "contenu-type", "content-typ", "content-types",
            "date\u{00}", "D\u{C3}\u{A9}te", "content-type "]
        {
            #expect(HTTPConversion.commonName(near) == nil, "\(near.debugDescription)")
        }
        // Through the whole conversion: a control byte is still refused, an unusual token still accepted.
        var headers = HTTPHeaders([("CONTENT-TYPE", "text/plain"), ("content_type", "x")])
        let response = try HTTPConversion.response(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))
        #expect(response.headerFields[.contentType] == "text/plain")
        #expect(response.headerFields[HTTPField.Name("content_type")!] == "x")
        headers = HTTPHeaders([("content\rtype", "x")])
        #expect(throws: HTTPSTransportError.self) {
            try HTTPConversion.response(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))
        }
    }

    @Test func onlyIdempotentReplayableRequestsAreRetryable() {
        func request(_ method: HTTPRequest.Method) -> HTTPRequest {
            HTTPRequest(method: method, scheme: nil, authority: nil, path: "/")
        }
        #expect(HTTPConversion.isRetryable(request(.get), body: nil))
        #expect(HTTPConversion.isRetryable(request(.put), body: HTTPBody("x")))
        #expect(!HTTPConversion.isRetryable(request(.post), body: nil))
        #expect(!HTTPConversion.isRetryable(request(.patch), body: nil))
        let once = HTTPBody(AsyncStream<HTTPBody.ByteChunk> { $0.finish() }, length: .unknown)
        #expect(!HTTPConversion.isRetryable(request(.put), body: once))
    }

    @Test(arguments: ["http://h.test", "ftp://h.test", "https:///nohost"])
    func targetRequiresHTTPS(_ url: String) {
        #expect(throws: HTTPSTransportError.self) { try RequestTarget(baseURL: URL(string: url)!) }
    }

    @Test func targetDefaultsToPort443() throws {
        let target = try RequestTarget(baseURL: URL(string: "https://[::1]/x")!)
        #expect(target == RequestTarget(host: "::1", port: 443))
        #expect(target.hostHeader == "[::1]")
    }
}

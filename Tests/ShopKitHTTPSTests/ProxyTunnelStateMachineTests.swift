import Testing
@testable import ShopKitHTTPS

/// The `CONNECT` exchange without I/O: the request bytes, and each kind of answer from the proxy.
@Suite(.timeLimit(.minutes(3))) struct ProxyTunnelStateMachineTests {
    private func machine() -> ProxyTunnelStateMachine { ProxyTunnelStateMachine(proxyHost: "proxy.test", proxyPort: 3128) }

    @Test func requestUsesTheAuthorityFormAndOptionalCredentials() throws {
        let plain = try ProxyTunnelStateMachine.request(for: RequestTarget(host: "api.shop.test", port: 443), authorization: nil)
        #expect(String(decoding: plain, as: UTF8.self) == "CONNECT api.shop.test:443 HTTP/1.1\r\nHost: api.shop.test:443\r\n\r\n")
        let v6 = try ProxyTunnelStateMachine.request(for: RequestTarget(host: "::1", port: 8443), authorization: "Basic eDp5")
        #expect(
            String(decoding: v6, as: UTF8.self)
                == "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\nProxy-Authorization: Basic eDp5\r\n\r\n")
    }

    /// The CONNECT line sits next to the proxy credentials: a host that is not a canonical server name (a CR or
    /// LF that would start a header of its own, an uppercase or dotted form) is refused where the line is built.
    @Test(arguments: ["localhost\r\nx", "localhost\nX-Injected: 1", "API.shop.test", "127.0.0.1.", "a b", ""])
    func aHostThatIsNotACanonicalServerNameGetsNoConnectLine(_ host: String) {
        #expect(throws: HTTPSTransportError.self) {
            try ProxyTunnelStateMachine.request(for: RequestTarget(host: host, port: 443), authorization: "Basic eDp5")
        }
    }

    @Test func a2xxInPiecesOpensTheTunnel() {
        var machine = machine()
        #expect(machine.received(Array("HTTP/1.0 200 Conn".utf8)) == .wait)
        #expect(machine.received(Array("ection established\r\nProxy-agent: x\r\n\r".utf8)) == .wait)
        #expect(machine.received(Array("\n".utf8)) == .established)
        #expect(machine.closed() == .wait)
    }

    @Test func answersMapToTheProxysOwnErrors() {
        let cases: [(String, ProxyTunnelStateMachine.Action)] = [
            ("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n", .fail(.proxyAuthenticationRequired)),
            ("HTTP/1.0 401 Unauthorized\r\nContent-Length: 3\r\n\r\nno!", .fail(.proxyAuthenticationRequired)),
            ("HTTP/1.1 403 Forbidden\r\nContent-Type: text/html\r\n\r\n<html>", .fail(.proxyRefused(status: 403))),
            ("HTTP/1.1 502 Bad Gateway\r\n\r\n", .fail(.proxyRefused(status: 502))),
            ("SSH-2.0-OpenSSH\r\n\r\n", .fail(.proxyConnectFailed(host: "proxy.test", port: 3128, reason: "its answer to CONNECT is not an HTTP/1.x response"))),
            ("HTTP/1.1 200 OK\r\n\r\nextra", .fail(.proxyConnectFailed(host: "proxy.test", port: 3128, reason: "it sent data after its CONNECT response"))),
        ]
        for (answer, expected) in cases {
            var machine = machine()
            #expect(machine.received(Array(answer.utf8)) == expected, "\(answer)")
        }
    }

    @Test func aCloseBeforeTheAnswerIsProxyClosed() {
        var machine = machine()
        #expect(machine.received(Array("HTTP/1.1 200".utf8)) == .wait)
        #expect(machine.closed() == .fail(.proxyClosed))
    }

    @Test func anEndlessHeadIsRefused() {
        var machine = machine()
        #expect(machine.received(Array("HTTP/1.1 200 OK\r\n".utf8)) == .wait)
        let action = machine.received([UInt8](repeating: UInt8(ascii: "a"), count: ProxyTunnelStateMachine.maxHeadSize))
        #expect(action == .fail(.proxyConnectFailed(host: "proxy.test", port: 3128, reason: "its response head exceeds 16384 bytes")))
    }
}

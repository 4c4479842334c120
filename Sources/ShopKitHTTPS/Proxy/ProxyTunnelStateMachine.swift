import ShopKitPinning

/// The `CONNECT` exchange with a proxy, as a pure state machine: the request bytes to send, then the proxy's
/// response head read byte by byte until the tunnel is open or refused. No I/O; ``ProxyTunnelHandler`` carries
/// the actions out.
struct ProxyTunnelStateMachine {
    /// The largest response head accepted from the proxy.
    static let maxHeadSize = 16 * 1024

    /// What to do after an event.
    enum Action: Equatable {
        /// Nothing yet: wait for more bytes.
        case wait
        /// The tunnel is open: remove the handler and start TLS to the origin.
        case established
        /// The tunnel failed: close the channel and fail with this error.
        case fail(HTTPSTransportError)
    }

    private enum State {
        case awaitingHead([UInt8])
        case done
    }

    private var state = State.awaitingHead([])
    private let proxyHost: String
    private let proxyPort: Int

    /// A machine for a tunnel through the proxy at `proxyHost`:`proxyPort` (named in errors).
    init(proxyHost: String, proxyPort: Int) {
        self.proxyHost = proxyHost
        self.proxyPort = proxyPort
    }

    /// The `CONNECT` request for `target`, with `Proxy-Authorization` when `authorization` is given.
    ///
    /// The request-target is the authority form `host:port` (RFC 9110 §9.3.6), IPv6 literals in brackets. The host
    /// must be a canonical ``ServerName``: this line sits next to the proxy credentials, so a host with a CR, an LF
    /// or anything else no host name has is refused here too, whatever path built the target.
    ///
    /// - Throws: ``HTTPSTransportError/invalidURL(reason:)`` for a host that is not a canonical server name.
    static func request(for target: RequestTarget, authorization: String?) throws(HTTPSTransportError) -> [UInt8] {
        guard (try? ServerName(target.host))?.text == target.host else {
            throw .invalidURL(reason: "the host \(String(reflecting: target.host)) is not a canonical server name; no CONNECT is sent")
        }
        let name = target.host.utf8.contains(UInt8(ascii: ":")) ? "[\(target.host)]" : target.host
        let authority = "\(name):\(target.port)"
        var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { head += "Proxy-Authorization: \(authorization)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    /// Bytes from the proxy arrived.
    mutating func received(_ bytes: some Collection<UInt8>) -> Action {
        guard case .awaitingHead(var head) = state else { return .wait }
        head.append(contentsOf: bytes)
        guard let end = Self.endOfHead(head) else {
            if head.count > Self.maxHeadSize {
                return finish(.fail(failed("its response head exceeds \(Self.maxHeadSize) bytes")))
            }
            state = .awaitingHead(head)
            return .wait
        }
        guard let status = Self.status(head) else {
            return finish(.fail(failed("its answer to CONNECT is not an HTTP/1.x response")))
        }
        switch status {
        case 200..<300:
            // The origin's TLS speaks first: a proxy that sends bytes before it is not a transparent tunnel.
            // (A refusal's body, on the other hand, is expected and ignored.)
            guard end == head.count else { return finish(.fail(failed("it sent data after its CONNECT response"))) }
            return finish(.established)
        // 407 is the standard answer; some proxies (tinyproxy) answer wrong credentials with 401. Either is the
        // proxy's own authentication: the origin has not been reached.
        case 401, 407: return finish(.fail(.proxyAuthenticationRequired))
        case 100..<200: return finish(.fail(failed("it sent an interim \(status) response to CONNECT")))
        default: return finish(.fail(.proxyRefused(status: status)))
        }
    }

    /// The connection closed.
    mutating func closed() -> Action {
        guard case .awaitingHead = state else { return .wait }
        return finish(.fail(.proxyClosed))
    }

    /// The connection to the proxy failed (a socket error, or the TLS of an `https://` proxy).
    mutating func errorCaught(_ reason: String) -> Action {
        guard case .awaitingHead = state else { return .wait }
        return finish(.fail(failed(reason)))
    }

    private mutating func finish(_ action: Action) -> Action {
        state = .done
        return action
    }

    private func failed(_ reason: String) -> HTTPSTransportError {
        .proxyConnectFailed(host: proxyHost, port: proxyPort, reason: reason)
    }

    /// The index just past `\r\n\r\n`, if present.
    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// The status code of a `HTTP/1.x NNN reason` status line.
    private static func status(_ head: [UInt8]) -> Int? {
        let line = head.prefix { $0 != 13 }
        let parts = line.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/1.".utf8)), parts[0].count == 8,
            parts[1].count == 3, parts[1].allSatisfy({ (48...57).contains($0) })
        else { return nil }
        return Int(String(decoding: parts[1], as: UTF8.self))
    }
}

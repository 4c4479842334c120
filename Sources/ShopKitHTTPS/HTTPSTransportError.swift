import ShopKitCore
import ShopKitTLS

/// Why an HTTPS exchange failed outside TLS: the URL, the TCP connection, the HTTP response, a limit or a timer.
///
/// TLS failures (pin mismatch, untrusted chain, hostname, handshake) are ShopKitTLS's `TLSError`; everything
/// else the transport does is this type. `APIError.transport` carries either to the UI.
public enum HTTPSTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The base URL cannot be used: not `https` (the transport never sends plaintext), or no usable host.
    case invalidURL(reason: String)
    /// The TCP connection could not be made.
    case connectFailed(host: String, port: Int, reason: String)
    /// A timer of the transport fired (see ``HTTPSTransport/Timeouts``).
    case timeout(Timeout)
    /// The response body is larger than ``HTTPSTransport/Configuration/maxResponseBodyBytes``.
    case responseBodyTooLarge(limit: Int)
    /// The server's response is not valid HTTP/1.1, or its head is too large.
    case malformedResponse(String)
    /// The connection closed (or was closed) before the response was complete.
    case connectionClosed
    /// HTTP/2 is required (``HTTPSTransport/HTTPVersionPolicy/http2Only``) and the server chose `alpn` instead.
    case http2NotNegotiated(alpn: String?)
    /// The server reset this request's HTTP/2 stream (RST_STREAM, or GOAWAY before the stream was processed);
    /// `code` is the HTTP/2 error code's name. Other streams on the connection go on.
    case streamReset(code: String)
    /// The server's HTTP/2 GOAWAY (with this error code, such as `NO_ERROR` for a graceful shutdown) said it did not
    /// process this request: its stream is above the GOAWAY's last stream id (RFC 9113 §6.8). Nothing happened on
    /// the server; an idempotent request was already sent once more on a new connection, others come back as this.
    case refusedByGoAway(code: String)
    /// The proxy configuration cannot be used (scheme, host, port, or an environment variable): fix it.
    case invalidProxy(reason: String)
    /// The TCP (or, for an `https://` proxy, TLS) connection to the proxy could not be made, or the proxy's
    /// answer to `CONNECT` was not HTTP. `host` and `port` are the proxy's.
    case proxyConnectFailed(host: String, port: Int, reason: String)
    /// The TLS connection to an `https://` proxy failed its own checks (its chain or name, against
    /// ``ProxyConfiguration/trustRoots``) or its handshake. Not the origin's TLS: pins never apply to a proxy.
    case proxyTLSFailed(TLSError)
    /// The proxy answered `CONNECT` with 407 (or 401, as some proxies do): credentials are missing or wrong
    /// (``ProxyConfiguration/credentials``).
    case proxyAuthenticationRequired
    /// The proxy refused to open the tunnel with this status (403: not allowed to reach this origin or port;
    /// 502/503/504: it could not reach the origin).
    case proxyRefused(status: Int)
    /// The proxy closed the connection before answering `CONNECT`.
    case proxyClosed
    /// The request body (the `HTTPBody` passed to `send`) yielded more or fewer bytes than the length it declared.
    /// The caller's fault, not the server's: nothing past the declared length was written, and the connection,
    /// which may hold part of a request, was closed. `yielded` counts the bytes up to the first one too many.
    case requestBodyLengthMismatch(declared: Int64, yielded: Int64)

    /// Which of the transport's timers fired.
    public enum Timeout: String, Sendable, Equatable {
        /// Opening the TCP connection.
        case connect
        /// No response byte for ``HTTPSTransport/Timeouts/idleRead`` after the request was sent.
        case idleRead
        /// The whole request, waiting for a pooled connection included.
        case request
        /// The server did not acknowledge an HTTP/2 PING in time (``HTTPSTransport/Timeouts/http2PingTimeout``):
        /// the connection was dead and is closed.
        case ping
    }

    public var description: String {
        switch self {
        case .invalidURL(let reason): return "invalid URL: \(reason)"
        case .connectFailed(let host, let port, let reason): return "could not connect to \(host):\(port): \(reason)"
        case .timeout(let which): return "\(which.rawValue) timeout"
        case .responseBodyTooLarge(let limit):
            return "response body exceeds the \(limit)-byte limit; raise HTTPSTransport.Configuration.maxResponseBodyBytes if it is expected"
        case .malformedResponse(let why): return "malformed response: \(why)"
        case .connectionClosed: return "connection closed before the response was complete"
        case .requestBodyLengthMismatch(let declared, let yielded):
            return yielded > declared
                ? "the request body yielded more than its declared length of \(declared) bytes; the extra bytes were not sent and the connection was closed: fix the HTTPBody's length"
                : "the request body ended after \(yielded) of its declared \(declared) bytes; the request was not completed and the connection was closed: fix the HTTPBody's length"
        case .http2NotNegotiated(let alpn):
            return "HTTP/2 is required but the server chose \(alpn.map { "'\($0)'" } ?? "no protocol") in ALPN"
        case .streamReset(let code): return "the server reset the HTTP/2 stream (\(code))"
        case .refusedByGoAway(let code):
            return "the server is closing the HTTP/2 connection (GOAWAY, \(code)) and did not process this request; it is safe to send again"
        case .invalidProxy(let reason): return "invalid proxy configuration: \(reason)"
        case .proxyConnectFailed(let host, let port, let reason):
            return "could not open a tunnel through the proxy \(host):\(port): \(reason)"
        case .proxyTLSFailed(let error): return "TLS to the proxy failed: \(error)"
        case .proxyAuthenticationRequired:
            return "the proxy requires authentication (407): set or correct ProxyConfiguration.credentials"
        case .proxyRefused(let status):
            return "the proxy refused to open a tunnel (HTTP \(status)): check that it allows CONNECT to this host and port"
        case .proxyClosed: return "the proxy closed the connection before answering CONNECT"
        }
    }
}

/// Declared here, with the type, so that no product an app links (or leaves out) can change it.
///
/// A URL that cannot be used, a response too large or not HTTP is the same on every attempt; a refused or
/// dropped connection and a timeout may not be.
extension HTTPSTransportError: RetryClassifiableError {
    /// Whether the same request might succeed on another attempt.
    public var isRetryable: Bool {
        switch self {
        case .invalidURL, .responseBodyTooLarge, .malformedResponse, .http2NotNegotiated: return false
        case .connectFailed, .timeout, .connectionClosed: return true
        // A configuration or a credential is wrong, or the proxy's policy forbids the origin: the same next time.
        case .invalidProxy, .proxyAuthenticationRequired: return false
        // The proxy itself may be down or restarting.
        case .proxyConnectFailed, .proxyClosed: return true
        case .proxyTLSFailed(let error): return error.isRetryable
        // 5xx: the proxy could not reach the origin (502 Bad Gateway, 503, 504), which may pass; 4xx is policy.
        case .proxyRefused(let status): return status >= 500
        // A protocol or compression error means the peers disagree on the protocol: another try would too.
        case .streamReset(let code): return !["PROTOCOL_ERROR", "COMPRESSION_ERROR", "FRAME_SIZE_ERROR"].contains(code)
        // Not processed: another connection may take it.
        case .refusedByGoAway: return true
        // The caller's body is wrong: the same body is wrong again.
        case .requestBodyLengthMismatch: return false
        }
    }
}

import ShopKitCore
import ShopKitTLS

/// Why an HTTPS exchange failed outside TLS: the URL, the TCP connection, the HTTP response, a limit or a timer.
///
/// TLS failures (pin mismatch, untrusted chain, hostname, handshake) are ShopKitTLS's `TLSError`; everything
/// else the transport does is this type. `APIError.transport` carries either to the UI.
///
/// A struct, not an enum, so that a new kind of failure is not a breaking change (AsyncHTTPClient's
/// `HTTPClientError` does the same). Compare with `==` (`error == .connectionClosed`), or switch on ``code``,
/// which says what kind of failure it is without its details:
///
/// ```swift
/// switch error.code {
/// case .timeout where error.timeout == .connect: showOffline()
/// case .connectFailed, .timeout: showRetry()
/// case .shutDown: break  // the app is tearing down
/// default: show(error.description)
/// }
/// ```
///
/// The details each kind carries are properties (``timeout``, ``http2ErrorCode``, ``malformedResponseReason``,
/// ``reason``, …), nil for the kinds that do not carry them.
public struct HTTPSTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Today's kinds and their details; not public, so that adding one breaks no caller.
    enum Storage: Sendable, Equatable {
        case invalidURL(reason: String)
        case connectFailed(host: String, port: Int, reason: String)
        case timeout(Timeout)
        case responseBodyTooLarge(limit: Int)
        case malformedResponse(MalformedResponseReason)
        case connectionClosed
        case shutDown
        case http2NotNegotiated(alpn: String?)
        case streamReset(code: HTTP2ErrorCode)
        case refusedByGoAway(code: HTTP2ErrorCode)
        case invalidProxy(reason: String)
        case proxyConnectFailed(host: String, port: Int, reason: String)
        case proxyTLSFailed(TLSError)
        case proxyAuthenticationRequired
        case proxyRefused(status: Int)
        case proxyClosed
        case requestBodyLengthMismatch(declared: Int64, yielded: Int64)
    }

    let storage: Storage

    private init(_ storage: Storage) {
        self.storage = storage
    }

    /// The base URL cannot be used: not `https` (the transport never sends plaintext), or no usable host.
    public static func invalidURL(reason: String) -> Self { Self(.invalidURL(reason: reason)) }
    /// The TCP connection could not be made.
    public static func connectFailed(host: String, port: Int, reason: String) -> Self {
        Self(.connectFailed(host: host, port: port, reason: reason))
    }
    /// A timer of the transport fired (see ``HTTPSTransport/Timeouts``).
    public static func timeout(_ which: Timeout) -> Self { Self(.timeout(which)) }
    /// The response body is larger than ``HTTPSTransport/Configuration/maxResponseBodyBytes``.
    public static func responseBodyTooLarge(limit: Int) -> Self { Self(.responseBodyTooLarge(limit: limit)) }
    /// The server's response is not valid HTTP (HTTP/1.1 or HTTP/2), or its head is too large; `reason` says how.
    public static func malformedResponse(_ reason: MalformedResponseReason) -> Self { Self(.malformedResponse(reason)) }
    /// The connection closed (or was closed) before the response was complete.
    public static let connectionClosed = Self(.connectionClosed)
    /// The transport was shut down (``HTTPSTransport/shutdown()``) before this request got a connection: it sends
    /// no more requests. Not retryable: make a new transport.
    public static let shutDown = Self(.shutDown)
    /// HTTP/2 is required (``HTTPSTransport/HTTPVersionPolicy/http2Only``) and the server chose `alpn` instead.
    public static func http2NotNegotiated(alpn: String?) -> Self { Self(.http2NotNegotiated(alpn: alpn)) }
    /// The server reset this request's HTTP/2 stream (RST_STREAM, or GOAWAY before the stream was processed)
    /// with `code`. Other streams on the connection go on.
    public static func streamReset(code: HTTP2ErrorCode) -> Self { Self(.streamReset(code: code)) }
    /// The server's HTTP/2 GOAWAY (with this error code, such as ``HTTP2ErrorCode/noError`` for a graceful
    /// shutdown) said it did not process this request: its stream is above the GOAWAY's last stream id (RFC 9113
    /// §6.8). Nothing happened on the server; an idempotent request was already sent once more on a new
    /// connection, others come back as this.
    public static func refusedByGoAway(code: HTTP2ErrorCode) -> Self { Self(.refusedByGoAway(code: code)) }
    /// The proxy configuration cannot be used (scheme, host, port, or an environment variable): fix it.
    public static func invalidProxy(reason: String) -> Self { Self(.invalidProxy(reason: reason)) }
    /// The TCP (or, for an `https://` proxy, TLS) connection to the proxy could not be made, or the proxy's
    /// answer to `CONNECT` was not HTTP. `host` and `port` are the proxy's.
    public static func proxyConnectFailed(host: String, port: Int, reason: String) -> Self {
        Self(.proxyConnectFailed(host: host, port: port, reason: reason))
    }
    /// The TLS connection to an `https://` proxy failed its own checks (its chain or name, against
    /// ``ProxyConfiguration/trustRoots``) or its handshake. Not the origin's TLS: pins never apply to a proxy.
    public static func proxyTLSFailed(_ error: TLSError) -> Self { Self(.proxyTLSFailed(error)) }
    /// The proxy answered `CONNECT` with 407 (or 401, as some proxies do): credentials are missing or wrong
    /// (``ProxyConfiguration/credentials``).
    public static let proxyAuthenticationRequired = Self(.proxyAuthenticationRequired)
    /// The proxy refused to open the tunnel with this status (403: not allowed to reach this origin or port;
    /// 502/503/504: it could not reach the origin).
    public static func proxyRefused(status: Int) -> Self { Self(.proxyRefused(status: status)) }
    /// The proxy closed the connection before answering `CONNECT`.
    public static let proxyClosed = Self(.proxyClosed)
    /// The request body (the `HTTPBody` passed to `send`) yielded more or fewer bytes than the length it declared.
    /// The caller's fault, not the server's: nothing past the declared length was written, and the connection,
    /// which may hold part of a request, was closed. `yielded` counts the bytes up to the first one too many.
    public static func requestBodyLengthMismatch(declared: Int64, yielded: Int64) -> Self {
        Self(.requestBodyLengthMismatch(declared: declared, yielded: yielded))
    }

    /// What the error says, for logs and error reports; never a header's value or a token.
    public var description: String {
        switch storage {
        case .invalidURL(let reason): return "invalid URL: \(reason)"
        case .connectFailed(let host, let port, let reason): return "could not connect to \(host):\(port): \(reason)"
        case .timeout(let which): return "\(which) timeout"
        case .responseBodyTooLarge(let limit):
            return "response body exceeds the \(limit)-byte limit; raise HTTPSTransport.Configuration.maxResponseBodyBytes if it is expected"
        case .malformedResponse(let why): return "malformed response: \(why)"
        case .connectionClosed: return "connection closed before the response was complete"
        case .shutDown:
            return "the transport was shut down (HTTPSTransport.shutdown()) and sends no more requests: make a new transport"
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

    /// Two errors are equal when they are the same kind with the same details.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storage == rhs.storage
    }

    /// Hashes the kind and the details (a proxy's `TLSError` included).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        if case .proxyTLSFailed(let error) = storage { return hasher.combine(error) }
        hasher.combine(description)  // a function of the details alone
    }
}

/// Declared here, with the type, so that no product an app links (or leaves out) can change it.
///
/// A URL that cannot be used, a response too large or not HTTP is the same on every attempt; a refused or
/// dropped connection and a timeout may not be.
extension HTTPSTransportError: RetryClassifiableError {
    /// Whether the same request might succeed on another attempt.
    public var isRetryable: Bool {
        switch storage {
        case .invalidURL, .responseBodyTooLarge, .malformedResponse, .http2NotNegotiated: return false
        case .connectFailed, .timeout, .connectionClosed: return true
        // The same transport refuses every request from now on.
        case .shutDown: return false
        // A configuration or a credential is wrong, or the proxy's policy forbids the origin: the same next time.
        case .invalidProxy, .proxyAuthenticationRequired: return false
        // The proxy itself may be down or restarting.
        case .proxyConnectFailed, .proxyClosed: return true
        case .proxyTLSFailed(let error): return error.isRetryable
        // 5xx: the proxy could not reach the origin (502 Bad Gateway, 503, 504), which may pass; 4xx is policy.
        case .proxyRefused(let status): return status >= 500
        // A protocol or compression error means the peers disagree on the protocol: another try would too.
        case .streamReset(let code): return ![.protocolError, .compressionError, .frameSizeError].contains(code)
        // Not processed: another connection may take it.
        case .refusedByGoAway: return true
        // The caller's body is wrong: the same body is wrong again.
        case .requestBodyLengthMismatch: return false
        }
    }
}

import ShopKitTLS

extension HTTPSTransportError {
    /// An HTTP/2 error code (RFC 9113 §7), as a RST_STREAM or GOAWAY frame carries it.
    ///
    /// Compare with the static members (`code == .refusedStream`); a code RFC 9113 does not name keeps its number.
    public struct HTTP2ErrorCode: Sendable, Hashable, CustomStringConvertible {
        /// The code's number on the wire.
        public let rawValue: UInt32

        /// The code with this number on the wire.
        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        /// `NO_ERROR` (0x0): a graceful shutdown.
        public static let noError = Self(rawValue: 0x0)
        /// `PROTOCOL_ERROR` (0x1).
        public static let protocolError = Self(rawValue: 0x1)
        /// `INTERNAL_ERROR` (0x2).
        public static let internalError = Self(rawValue: 0x2)
        /// `FLOW_CONTROL_ERROR` (0x3).
        public static let flowControlError = Self(rawValue: 0x3)
        /// `SETTINGS_TIMEOUT` (0x4).
        public static let settingsTimeout = Self(rawValue: 0x4)
        /// `STREAM_CLOSED` (0x5).
        public static let streamClosed = Self(rawValue: 0x5)
        /// `FRAME_SIZE_ERROR` (0x6).
        public static let frameSizeError = Self(rawValue: 0x6)
        /// `REFUSED_STREAM` (0x7): the server did not process the stream.
        public static let refusedStream = Self(rawValue: 0x7)
        /// `CANCEL` (0x8).
        public static let cancel = Self(rawValue: 0x8)
        /// `COMPRESSION_ERROR` (0x9).
        public static let compressionError = Self(rawValue: 0x9)
        /// `CONNECT_ERROR` (0xa).
        public static let connectError = Self(rawValue: 0xa)
        /// `ENHANCE_YOUR_CALM` (0xb): the server thinks the client is too busy.
        public static let enhanceYourCalm = Self(rawValue: 0xb)
        /// `INADEQUATE_SECURITY` (0xc).
        public static let inadequateSecurity = Self(rawValue: 0xc)
        /// `HTTP_1_1_REQUIRED` (0xd).
        public static let http11Required = Self(rawValue: 0xd)

        private static let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]

        /// The code's name as RFC 9113 §7 writes it (`REFUSED_STREAM`), or its number in hex (`0x1f`).
        public var name: String {
            rawValue < Self.names.count ? Self.names[Int(rawValue)] : "0x\(String(rawValue, radix: 16))"
        }

        /// ``name``.
        public var description: String { name }
    }

    /// The timer that fired, for ``timeout(_:)``; else nil.
    public var timeout: Timeout? {
        if case .timeout(let which) = storage { return which }
        return nil
    }

    /// Why the response is not valid HTTP, for ``malformedResponse(_:)``; else nil.
    public var malformedResponseReason: MalformedResponseReason? {
        if case .malformedResponse(let reason) = storage { return reason }
        return nil
    }

    /// The HTTP/2 error code of ``streamReset(code:)`` or ``refusedByGoAway(code:)``; else nil.
    public var http2ErrorCode: HTTP2ErrorCode? {
        switch storage {
        case .streamReset(let code), .refusedByGoAway(let code): return code
        default: return nil
        }
    }

    /// What was wrong, in words, for ``invalidURL(reason:)``, ``invalidProxy(reason:)``,
    /// ``connectFailed(host:port:reason:)`` and ``proxyConnectFailed(host:port:reason:)``; else nil.
    public var reason: String? {
        switch storage {
        case .invalidURL(let reason), .invalidProxy(let reason), .connectFailed(_, _, let reason),
            .proxyConnectFailed(_, _, let reason):
            return reason
        default: return nil
        }
    }

    /// The host and port that could not be reached: the origin's for ``connectFailed(host:port:reason:)``, the
    /// proxy's for ``proxyConnectFailed(host:port:reason:)``; else nil.
    public var endpoint: (host: String, port: Int)? {
        switch storage {
        case .connectFailed(let host, let port, _), .proxyConnectFailed(let host, let port, _): return (host, port)
        default: return nil
        }
    }

    /// The limit the body exceeded, for ``responseBodyTooLarge(limit:)``; else nil.
    public var responseBodyLimit: Int? {
        if case .responseBodyTooLarge(let limit) = storage { return limit }
        return nil
    }

    /// The protocol the server chose in ALPN instead of `h2` (nil when it chose none), for
    /// ``http2NotNegotiated(alpn:)``; else nil.
    public var negotiatedProtocol: String? {
        if case .http2NotNegotiated(let alpn) = storage { return alpn }
        return nil
    }

    /// The proxy's TLS failure, for ``proxyTLSFailed(_:)``; else nil.
    public var proxyTLSError: TLSError? {
        if case .proxyTLSFailed(let error) = storage { return error }
        return nil
    }

    /// The status the proxy refused the tunnel with, for ``proxyRefused(status:)``; else nil.
    public var proxyStatus: Int? {
        if case .proxyRefused(let status) = storage { return status }
        return nil
    }

    /// The request body's declared length and the bytes it yielded, for
    /// ``requestBodyLengthMismatch(declared:yielded:)``; else nil.
    public var requestBodyLengths: (declared: Int64, yielded: Int64)? {
        if case .requestBodyLengthMismatch(let declared, let yielded) = storage { return (declared, yielded) }
        return nil
    }
}

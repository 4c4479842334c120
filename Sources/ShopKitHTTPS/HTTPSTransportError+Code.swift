extension HTTPSTransportError {
    /// What kind of failure an ``HTTPSTransportError`` is, without its details: switch on it.
    ///
    /// A struct with a static member per kind rather than an enum, so that a new kind is not a breaking change:
    /// a `switch` over it always has a `default`. `case .timeout:` matches by `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case invalidURL, connectFailed, timeout, responseBodyTooLarge, malformedResponse, connectionClosed
            case shutDown, http2NotNegotiated, streamReset, refusedByGoAway, invalidProxy, proxyConnectFailed
            case proxyTLSFailed, proxyAuthenticationRequired, proxyRefused, proxyClosed, requestBodyLengthMismatch
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// ``HTTPSTransportError/invalidURL(reason:)``.
        public static let invalidURL = Self(.invalidURL)
        /// ``HTTPSTransportError/connectFailed(host:port:reason:)``.
        public static let connectFailed = Self(.connectFailed)
        /// ``HTTPSTransportError/timeout(_:)``, whichever timer fired (see ``HTTPSTransportError/timeout``).
        public static let timeout = Self(.timeout)
        /// ``HTTPSTransportError/responseBodyTooLarge(limit:)``.
        public static let responseBodyTooLarge = Self(.responseBodyTooLarge)
        /// ``HTTPSTransportError/malformedResponse(_:)``, whatever the reason.
        public static let malformedResponse = Self(.malformedResponse)
        /// ``HTTPSTransportError/connectionClosed``.
        public static let connectionClosed = Self(.connectionClosed)
        /// ``HTTPSTransportError/shutDown``.
        public static let shutDown = Self(.shutDown)
        /// ``HTTPSTransportError/http2NotNegotiated(alpn:)``.
        public static let http2NotNegotiated = Self(.http2NotNegotiated)
        /// ``HTTPSTransportError/streamReset(code:)``, whatever the HTTP/2 error code.
        public static let streamReset = Self(.streamReset)
        /// ``HTTPSTransportError/refusedByGoAway(code:)``, whatever the HTTP/2 error code.
        public static let refusedByGoAway = Self(.refusedByGoAway)
        /// ``HTTPSTransportError/invalidProxy(reason:)``.
        public static let invalidProxy = Self(.invalidProxy)
        /// ``HTTPSTransportError/proxyConnectFailed(host:port:reason:)``.
        public static let proxyConnectFailed = Self(.proxyConnectFailed)
        /// ``HTTPSTransportError/proxyTLSFailed(_:)``.
        public static let proxyTLSFailed = Self(.proxyTLSFailed)
        /// ``HTTPSTransportError/proxyAuthenticationRequired``.
        public static let proxyAuthenticationRequired = Self(.proxyAuthenticationRequired)
        /// ``HTTPSTransportError/proxyRefused(status:)``.
        public static let proxyRefused = Self(.proxyRefused)
        /// ``HTTPSTransportError/proxyClosed``.
        public static let proxyClosed = Self(.proxyClosed)
        /// ``HTTPSTransportError/requestBodyLengthMismatch(declared:yielded:)``.
        public static let requestBodyLengthMismatch = Self(.requestBodyLengthMismatch)

        /// The kind's name, as its static member spells it (`connectionClosed`).
        public var description: String { base.rawValue }
    }

    /// Which of the transport's timers fired.
    ///
    /// A struct with a static member per timer, so that a new timer is not a breaking change.
    public struct Timeout: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case connect, idleRead, request, ping
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// Opening the TCP connection.
        public static let connect = Self(.connect)
        /// No response byte for ``HTTPSTransport/Timeouts/idleRead`` after the request was sent.
        public static let idleRead = Self(.idleRead)
        /// The whole request, waiting for a pooled connection included.
        public static let request = Self(.request)
        /// The server did not acknowledge an HTTP/2 PING in time (``HTTPSTransport/Timeouts/http2PingTimeout``):
        /// the connection was dead and is closed.
        public static let ping = Self(.ping)

        /// The timer's name, as its static member spells it (`idleRead`).
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is; switch on it, with a `default`, to handle some kinds alike.
    public var code: Code {
        switch storage {
        case .invalidURL: return .invalidURL
        case .connectFailed: return .connectFailed
        case .timeout: return .timeout
        case .responseBodyTooLarge: return .responseBodyTooLarge
        case .malformedResponse: return .malformedResponse
        case .connectionClosed: return .connectionClosed
        case .shutDown: return .shutDown
        case .http2NotNegotiated: return .http2NotNegotiated
        case .streamReset: return .streamReset
        case .refusedByGoAway: return .refusedByGoAway
        case .invalidProxy: return .invalidProxy
        case .proxyConnectFailed: return .proxyConnectFailed
        case .proxyTLSFailed: return .proxyTLSFailed
        case .proxyAuthenticationRequired: return .proxyAuthenticationRequired
        case .proxyRefused: return .proxyRefused
        case .proxyClosed: return .proxyClosed
        case .requestBodyLengthMismatch: return .requestBodyLengthMismatch
        }
    }
}

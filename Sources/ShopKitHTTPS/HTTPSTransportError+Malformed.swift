extension HTTPSTransportError {
    /// Why a response is not valid HTTP: its ``kind``, to match on, and a ``detail`` for some kinds (which rule a
    /// response line broke, a field's name, an HTTP/2 error's type); never a header field's value.
    ///
    /// ```swift
    /// if error.malformedResponseReason?.kind == .headTooLarge { … }
    /// ```
    public struct MalformedResponseReason: Sendable, Hashable, CustomStringConvertible {
        /// What kind of protocol violation the response made. A struct with static members, so that a new kind
        /// is not a breaking change.
        public struct Kind: Sendable, Hashable, CustomStringConvertible {
            private enum Base: String, Sendable, Hashable {
                case invalidHTTP1, headTooLarge, bytesAfterResponseEnd, invalidHeaderFieldName, unexpectedResponsePart
                case unrequestedUpgrade, http2PseudoHeader, http2InvalidStatus, http2MissingStatus
                case http2TrailersWithoutEndStream, http2EndAfterInformational, http2StreamError, http2ConnectionError
            }

            private let base: Base

            private init(_ base: Base) {
                self.base = base
            }

            /// The HTTP/1.1 response breaks a rule of RFC 9112 (its status line, a line ending, its framing);
            /// ``MalformedResponseReason/detail`` says which.
            public static let invalidHTTP1 = Self(.invalidHTTP1)
            /// The response head is larger than the transport accepts.
            public static let headTooLarge = Self(.headTooLarge)
            /// The server sent bytes after its response's end, answering no request.
            public static let bytesAfterResponseEnd = Self(.bytesAfterResponseEnd)
            /// A header field name swift-http-types refuses; ``MalformedResponseReason/detail`` is the name.
            public static let invalidHeaderFieldName = Self(.invalidHeaderFieldName)
            /// A response part came where none can (a body before a head, a second end).
            public static let unexpectedResponsePart = Self(.unexpectedResponsePart)
            /// `101 Switching Protocols`, though the transport never asks for an upgrade.
            public static let unrequestedUpgrade = Self(.unrequestedUpgrade)
            /// An HTTP/2 response header block with a pseudo-header other than one `:status`;
            /// ``MalformedResponseReason/detail`` is its name.
            public static let http2PseudoHeader = Self(.http2PseudoHeader)
            /// An HTTP/2 `:status` that is not a three-digit status code.
            public static let http2InvalidStatus = Self(.http2InvalidStatus)
            /// An HTTP/2 response header block without `:status`.
            public static let http2MissingStatus = Self(.http2MissingStatus)
            /// HTTP/2 trailers without END_STREAM.
            public static let http2TrailersWithoutEndStream = Self(.http2TrailersWithoutEndStream)
            /// An HTTP/2 stream that ended after an informational (1xx) response, with no final one.
            public static let http2EndAfterInformational = Self(.http2EndAfterInformational)
            /// An HTTP/2 protocol error of this request's stream; ``MalformedResponseReason/detail`` names the
            /// swift-nio-http2 error type.
            public static let http2StreamError = Self(.http2StreamError)
            /// An HTTP/2 protocol error of the whole connection, which was closed;
            /// ``MalformedResponseReason/detail`` names the swift-nio-http2 error type.
            public static let http2ConnectionError = Self(.http2ConnectionError)

            /// The kind's name, as its static member spells it (`headTooLarge`).
            public var description: String { base.rawValue }
        }

        /// What kind of protocol violation the response made.
        public let kind: Kind
        /// The rule broken, a field's name or an HTTP/2 error's type, for the kinds that say so; else nil.
        public let detail: String?

        private init(_ kind: Kind, _ detail: String? = nil) {
            self.kind = kind
            self.detail = detail
        }

        /// ``Kind/headTooLarge``.
        public static let headTooLarge = Self(.headTooLarge)
        /// ``Kind/bytesAfterResponseEnd``.
        public static let bytesAfterResponseEnd = Self(.bytesAfterResponseEnd)
        /// ``Kind/unexpectedResponsePart``.
        public static let unexpectedResponsePart = Self(.unexpectedResponsePart)
        /// ``Kind/unrequestedUpgrade``.
        public static let unrequestedUpgrade = Self(.unrequestedUpgrade)
        /// ``Kind/http2InvalidStatus``.
        public static let http2InvalidStatus = Self(.http2InvalidStatus)
        /// ``Kind/http2MissingStatus``.
        public static let http2MissingStatus = Self(.http2MissingStatus)
        /// ``Kind/http2TrailersWithoutEndStream``.
        public static let http2TrailersWithoutEndStream = Self(.http2TrailersWithoutEndStream)
        /// ``Kind/http2EndAfterInformational``.
        public static let http2EndAfterInformational = Self(.http2EndAfterInformational)

        /// ``Kind/invalidHTTP1``: `rule` says which rule of RFC 9112 the response broke.
        package static func invalidHTTP1(_ rule: String) -> Self { Self(.invalidHTTP1, rule) }
        /// ``Kind/invalidHeaderFieldName``.
        package static func invalidHeaderFieldName(_ name: String) -> Self { Self(.invalidHeaderFieldName, name) }
        /// ``Kind/http2PseudoHeader``.
        package static func http2PseudoHeader(_ name: String) -> Self { Self(.http2PseudoHeader, name) }
        /// ``Kind/http2StreamError``: `errorType` is a swift-nio-http2 error's type name, never its description
        /// (some carry a header field's value).
        package static func http2StreamError(_ errorType: String) -> Self { Self(.http2StreamError, errorType) }
        /// ``Kind/http2ConnectionError``: `errorType` as for ``http2StreamError(_:)``.
        package static func http2ConnectionError(_ errorType: String) -> Self { Self(.http2ConnectionError, errorType) }

        /// What was wrong, in words (`HTTP/2 response header block without :status`).
        public var description: String {
            let detail = detail ?? ""
            switch kind {
            case .invalidHTTP1: return detail
            case .headTooLarge: return "response head too large"
            case .bytesAfterResponseEnd: return "the server sent bytes after its response's end"
            case .invalidHeaderFieldName: return "invalid header field name \"\(detail)\""
            case .unexpectedResponsePart: return "unexpected HTTP response part"
            case .unrequestedUpgrade: return "101 Switching Protocols, but the request asked for no upgrade"
            case .http2PseudoHeader: return "HTTP/2 response header block with pseudo-header \(detail)"
            case .http2InvalidStatus: return "HTTP/2 :status is not a status code"
            case .http2MissingStatus: return "HTTP/2 response header block without :status"
            case .http2TrailersWithoutEndStream: return "HTTP/2 trailers without END_STREAM"
            case .http2EndAfterInformational: return "HTTP/2 stream ended after an informational response"
            case .http2StreamError: return "HTTP/2 stream error: \(detail)"
            case .http2ConnectionError: return "HTTP/2 connection error: \(detail)"
            default: return kind.description + (self.detail.map { ": \($0)" } ?? "")
            }
        }
    }
}

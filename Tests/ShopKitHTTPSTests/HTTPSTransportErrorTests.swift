import NIOHTTP2
import Testing
import TestSupport
@testable import ShopKitHTTPS
import ShopKitTLS

/// `HTTPSTransportError` as callers use it: switch on its code, compare it, read its typed details; and the
/// shut-down transport's own error.
@Suite(.timeLimit(.minutes(2))) struct HTTPSTransportErrorTests {
    /// A caller's switch: kinds match by `==`, with a `default` for kinds added later.
    static func handling(_ error: HTTPSTransportError) -> String {
        switch error.code {
        case .timeout where error.timeout == .connect: return "offline"
        case .connectFailed, .timeout, .connectionClosed: return "retry"
        case .shutDown: return "tearing down"
        case .malformedResponse, .streamReset: return "server fault"
        default: return "other"
        }
    }

    @Test func callersSwitchOnTheCode() {
        #expect(Self.handling(.timeout(.connect)) == "offline")
        #expect(Self.handling(.timeout(.request)) == "retry")
        #expect(Self.handling(.connectFailed(host: "a", port: 443, reason: "refused")) == "retry")
        #expect(Self.handling(.shutDown) == "tearing down")
        #expect(Self.handling(.malformedResponse(.headTooLarge)) == "server fault")
        #expect(Self.handling(.streamReset(code: .cancel)) == "server fault")
        #expect(Self.handling(.proxyClosed) == "other")
        // A bare static member matches the error itself by `==` too.
        let error = HTTPSTransportError.connectionClosed
        switch error {
        case .connectionClosed: break
        default: Issue.record("\(error) must match .connectionClosed")
        }
    }

    @Test func equalityAndHashingTakeTheDetails() {
        #expect(HTTPSTransportError.timeout(.request) == .timeout(.request))
        #expect(HTTPSTransportError.timeout(.request) != .timeout(.idleRead))
        #expect(HTTPSTransportError.streamReset(code: .cancel) != .refusedByGoAway(code: .cancel))
        #expect(HTTPSTransportError.connectionClosed != .shutDown)
        #expect(HTTPSTransportError.malformedResponse(.invalidHeaderFieldName("a")) != .malformedResponse(.invalidHeaderFieldName("b")))
        let set: Set<HTTPSTransportError> = [
            .timeout(.request), .timeout(.request), .proxyTLSFailed(.handshakeTimeout), .proxyTLSFailed(.handshakeTimeout),
            .proxyTLSFailed(.connectionClosed),
        ]
        #expect(set.count == 3)
    }

    @Test func detailsAreTypedProperties() {
        let reset = HTTPSTransportError.streamReset(code: .refusedStream)
        #expect(reset.http2ErrorCode == .refusedStream && reset.http2ErrorCode?.rawValue == 7)
        #expect(HTTPSTransportError.refusedByGoAway(code: .noError).http2ErrorCode == .noError)
        #expect(HTTPSTransportError.timeout(.ping).timeout == .ping)
        #expect(reset.timeout == nil && reset.malformedResponseReason == nil && reset.reason == nil)
        let malformed = HTTPSTransportError.malformedResponse(.http2StreamError("FlowControlViolation"))
        #expect(malformed.malformedResponseReason?.kind == .http2StreamError)
        #expect(malformed.malformedResponseReason?.detail == "FlowControlViolation")
        let failed = HTTPSTransportError.connectFailed(host: "shop.example", port: 8443, reason: "refused")
        #expect(failed.endpoint?.host == "shop.example" && failed.endpoint?.port == 8443 && failed.reason == "refused")
        #expect(HTTPSTransportError.proxyRefused(status: 403).proxyStatus == 403)
        #expect(HTTPSTransportError.responseBodyTooLarge(limit: 9).responseBodyLimit == 9)
        #expect(HTTPSTransportError.http2NotNegotiated(alpn: "http/1.1").negotiatedProtocol == "http/1.1")
        #expect(HTTPSTransportError.proxyTLSFailed(.handshakeTimeout).proxyTLSError == .handshakeTimeout)
        #expect(HTTPSTransportError.requestBodyLengthMismatch(declared: 4, yielded: 2).requestBodyLengths?.yielded == 2)
    }

    /// The messages are today's, with the HTTP/2 code's RFC 9113 name in them.
    @Test func descriptionsNameTheDetails() {
        #expect(HTTPSTransportError.streamReset(code: .internalError).description == "the server reset the HTTP/2 stream (INTERNAL_ERROR)")
        #expect(HTTPSTransportError.refusedByGoAway(code: .noError).description.contains("(GOAWAY, NO_ERROR)"))
        #expect(HTTPSTransportError.HTTP2ErrorCode(rawValue: 0x1f).description == "0x1f")
        #expect(HTTPSTransportError.malformedResponse(.http2MissingStatus).description
            == "malformed response: HTTP/2 response header block without :status")
        #expect(HTTPSTransportError.malformedResponse(.invalidHTTP1("the status line is not HTTP/1.x")).description
            == "malformed response: the status line is not HTTP/1.x")
        #expect(HTTPSTransportError.timeout(.idleRead).description == "idleRead timeout")
        #expect(HTTPSTransportError.Code.requestBodyLengthMismatch.description == "requestBodyLengthMismatch")
    }

    /// Every swift-nio-http2 code maps to the public code of the same number and RFC 9113 name.
    @Test func nioCodesMapByNumber() {
        let named: [(NIOHTTP2.HTTP2ErrorCode, HTTPSTransportError.HTTP2ErrorCode, String)] = [
            (.noError, .noError, "NO_ERROR"), (.protocolError, .protocolError, "PROTOCOL_ERROR"),
            (.internalError, .internalError, "INTERNAL_ERROR"), (.flowControlError, .flowControlError, "FLOW_CONTROL_ERROR"),
            (.settingsTimeout, .settingsTimeout, "SETTINGS_TIMEOUT"), (.streamClosed, .streamClosed, "STREAM_CLOSED"),
            (.frameSizeError, .frameSizeError, "FRAME_SIZE_ERROR"), (.refusedStream, .refusedStream, "REFUSED_STREAM"),
            (.cancel, .cancel, "CANCEL"), (.compressionError, .compressionError, "COMPRESSION_ERROR"),
            (.connectError, .connectError, "CONNECT_ERROR"), (.enhanceYourCalm, .enhanceYourCalm, "ENHANCE_YOUR_CALM"),
            (.inadequateSecurity, .inadequateSecurity, "INADEQUATE_SECURITY"),
            (.http11Required, .http11Required, "HTTP_1_1_REQUIRED"),
        ]
        for (nio, code, name) in named {
            #expect(nio.transportCode == code && code.name == name, "\(name)")
        }
    }

    @Test func retryClassificationOfTheTypedCodes() {
        #expect(HTTPSTransportError.streamReset(code: .refusedStream).isRetryable)
        #expect(HTTPSTransportError.streamReset(code: .cancel).isRetryable)
        for code: HTTPSTransportError.HTTP2ErrorCode in [.protocolError, .compressionError, .frameSizeError] {
            #expect(!HTTPSTransportError.streamReset(code: code).isRetryable, "\(code)")
        }
        #expect(HTTPSTransportError.refusedByGoAway(code: .noError).isRetryable)
        #expect(!HTTPSTransportError.shutDown.isRetryable)
    }

    /// Defect: a request on a transport after `shutdown()` failed as `connectionClosed`, "closed before the
    /// response was complete" (retryable), though nothing was sent and nothing ever will be.
    @Test func requestAfterShutdownFailsAsShutDown() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = makeTransport()
        _ = try await transport.fetch(baseURL: server.baseURL)
        await transport.shutdown()
        do {
            _ = try await transport.fetch(baseURL: server.baseURL)
            Issue.record("a shut-down transport must refuse the request")
        } catch {
            #expect(error as? HTTPSTransportError == .shutDown)
            #expect("\(error)".contains("the transport was shut down"))
            #expect((error as? HTTPSTransportError)?.isRetryable == false)
        }
        #expect(server.counts.requests == 1)
        await server.stop()
    }
}

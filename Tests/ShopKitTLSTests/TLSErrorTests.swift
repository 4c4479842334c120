import Foundation
import ShopKitPinning
import ShopKitTLS
import Testing

/// `TLSError` as callers use it: switch on its code, compare and hash it, read its typed details; the messages and
/// retry classes are today's.
@Suite struct TLSErrorTests {
    static let report = PinFailureReport(
        host: "shop.example", chain: VerifiedChain(verifiedCertificates: []), configuredPins: [],
        date: Date(timeIntervalSince1970: 0))
    static let expiry = Date(timeIntervalSince1970: 1_700_000_000)

    /// A caller's switch: kinds match by `==`, with a `default` for kinds added later.
    static func handling(_ error: TLSError) -> String {
        switch error.code {
        case .pinMismatch, .hostNotPinned, .pinSetExpired: return "pins"
        case .handshakeFailed, .handshakeTimeout, .connectionClosed: return "retry"
        case .clientCertificateRequired: return "ask for a certificate"
        default: return "other"
        }
    }

    @Test func callersSwitchOnTheCode() {
        #expect(Self.handling(.pinMismatch(Self.report)) == "pins")
        #expect(Self.handling(.hostNotPinned(host: "a", patterns: [])) == "pins")
        #expect(Self.handling(.handshakeTimeout) == "retry")
        #expect(Self.handling(.handshakeFailed(reason: "bad record mac")) == "retry")
        #expect(Self.handling(.clientCertificateRequired(acceptedIssuers: [])) == "ask for a certificate")
        #expect(Self.handling(.untrustedChain(reason: "self-signed", verifyCode: 18)) == "other")
        #expect(Self.handling(.hostnameMismatch(host: "a")) == "other")
        // A bare static member matches the error itself by `==` too.
        let error = TLSError.connectionClosed
        switch error {
        case .connectionClosed: break
        default: Issue.record("\(error) must match .connectionClosed")
        }
    }

    @Test func equalityAndHashingTakeTheDetails() {
        #expect(TLSError.handshakeFailed(reason: "a") == .handshakeFailed(reason: "a"))
        #expect(TLSError.handshakeFailed(reason: "a") != .handshakeFailed(reason: "b"))
        #expect(TLSError.handshakeFailed(reason: "a") != .clientCertificateRejected(reason: "a"))
        #expect(TLSError.untrustedChain(reason: "x", verifyCode: 18) != .untrustedChain(reason: "x", verifyCode: 20))
        #expect(TLSError.handshakeTimeout != .connectionClosed)
        #expect(TLSError.pinMismatch(Self.report) == .pinMismatch(Self.report))
        let other = PinFailureReport(
            host: "shop.example", chain: VerifiedChain(verifiedCertificates: []), configuredPins: [],
            date: Date(timeIntervalSince1970: 1))
        #expect(TLSError.pinMismatch(Self.report) != .pinMismatch(other))
        let set: Set<TLSError> = [
            .handshakeTimeout, .handshakeTimeout, .pinMismatch(Self.report), .pinMismatch(Self.report),
            .hostnameMismatch(host: "a"), .hostnameMismatch(host: "b"),
        ]
        #expect(set.count == 4)
    }

    @Test func detailsAreTypedProperties() {
        let mismatch = TLSError.pinMismatch(Self.report)
        #expect(mismatch.pinFailureReport == Self.report && mismatch.host == "shop.example")
        #expect(mismatch.reason == nil && mismatch.verifyCode == nil && mismatch.acceptedIssuers == nil)
        let unpinned = TLSError.hostNotPinned(host: "a.example", patterns: ["*.example.com"])
        #expect(unpinned.host == "a.example" && unpinned.pinnedHostPatterns == ["*.example.com"])
        #expect(unpinned.pinFailureReport == nil && unpinned.expiredPinSet == nil)
        let expired = TLSError.pinSetExpired(host: "a.example", pattern: "*.example", expiration: Self.expiry)
        #expect(expired.host == "a.example" && expired.expiredPinSet?.pattern == "*.example")
        #expect(expired.expiredPinSet?.expiration == Self.expiry && expired.pinnedHostPatterns == nil)
        let untrusted = TLSError.untrustedChain(reason: "certificate has expired", verifyCode: 10)
        #expect(untrusted.reason == "certificate has expired" && untrusted.verifyCode == 10 && untrusted.host == nil)
        #expect(TLSError.hostnameMismatch(host: "b.example").host == "b.example")
        #expect(TLSError.handshakeFailed(reason: "no shared cipher").reason == "no shared cipher")
        #expect(TLSError.clientCertificateRejected(reason: "unknown ca").reason == "unknown ca")
        #expect(TLSError.clientCertificateRequired(acceptedIssuers: ["CN=Client CA"]).acceptedIssuers == ["CN=Client CA"])
        #expect(TLSError.clientCertificateRequired(acceptedIssuers: []).acceptedIssuers == [])
        #expect(TLSError.handshakeTimeout.reason == nil && TLSError.connectionClosed.host == nil)
    }

    /// The messages are today's, word for word.
    @Test func descriptionsAreUnchanged() {
        #expect(TLSError.pinMismatch(Self.report).description == Self.report.description)
        #expect(TLSError.hostNotPinned(host: "a.example", patterns: ["*.example.com", "b.example"]).description
            == "no pin set covers a.example and unpinned hosts are refused (the pin sets cover *.example.com, b.example): "
            + "add a pin set for a.example or fix the pattern that should cover it")
        #expect(TLSError.hostNotPinned(host: "a", patterns: []).description.contains("(no pin sets are configured)"))
        #expect(TLSError.pinSetExpired(host: "a.example", pattern: "*.example", expiration: Self.expiry).description
            == "the pin set *.example expired at 2023-11-14T22:13:20Z and no live pin set covers a.example; "
            + "unpinned hosts are refused: renew the pin set (new pins and expiration) for a.example")
        #expect(TLSError.untrustedChain(reason: "self-signed certificate", verifyCode: 18).description
            == "server certificate chain is not trusted: self-signed certificate (18)")
        #expect(TLSError.hostnameMismatch(host: "a.example").description == "server certificate does not cover a.example")
        #expect(TLSError.handshakeFailed(reason: "x").description == "TLS handshake failed: x")
        #expect(TLSError.handshakeTimeout.description == "handshake timeout")
        #expect(TLSError.connectionClosed.description == "the TLS connection was closed")
        #expect(TLSError.clientCertificateRequired(acceptedIssuers: ["CN=A", "CN=B"]).description
            == "the server requires a client certificate issued by CN=A; CN=B, and none is configured: "
            + "set TLSClientConfiguration.clientIdentity")
        #expect(TLSError.clientCertificateRequired(acceptedIssuers: []).description
            == "the server requires a client certificate, and none is configured: set TLSClientConfiguration.clientIdentity")
        #expect(TLSError.clientCertificateRejected(reason: "expired").description == "client certificate not accepted: expired")
        #expect(TLSError.Code.clientCertificateRejected.description == "clientCertificateRejected")
    }

    @Test func retryClassesAreUnchanged() {
        let never: [TLSError] = [
            .pinMismatch(Self.report), .hostNotPinned(host: "a", patterns: []),
            .pinSetExpired(host: "a", pattern: "a", expiration: Self.expiry), .untrustedChain(reason: "x", verifyCode: 1),
            .hostnameMismatch(host: "a"), .clientCertificateRequired(acceptedIssuers: []),
            .clientCertificateRejected(reason: "x"),
        ]
        #expect(never.allSatisfy { !$0.isRetryable })
        let maybe: [TLSError] = [.handshakeFailed(reason: "x"), .handshakeTimeout, .connectionClosed]
        #expect(maybe.allSatisfy { $0.isRetryable })
    }
}

import ShopKitOpenSSL
import ShopKitPinning

/// What a client connection established: fired inside `TLSHandshakeCompleted` only after OpenSSL accepted the
/// chain and the hostname and the pin check allowed the connection.
public struct TLSConnectionInfo: Sendable {
    /// The host the certificate was checked against (and pins looked up by).
    public let host: String
    /// The port connected to.
    public let port: Int
    /// The negotiated protocol, e.g. `TLSv1.3`.
    public let protocolVersion: String
    /// The negotiated cipher suite.
    public let cipherSuite: String
    /// Whether the key exchange has forward secrecy (false only for static RSA, which a client offers when
    /// `TLSClientConfiguration.allowsStaticRSAKeyExchange` is set).
    public var forwardSecrecy: Bool = true
    /// The ALPN protocol agreed on (`http/1.1`), if the server took part in ALPN.
    public let alpnProtocol: String?
    /// The chain OpenSSL verified (on a resumed session: the one verified by the handshake that made it).
    public let verifiedChain: VerifiedChain
    /// The chain the server sent, for diagnostics only (nil on a resumed session). Package access: the
    /// presented chain is never a basis for trust, and its type is ShopKit's own OpenSSL wrapper.
    package let presentedChain: PresentedChain?
    /// The pin verdict of this connection (re-evaluated on resumption).
    public let pinVerdict: PinVerdict
    /// Whether this connection resumed a cached session.
    public let resumed: Bool
    /// The Certificate Transparency evaluation of the verified chain (its SCTs, the verdict, the mode); nil when
    /// CT is disabled for the host.
    public internal(set) var certificateTransparency: CTEvaluation? = nil
    /// The server's request for a client certificate and the answer (nil when none was asked, or on resumption).
    package internal(set) var clientCertificateRequest: ClientCertificateRequest? = nil
}

/// User inbound event fired by the client handler (``TLSClientContext/makeHandler(host:port:)``) when the
/// connection may carry data: chain, hostname and pins all passed. Writes made earlier were buffered; they are sent just before this event, so they keep
/// their order ahead of anything written in response to it.
public struct TLSHandshakeCompleted: Sendable {
    /// What was negotiated and verified.
    public let info: TLSConnectionInfo
    /// The generation of the context's pinning policy the connection was checked under (see
    /// `TLSClientContext.stillTrusts(host:chain:verifiedUnder:)`).
    let pinningGeneration: Int
}

/// User inbound event fired by a server `TLSHandler` after its handshake.
package struct TLSServerHandshakeCompleted: Sendable {
    /// Whether the client resumed a session.
    package let resumed: Bool
    /// The negotiated protocol, e.g. `TLSv1.3`.
    package let protocolVersion: String
    /// The ALPN protocol agreed on, if any.
    package let alpnProtocol: String?
}

/// User inbound event fired when the peer closed the TCP connection without a TLS close_notify after the
/// handshake. Data received until then was authentic, but may be truncated: rely on HTTP framing.
public struct TLSUncleanShutdown: Sendable, Equatable {
    package init() {}
}

/// User inbound event fired by a client `TLSHandler` just before the `TLSError` of a failed handshake, for
/// diagnostics such as `pin-check`: the certificates the server sent and OpenSSL's verify result.
///
/// - Warning: The presented chain is *not* verified. It is a `PresentedChain`, which the pin check never
///   accepts; show it to people, never base a trust decision on it.
package struct TLSHandshakeFailureDetails: Sendable {
    /// The chain the server sent, if it got that far.
    package let presentedChain: PresentedChain?
    /// OpenSSL's verify result (`X509_V_OK` when the failure was not about the chain).
    package let verifyResult: VerifyResult
    /// The server's request for a client certificate and the answer, if it asked before the failure.
    package internal(set) var clientCertificateRequest: ClientCertificateRequest? = nil
    /// The cipher suite the server chose, when the handshake got past its ServerHello (nil before).
    package internal(set) var cipherSuite: String? = nil
    /// Set when an enforced pin set refused the chain inside OpenSSL's verification (the failure is then
    /// `TLSError.pinMismatch`), or strict hosts refused a host no live set covers (`TLSError.hostNotPinned`,
    /// `TLSError.pinSetExpired`): the chain OpenSSL verified and what was negotiated, for a report that shows them
    /// although the handshake ended before the client's certificate was sent.
    package internal(set) var pinRefusal: PinRefusal? = nil

    /// The verified chain an enforced pin set refused, and what the handshake had negotiated by then.
    package struct PinRefusal: Sendable {
        /// The chain OpenSSL verified (trusted root, hostname checked), which matched no pin.
        package let verifiedChain: VerifiedChain
        /// The negotiated protocol, e.g. `TLSv1.3`.
        package let protocolVersion: String
        /// The negotiated cipher suite.
        package let cipherSuite: String
        /// The ALPN protocol the server chose, if any.
        package let alpnProtocol: String?
    }
}

import Logging
import ShopKitPinning

/// How a ShopKit client verifies servers: trust anchors, protocol floor and pins.
///
/// Built once and shared: every connection made with one configuration shares one OpenSSL `SSL_CTX`.
public struct TLSConfiguration: Sendable {
    /// Where trust anchors come from.
    public enum TrustRoots: Sendable, Hashable {
        /// The system's default verify paths (Debian's `/etc/ssl/certs`).
        case system
        /// PEM certificates given by the caller, either replacing or added to the system store.
        case pem(String, addingToSystem: Bool)
    }

    /// The oldest protocol version accepted.
    public enum MinimumVersion: Sendable, Hashable {
        case tls12
        case tls13
    }

    /// Trust anchors. Default: the system store.
    public var trustRoots: TrustRoots
    /// The pins, checked on the verified chain after OpenSSL's chain and hostname checks pass.
    public var pinning: PinningPolicy
    /// Protocol floor. Default: TLS 1.2.
    public var minimumVersion: MinimumVersion
    /// Receives report-only and expired-set failure reports.
    public var pinFailureReporter: (any PinFailureReporter)?
    /// Where ShopKit logs which host, which pin matched, expiry and report-only events (never a token or a body).
    public var logger: Logger
    /// Whether new connections offer a cached session (default `true`).
    ///
    /// Resumption skips the certificate exchange; a resumed connection is still held to the pin verdict of
    /// the full handshake that made the session (sessions are bound to host, port, trust and pin set). Turn
    /// it off to make every connection a full handshake, e.g. to measure handshakes or to force fresh chain
    /// verification on each connection.
    public var sessionResumption: Bool

    public init(
        trustRoots: TrustRoots = .system,
        pinning: PinningPolicy = PinningPolicy(),
        minimumVersion: MinimumVersion = .tls12,
        pinFailureReporter: (any PinFailureReporter)? = nil,
        logger: Logger = Logger(label: "ShopKitTLS"),
        sessionResumption: Bool = true
    ) {
        self.trustRoots = trustRoots
        self.pinning = pinning
        self.minimumVersion = minimumVersion
        self.pinFailureReporter = pinFailureReporter
        self.logger = logger
        self.sessionResumption = sessionResumption
    }
}

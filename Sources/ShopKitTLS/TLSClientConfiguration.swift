import Foundation
import Logging
import ShopKitPinning

/// How a ShopKit client verifies servers (trust anchors, protocol floor and pins) and which client certificate it
/// offers.
///
/// Built once and shared: every connection made with one configuration shares one OpenSSL `SSL_CTX`.
/// (Named `TLSClientConfiguration`, not `TLSClientConfiguration`, so that it never collides with swift-nio-ssl's type
/// in a file that imports both.)
///
/// Pins come from `PinSet` values in code (`pin-check --print-config` prints them for a server) or from a pins
/// file read with ShopKitPinning's `PinsFile` (the format `pin-check --pins-file` reads).
public struct TLSClientConfiguration: Sendable {
    /// Where trust anchors come from.
    public enum TrustRoots: Sendable, Hashable {
        /// The system's default verify paths (Debian's `/etc/ssl/certs`).
        case system
        /// PEM certificates given by the caller, either replacing or added to the system store.
        case pem(String, addingToSystem: Bool)

        /// The PEM certificates in the file at `path` (a CA bundle), replacing or added to the system store.
        ///
        /// - Throws: ``TLSContextError`` of kind `.trustAnchors` when the file cannot be read; whether its
        ///   contents load is checked when the transport (its TLS context) is built.
        public static func pemFile(_ path: String, addingToSystem: Bool = false) throws(TLSContextError) -> TrustRoots {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TLSContextError(message: "cannot read the CA file \(path): check that it exists and is readable", kind: .trustAnchors)
            }
            return .pem(String(decoding: data, as: UTF8.self), addingToSystem: addingToSystem)
        }
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
    /// Receives a failure report for every pin mismatch: enforced (the connection is refused), report-only
    /// and expired sets. ShopKitHTTPS's `HTTPPinFailureReporter` POSTs them to TrustKit-compatible collectors.
    public var pinFailureReporter: (any PinFailureReporter)?
    /// Certificate Transparency: the SCTs every publicly trusted chain must carry, checked on the verified chain
    /// against a CT log list (Chrome's CT policy), per host pattern `disabled`, `reportOnly` or `enforced`.
    ///
    /// Default: report-only for every host, with the package's bundled log list: a chain that is not compliant
    /// connects, is logged at `warning` and reported through ``pinFailureReporter`` (an RFC 9163 report). Chains
    /// that end at a root outside the public roots (a company CA, the tests' own) are exempt, as browsers exempt
    /// locally added roots. See the TransportGuarantees article for what OpenSSL checks and what ShopKit adds.
    public var certificateTransparency: CertificateTransparencyPolicy = CertificateTransparencyPolicy()
    /// Where ShopKit logs (never a token, a key or a body). Default: no logging at all (unless the umbrella's
    /// `ShopKitFactory.makeAPIClient(baseURL:configuration:https:)` fills it with `ShopKitConfiguration.logger`).
    ///
    /// Levels: per-connection events (which pin matched, a reused session, a refused pin, which is also thrown)
    /// at `debug`; a pin set without a key that is not deployed yet, and a host that no pin set covers, at
    /// `notice`, once per host and transport;
    /// report-only and expired-set mismatches, which connect anyway, at `warning`.
    public var logger: Logger {
        get { explicitLogger ?? Self.disabledLogger }
        set { explicitLogger = newValue }
    }
    /// The logger the app gave (in `init` or by setting ``logger``); nil when none was given.
    private var explicitLogger: Logger?
    /// Whether the app gave a logger (package access: the client's one logging knob fills it only when not).
    package var hasLogger: Bool { explicitLogger != nil }
    /// Whether new connections offer a cached session (default `true`).
    ///
    /// Resumption skips the certificate exchange; a resumed connection is still held to the pin verdict of
    /// the full handshake that made the session (sessions are bound to host, port, trust, pin set and client
    /// identity). Turn it off to make every connection a full handshake, e.g. to measure handshakes or to force
    /// fresh chain verification on each connection.
    public var sessionResumption: Bool
    /// How long a session may be resumed, counted from the full handshake that verified its chain (default 24 h).
    ///
    /// A resumed connection runs no chain verification and receives new tickets, which OpenSSL dates afresh; the
    /// age still counts from the first full handshake, so a client that reconnects often verifies the server's
    /// chain again at least this often. A session is also never offered past the earliest `notAfter` of its cached
    /// verified chain (RFC 8446 §4.6.1), whatever this says.
    public var maximumSessionAge: Duration = .seconds(24 * 60 * 60)
    /// Whether TLS 1.2 may use static RSA key exchange (`kRSA`: `AES128-GCM-SHA256`, `AES128-SHA256`, …), for legacy
    /// servers that offer nothing else. Default `false`: TLS 1.2 offers ECDHE key exchange with AEAD ciphers only
    /// (AES-GCM, ChaCha20-Poly1305), as Mozilla's "intermediate" profile without its DHE suites. TLS 1.3 is
    /// unaffected (all its suites have forward secrecy).
    ///
    /// - Warning: Static RSA has no forward secrecy: whoever obtains the server's private key later can decrypt
    ///   every recorded session. Turn it on only for a server you cannot get upgraded.
    public var allowsStaticRSAKeyExchange: Bool = false
    /// Caps the protocol version offered (nil: no cap). Package access: only `pin-check`'s diagnosis uses it, to ask
    /// a server that failed over TLS 1.3 what it does over TLS 1.2; an app has no reason to forgo TLS 1.3.
    package var maximumVersion: MinimumVersion? = nil
    /// The ALPN protocols offered, most preferred first (default: none). `HTTPSTransport` sets this from its
    /// `HTTPSTransport.Configuration.httpVersion` (`h2`, `http/1.1`), so leave it empty when configuring
    /// the transport; set it when using ``TLSClientContext`` with a protocol of your own.
    public var applicationProtocols: [String]

    /// The client certificate and key sent when a server asks for one (mutual TLS). Default: none.
    ///
    /// Sessions are cached per identity: a session made with one identity is never resumed with another, or
    /// with none. Before sending it, ShopKit checks what the server will refuse anyway: an expired (or not yet
    /// valid) certificate, or one from none of the CAs the server names, ends the handshake with
    /// ``TLSError/clientCertificateRejected(reason:)``.
    public var clientIdentity: ClientIdentity?
    /// What happens when a server asks for a client certificate and ``clientIdentity`` is nil. Default: `.fail`.
    public var certificateRequestWithoutIdentity: CertificateRequestPolicy

    /// What a client without an identity does when the server asks for a certificate.
    public enum CertificateRequestPolicy: Sendable, Hashable {
        /// End the handshake with ``TLSError/clientCertificateRequired(acceptedIssuers:)``, which names the CAs
        /// the server accepts; no request (and no token) is sent to a server that would refuse it.
        case fail
        /// Go on without a certificate, for servers where a client certificate is optional. A server that
        /// requires one then refuses the connection or the request itself.
        case continueWithoutCertificate
    }

    /// A logger that drops everything: the default ``logger``, so that a library never writes to a process's
    /// output unless the app hands it a logger (package access: the package's own silent default).
    package static let disabledLogger = Logger(label: "ShopKitTLS", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A configuration; every parameter has a safe default (system trust store, no pins, TLS 1.2 or later, no
    /// logging: `logger` nil logs nothing).
    public init(
        trustRoots: TrustRoots = .system,
        pinning: PinningPolicy = PinningPolicy(),
        minimumVersion: MinimumVersion = .tls12,
        pinFailureReporter: (any PinFailureReporter)? = nil,
        logger: Logger? = nil,
        sessionResumption: Bool = true,
        applicationProtocols: [String] = [],
        clientIdentity: ClientIdentity? = nil,
        certificateRequestWithoutIdentity: CertificateRequestPolicy = .fail
    ) {
        self.applicationProtocols = applicationProtocols
        self.clientIdentity = clientIdentity
        self.certificateRequestWithoutIdentity = certificateRequestWithoutIdentity
        self.trustRoots = trustRoots
        self.pinning = pinning
        self.minimumVersion = minimumVersion
        self.pinFailureReporter = pinFailureReporter
        self.explicitLogger = logger
        self.sessionResumption = sessionResumption
    }
}

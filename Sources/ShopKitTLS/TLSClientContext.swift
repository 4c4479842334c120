import Foundation
import NIOConcurrencyHelpers
import NIOCore
import ShopKitCore
import Logging
import ShopKitOpenSSL
import ShopKitPinning

/// Everything a client needs to open pinned TLS connections with one `TLSClientConfiguration`: the OpenSSL
/// `SSL_CTX` (built once, with the trust store loaded once) and the session cache.
///
/// Build one per configuration and keep it (the HTTPS transport holds one); building it loads the CA store,
/// which is expensive in OpenSSL 3. Then call `makeHandler(host:port:)` for each new channel.
public final class TLSClientContext: Sendable {
    /// The configuration this context was built from (its `pinning` is the policy it started with; see
    /// `pinning` for the one in force). Package access: the app holds the configuration it passed.
    package let configuration: TLSClientConfiguration
    /// The cached sessions (shared with other contexts if one was passed in).
    public let sessionCache: TLSSessionCache
    let openSSL: OpenSSLContext
    /// The wall clock pin checks read (pin-set and document expiry, the age of cached sessions).
    package let now: @Sendable () -> Date
    /// Hosts whose pin set's no-backup warning was logged already.
    let backupWarnings = OncePerHost()
    /// Hosts whose "not pinned" notice was logged already.
    let unpinnedNotices = OncePerHost()
    /// The pinning policy in force, and how many times it was replaced.
    private let livePinning: NIOLockedValueBox<PinningSnapshot>
    /// The Certificate Transparency policy in force, with its log store.
    let ctState: NIOLockedValueBox<CertificateTransparencyState>
    /// The configuration's CT state: what applies again when a replaced list expires.
    let baselineCT: CertificateTransparencyState

    /// Builds the OpenSSL context for `configuration`.
    ///
    /// - Parameters:
    ///   - configuration: the trust roots, pinning policy, minimum TLS version, client identity and logger of
    ///     every connection made with this context.
    ///   - sessionCache: where resumable sessions are kept; pass one cache to several contexts to share it
    ///     (sessions stay bound to host, port, trust anchors, pin set and client identity).
    /// - Throws: `TLSContextError` of kind `.trustAnchors` when the PEM trust anchors do not load, of kind
    ///   `.system` when OpenSSL or the system trust store cannot be set up, of kind `.invalidInput` when the
    ///   Certificate Transparency log list cannot be used.
    public convenience init(
        configuration: TLSClientConfiguration, sessionCache: TLSSessionCache = TLSSessionCache()
    ) throws(TLSContextError) {
        try self.init(configuration: configuration, sessionCache: sessionCache, now: { Date() })
    }

    /// The same with the clock for pin-set expiry and the age of cached sessions injected (tests, and the
    /// inspectors, which check a fleet at one instant).
    package init(
        configuration: TLSClientConfiguration, sessionCache: TLSSessionCache = TLSSessionCache(),
        now: @escaping @Sendable () -> Date
    ) throws(TLSContextError) {
        self.configuration = configuration
        self.sessionCache = sessionCache
        self.now = now
        self.livePinning = NIOLockedValueBox(PinningSnapshot(policy: configuration.pinning, generation: 0))
        let ct = try CertificateTransparencyState(configuration.certificateTransparency, trustRoots: configuration.trustRoots)
        if case .system = configuration.certificateTransparency.publicRoots, ct.publicRoots == nil {
            configuration.logger.notice(
                """
                Certificate Transparency: the system's public roots cannot be read \
                (\(PublicRootStore.systemDirectory)); every root but the app's own trust anchors counts as public
                """)
        }
        self.ctState = NIOLockedValueBox(ct)
        self.baselineCT = ct
        let trust: OpenSSLContext.Trust
        switch configuration.trustRoots {
        case .system: trust = .system
        case .pem(let pem, let adding): trust = .pem(pem, addingToSystem: adding)
        }
        do {
            openSSL = try OpenSSLContext.client(
                trust: trust, minimumVersion: configuration.minimumVersion == .tls13 ? .tls13 : .tls12,
                alpn: configuration.applicationProtocols, identity: configuration.clientIdentity?.material,
                requiresIdentityWhenAsked: configuration.certificateRequestWithoutIdentity == .fail,
                tls12CipherSuites: configuration.allowsStaticRSAKeyExchange ? .allowingStaticRSA : .forwardSecretAEAD,
                maximumVersion: configuration.maximumVersion.map { $0 == .tls13 ? .tls13 : .tls12 })
        } catch {
            // Tell a bad anchor file (the caller's input) from a failure of OpenSSL or the system store.
            if case .pem(let pem, _) = configuration.trustRoots {
                do { _ = try OpenSSLCertificate.parsePEM(pem) } catch {
                    throw TLSContextError(message: "the PEM trust anchors do not load: \(error)", kind: .trustAnchors)
                }
            }
            throw TLSContextError(
                message: "could not set up TLS (OpenSSL or the system trust store failed): \(error)", kind: .system)
        }
    }

    /// A fresh channel handler for one connection to `host:port`. Add it first in the pipeline (nearest the
    /// socket); nothing but ciphertext may pass below it.
    ///
    /// `host` is what the server's certificate must name (a DNS name or an IP literal) and what the pins
    /// are looked up by. The handler fires ``TLSHandshakeCompleted`` once the chain, the host name and the pins
    /// passed, a ``TLSError`` through `errorCaught` when the handshake fails, and ``TLSUncleanShutdown`` when the
    /// peer closes without close_notify. Its type is ShopKit's own: only the `ChannelHandler` is promised.
    public func makeHandler(host: String, port: Int) -> any ChannelHandler {
        makeClientHandler(host: host, port: port)
    }

    /// ``makeHandler(host:port:)`` as its concrete type, for the package's own pipelines and tests.
    package func makeClientHandler(host: String, port: Int) -> TLSHandler {
        TLSHandler(client: self, host: host, port: port)
    }

    /// The pinning policy new connections are checked against: the configuration's, until
    /// ``replacePinning(_:)`` replaces it.
    package var pinning: PinningPolicy { livePinning.withLockedValue { $0.policy } }

    /// Replaces the pinning policy while connections run: every handshake that starts after this returns is
    /// checked against `policy`, and offers only sessions cached under the pin set `policy` gives its host.
    /// Established connections keep running; a pool asks ``stillTrusts(host:chain:verifiedUnder:)``
    /// before reusing one.
    ///
    /// - Warning: This replaces the pins outright. Apply only a policy from a trusted source: code, or a signed
    ///   document checked by ``PinSetVerifier``.
    package func replacePinning(_ policy: PinningPolicy) {
        livePinning.withLockedValue {
            $0.policy = policy
            $0.generation += 1
        }
    }

    /// Replaces the pinning policy as ``replacePinning(_:)`` does, only if the policy in force has `version`
    /// (checked and replaced under one lock); whether it did. So a policy that ends (an expired document) never
    /// undoes one applied after it.
    package func replacePinning(_ policy: PinningPolicy, ifVersion version: Int) -> Bool {
        livePinning.withLockedValue {
            guard $0.policy.version == version else { return false }
            $0.policy = policy
            $0.generation += 1
            return true
        }
    }

    /// The policy in force and its generation, read together.
    var pinningSnapshot: PinningSnapshot { livePinning.withLockedValue { $0 } }

    /// Whether a connection to `host` whose handshake verified `chain` under policy generation `generation` may
    /// still be used under the policy in force: always when the policy was not replaced since and no document in
    /// it expired since; otherwise when
    /// the new policy would let that chain connect (a match, report-only or expired set, or no set, unless
    /// hosts without one are refused).
    package func stillTrusts(host: String, chain: VerifiedChain, verifiedUnder generation: Int) -> Bool {
        let current = pinningSnapshot
        let now = now()
        // Unchanged since the connection was verified, unless a document in the policy has expired since (its
        // policy then gives way to the baseline: `PinningPolicy.inForce(at:)`).
        guard current.generation != generation || current.policy.hasGivenWay(at: now) else { return true }
        if current.policy.refusesUnpinned(host: host, at: now) { return false }
        return current.policy.evaluate(host: host, chain: chain, now: now).allowsConnection
    }

    func sessionKey(host: String, port: Int, pinning: PinningPolicy, ctList: UUID) -> TLSSessionCache.Key {
        TLSSessionCache.Key(
            host: host.lowercased(), port: port, trust: configuration.trustRoots,
            minimumVersion: configuration.minimumVersion, pinSet: pinning.pinSet(for: host, at: now()),
            clientIdentity: configuration.clientIdentity?.fingerprint,
            allowsStaticRSA: configuration.allowsStaticRSAKeyExchange, certificateTransparencyList: ctList)
    }
}

/// A pinning policy and the number of times a context's policy had been replaced when it was read.
struct PinningSnapshot: Sendable {
    var policy: PinningPolicy
    var generation: Int
}

/// Remembers hosts (case-insensitively), so that something is done once per host: `firstTime` is true only
/// on a host's first call. Holds at most `capacity` hosts; past that the oldest is forgotten (and would count
/// as new again).
final class OncePerHost: Sendable {
    private let hosts: NIOLockedValueBox<BoundedCache<String, Void>>

    init(capacity: Int = 1_024) { hosts = NIOLockedValueBox(BoundedCache(capacity: capacity)) }

    /// Whether this is the first call for `host`.
    func firstTime(_ host: String) -> Bool {
        let key = host.lowercased()
        return hosts.withLockedValue { hosts in
            guard hosts[key] == nil else { return false }
            hosts.insert((), for: key)
            return true
        }
    }
}

/// A server-side TLS context (tests, the demo and `pin-check --demo`): certificate chain and key from PEM.
///
/// Package access: ShopKit ships a client; the server role exists for its own loopback tests and demos.
package final class TLSServerContext: Sendable {
    let openSSL: OpenSSLContext
    /// Handshake counters across every connection served with this context.
    package let statistics = TLSServerStatistics()

    /// Loads the chain (leaf first; the rest is sent exactly in the given order) and the key.
    ///
    /// - Parameter maximumVersion: caps the protocol, e.g. `.tls12` to test TLS 1.2 clients.
    /// - Parameter applicationProtocols: the ALPN protocols served, most preferred first (`h2` for an HTTP/2
    ///   test server).
    /// - Warning: For tests and demos; the key is read from memory and never logged.
    package convenience init(
        certificateChainPEM: String, privateKeyPEM: String, maximumVersion: TLSClientConfiguration.MinimumVersion? = nil,
        applicationProtocols: [String] = ["http/1.1"]
    ) throws(TLSContextError) {
        try self.init(
            certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM, maximumVersion: maximumVersion,
            legacy: nil, applicationProtocols: applicationProtocols)
    }

    /// A server that requires a client certificate chaining to `clientCAsPEM` and ends the handshake with an
    /// alert otherwise (as strict mutual-TLS servers do; nginx instead answers HTTP 400). With `namingCAs` false
    /// its CertificateRequest names no CA.
    package init(
        certificateChainPEM: String, privateKeyPEM: String, maximumVersion: TLSClientConfiguration.MinimumVersion? = nil,
        requiringClientCertificatesFrom clientCAsPEM: String, namingCAs: Bool = true
    ) throws(TLSContextError) {
        do {
            openSSL = try OpenSSLContext.server(
                certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM,
                maximumVersion: maximumVersion.map { $0 == .tls13 ? .tls13 : .tls12 },
                clientVerification: .init(trustedCAsPEM: clientCAsPEM, namesCAs: namingCAs))
        } catch {
            throw TLSContextError(message: "could not set up the TLS server (check the chain, key and client CAs): \(error)")
        }
    }

    /// A server with a deliberately weak behaviour (``LegacyServer``), for the security-review vectors.
    ///
    /// - Warning: Package access only: the shipped API cannot build a weak server.
    package init(
        certificateChainPEM: String, privateKeyPEM: String, maximumVersion: TLSClientConfiguration.MinimumVersion? = nil,
        legacy: LegacyServer?, applicationProtocols: [String] = ["http/1.1"]
    ) throws(TLSContextError) {
        do {
            switch legacy {
            case nil:
                openSSL = try OpenSSLContext.server(
                    certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM,
                    maximumVersion: maximumVersion.map { $0 == .tls13 ? .tls13 : .tls12 }, alpn: applicationProtocols)
            case .weakCertificates:
                openSSL = try OpenSSLContext.server(
                    certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM,
                    maximumVersion: maximumVersion.map { $0 == .tls13 ? .tls13 : .tls12 }, securityLevel: 0,
                    alpn: applicationProtocols)
            case .onlyTLS10:
                openSSL = try OpenSSLContext.server(
                    certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM, minimumVersion: .tls10,
                    maximumVersion: .tls10, securityLevel: 0)
            }
        } catch {
            throw TLSContextError(message: "could not set up the TLS server (check the chain and key PEM): \(error)")
        }
    }

    /// Deliberately weak server behaviours, so tests can check that ShopKit's *client* refuses them.
    ///
    /// - Warning: Test servers only (package access, not package API). Client contexts have no such option.
    package enum LegacyServer: Sendable, Hashable {
        /// Security level 0, so the server can serve RSA-1024 or SHA-1 certificates.
        case weakCertificates
        /// Speaks TLS 1.0 only (security level 0), like a server that was never upgraded.
        case onlyTLS10
    }

    /// A fresh server handler for one accepted channel.
    package func makeHandler() -> TLSHandler { TLSHandler(server: self) }
}

/// Counts a server's handshakes (full ones and session resumptions) and the client certificates it received.
package final class TLSServerStatistics: Sendable {
    private let counts = NIOLockedValueBox((full: 0, resumed: 0, clientCertificates: 0))

    /// Handshakes that exchanged certificates.
    package var fullHandshakes: Int { counts.withLockedValue { $0.full } }
    /// Handshakes that resumed a session.
    package var resumptions: Int { counts.withLockedValue { $0.resumed } }

    /// Connections (completed or failed) on which the client sent a certificate.
    package var clientCertificates: Int { counts.withLockedValue { $0.clientCertificates } }

    func recordClientCertificate() { counts.withLockedValue { $0.clientCertificates += 1 } }

    func record(resumed wasResumed: Bool) {
        counts.withLockedValue { if wasResumed { $0.resumed += 1 } else { $0.full += 1 } }
    }
}

/// A TLS context could not be built; the message says which input to fix.
public struct TLSContextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is at fault.
    public enum Kind: Sendable, Equatable {
        /// The PEM trust anchors given do not load.
        case trustAnchors
        /// Another input cannot be used: a pin set, a host name, a server chain or key.
        case invalidInput
        /// OpenSSL or the system trust store could not be set up; nothing the caller gave is at fault.
        case system
    }

    /// What went wrong and what to check (package access: its public form is ``description``).
    package let message: String
    /// What is at fault.
    public let kind: Kind

    /// The host pattern whose pins are at fault, when the error is a `PinnedHosts` entry's (`HTTPSTransport`'s
    /// `init(pinning:)`); nil otherwise.
    public let host: String?
    /// What is wrong with that entry, when the error is a `PinnedHosts` entry's; nil otherwise.
    public let pinning: PinningConfigurationError?

    /// An error with an actionable message.
    package init(message: String, kind: Kind = .invalidInput) {
        self.message = message
        self.kind = kind
        self.host = nil
        self.pinning = nil
    }

    /// The error of a ``PinnedHosts`` entry that cannot be a pin set: kind `.invalidInput`, naming the host.
    package init(host: String, pinning: PinningConfigurationError) {
        self.message = "pins for \"\(host)\": \(pinning)"
        self.kind = .invalidInput
        self.host = host
        self.pinning = pinning
    }

    /// What went wrong and what to check.
    public var description: String { message }
}

extension TLSContextError: RetryClassifiableError {
    /// Always `false`: the configuration itself is wrong.
    public var isRetryable: Bool { false }
}

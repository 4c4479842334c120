import Foundation
import Logging
import ShopKitHTTPS
import NIOCore
import NIOPosix
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// Connects to one TLS server the way ShopKit's transport does and reports what it found: `pin-check`'s engine.
///
/// Verification is never loosened to look at a chain: the handshake uses a normal `TLSClientContext`, pins
/// are checked by `PinningPolicy` on the verified chain only, and the chain of a refused server is the one
/// captured from the failed handshake (`TLSHandshakeFailureDetails`), typed as a `PresentedChain`.
package struct ServerInspector: Sendable {
    /// The server to check.
    package var address: ServerAddress
    /// The name sent as SNI and checked against the SANs; nil means the host.
    package var serverName: String?
    /// The pins to check; empty means only chain and hostname. Replaced, for each check, by this host's pins in
    /// ``replaceablePins`` when that is set.
    package var pins: [SPKIPin]
    /// Pins that may be replaced between checks (a fleet's, reloaded on `SIGHUP`): when set, each check reads this
    /// host's pins from it once, as it starts (``resolvingPins()``), and keeps them to its end.
    package var replaceablePins: ReplaceablePins?
    /// PEM trust anchors replacing the system store (as curl's `--cacert`); nil means the system store.
    package var trustAnchorsPEM: String?
    /// Limit for connect and handshake together.
    package var timeout: Duration
    /// The clock for days left and the pin-set date (tests inject one).
    package var now: @Sendable () -> Date
    /// The client certificate to present when the server asks for one (`pin-check --cert --key`); nil for none,
    /// so a server that asks ends the check with `TLSError.clientCertificateRequired` and its CA names.
    package var clientIdentity: ClientIdentity? = nil
    /// Whether TLS 1.2 may use static RSA key exchange (`--allow-static-rsa`); a server that needs it is reported.
    package var allowsStaticRSAKeyExchange = false

    /// A signed pin-set document's policy (`pin-check --pins-document`), checked by the caller as an app checks
    /// the document, then applied as an app applies it: the TLS layer's own pin check decides, with the document's
    /// strictness and each set's enforcement, report-only flag and expiration. Nil: ``pins`` decide. ``pins`` then
    /// holds the pins of the set applied to the checked name, for the report.
    package var documentPolicy: PinningPolicy? = nil

    /// The Certificate Transparency policy the handshake applies (`pin-check --ct`, `--ct-log-list`,
    /// `--ct-public-root`): report-only with the bundled list and the system's public roots by default, as in apps.
    package var certificateTransparency = CertificateTransparencyPolicy()
    /// Where ``certificateTransparency``'s log list came from, for the report: `bundled` or a file's path.
    package var certificateTransparencyLogListSource = "bundled"

    /// The HTTP proxy to tunnel through (`CONNECT`), unless its `noProxy` rules match the host; nil: direct.
    package var proxy: ProxyConfiguration?

    /// The proxy actually used for this server, if any.
    var route: ProxyConfiguration? {
        guard let proxy, proxy.applies(toHost: connectHost, port: address.port) else { return nil }
        return proxy
    }

    /// The host connected to: ``address``'s host in its canonical ``ServerName`` form (`127.0.0.1.` is `127.0.0.1`,
    /// `LocalHost.` is `localhost`), the form ``checkedName`` has when no `serverName` is given, so what the socket
    /// or the proxy's `CONNECT` reaches is what OpenSSL checks and the pins are looked up under. A host that is no
    /// server name stays as given (pin-check refuses it first; the handshake would refuse it).
    package var connectHost: String { (try? ServerName(address.host))?.text ?? address.host }

    /// An inspector with the given inputs.
    package init(
        address: ServerAddress, serverName: String? = nil, pins: [SPKIPin] = [], trustAnchorsPEM: String? = nil,
        timeout: Duration = .seconds(10), now: @escaping @Sendable () -> Date = { Date() },
        proxy: ProxyConfiguration? = nil, replaceablePins: ReplaceablePins? = nil
    ) {
        self.proxy = proxy
        self.replaceablePins = replaceablePins
        self.address = address
        self.serverName = serverName
        self.pins = pins
        self.trustAnchorsPEM = trustAnchorsPEM
        self.timeout = timeout
        self.now = now
    }

    /// This inspector with the pins a check starting now uses: ``pins``, or this host's pins in
    /// ``replaceablePins`` as they are at this moment (then fixed: later replacements do not reach the copy).
    package func resolvingPins() -> ServerInspector {
        guard let replaceablePins else { return self }
        var fixed = self
        fixed.pins = replaceablePins.pins(for: address)
        fixed.replaceablePins = nil
        return fixed
    }

    /// The name checked: `serverName` or the host, in its canonical ``ServerName`` form (`LocalHost.` is
    /// `localhost`, `127.0.0.1.` is `127.0.0.1`), the one OpenSSL checks and the pins are looked up under, so the
    /// report names what was checked. A name that is no server name stays as given; the handshake refuses it.
    package var checkedName: String {
        let name = serverName ?? address.host
        return (try? ServerName(name))?.text ?? name
    }

    /// The pin policy for the given pins: one set for the checked name.
    ///
    /// Without a client identity the set is report-only, so the handshake completes and the report shows what was
    /// negotiated beside the verdict (computed by `PinningPolicy` on the verified chain). With a client identity
    /// (``clientIdentity``) the set is enforced, as in any ShopKit client: a mismatch ends the handshake inside
    /// OpenSSL's verification of the server's chain, before the client's certificate is sent or anything is
    /// signed with its key; the report still shows the verified chain (`TLSHandshakeFailureDetails.pinRefusal`).
    package func pinningPolicy() throws(TLSContextError) -> PinningPolicy {
        if replaceablePins != nil { return try resolvingPins().pinningPolicy() }
        // An app's verdict, not a diagnosis: the document's own policy, enforced as the app enforces it.
        if let documentPolicy { return documentPolicy }
        guard !pins.isEmpty else { return PinningPolicy() }
        do {
            let set = try PinSet(
                hostPattern: HostPattern(checkedName), pins: pins, reportOnly: clientIdentity == nil,
                acceptingSinglePin: true)
            return PinningPolicy(pinSets: [set])
        } catch {
            throw TLSContextError(message: "cannot pin '\(checkedName)': \(error)", kind: .invalidInput)
        }
    }

    /// Connects, handshakes, closes, and reports.
    ///
    /// - Throws: `TLSContextError` only before connecting: of kind `.trustAnchors` or `.invalidInput` for
    ///   unusable inputs (anchors that do not parse, a name that cannot carry pins), of kind `.system` when
    ///   OpenSSL or the system trust store cannot be set up. Every server behaviour becomes a verdict.
    package func inspect(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws(TLSContextError)
        -> ServerReport
    {
        // The pins are read once, here: a replacement during the check does not change it.
        if replaceablePins != nil { return try await resolvingPins().inspect(group: group) }
        var configuration = TLSClientConfiguration(
            trustRoots: trustAnchorsPEM.map { .pem($0, addingToSystem: false) } ?? .system,
            pinning: try pinningPolicy(),
            // The report carries every finding, so nothing is logged.
            logger: TLSClientConfiguration.disabledLogger,
            // What HTTPSTransport offers by default, so the report shows what a client would get.
            applicationProtocols: ["h2", "http/1.1"],
            clientIdentity: clientIdentity)
        configuration.allowsStaticRSAKeyExchange = allowsStaticRSAKeyExchange
        configuration.certificateTransparency = certificateTransparency
        let context = try TLSClientContext(configuration: configuration, sessionCache: TLSSessionCache(), now: now)
        let outcome = await handshake(context: context, group: group)
        var report = report(for: outcome, policy: configuration.pinning)
        if case .failed(let failure, _) = outcome, let text = failure.handshakeFailureText,
            FailureWording.isNoCipherInCommon(text),
            !allowsStaticRSAKeyExchange
        {
            report.noCipherInCommon(await staticRSAProbe(group: group), openSSLText: text)
        }
        report.proxy = route?.description
        report.pinsDocument = documentPinSet(at: now())
        return report
    }

    /// What a server that shares no cipher suite with ShopKit does offer, as far as one more handshake tells.
    package enum CipherProbe: Sendable, Equatable {
        /// It accepts static RSA key exchange, with this suite (`--allow-static-rsa` would connect).
        case staticRSA(cipher: String)
        /// Over TLS 1.2 it took one of ShopKit's own suites and sent a certificate whose key is too small for any
        /// signature algorithm ShopKit accepts (`RSA 512`): over TLS 1.3 it found none to sign with.
        case weakKey(String)
        /// It accepts neither ShopKit's suites nor static RSA: it offers only finite-field DHE or CBC suites with
        /// ECDHE (or something older), which ShopKit never offers.
        case nothingShopKitOffers
    }

    /// `pin-check`'s diagnosis of "no cipher suite in common": one more handshake, over TLS 1.2 only, that also
    /// offers static RSA, with the same trust, no pins and never a client certificate, closed as soon as it ends.
    /// Its cipher says whether `--allow-static-rsa` would help, and the certificate it reaches whether the key is
    /// what failed, so the hint never sends the user the wrong way.
    /// Nil when the probe learnt nothing (it could not connect, or the client context could not be made).
    func staticRSAProbe(group: any EventLoopGroup) async -> CipherProbe? {
        var configuration = TLSClientConfiguration(
            trustRoots: trustAnchorsPEM.map { .pem($0, addingToSystem: false) } ?? .system,
            logger: TLSClientConfiguration.disabledLogger, applicationProtocols: ["h2", "http/1.1"])
        configuration.allowsStaticRSAKeyExchange = true
        configuration.maximumVersion = .tls12
        guard let context = try? TLSClientContext(configuration: configuration, sessionCache: TLSSessionCache(), now: now)
        else { return nil }
        switch await handshake(context: context, group: group) {
        case .established(let info):
            return info.forwardSecrecy ? nil : .staticRSA(cipher: info.cipherSuite)
        case .failed(_, let details?) where details.cipherSuite != nil:
            let cipher = details.cipherSuite ?? ""
            if !cipher.hasPrefix("ECDHE-") && !cipher.hasPrefix("DHE-") { return .staticRSA(cipher: cipher) }
            // One of ShopKit's own suites: what failed is the certificate. A key too small to sign with is the
            // reason TLS 1.3 found no signature algorithm.
            if let key = details.presentedChain?.certificates.first?.keyDescription, key.hasPrefix("RSA "),
                let bits = Int(key.dropFirst(4)), bits < 2048
            {
                return .weakKey(key)
            }
            return nil
        case .failed(let failure, _) where failure.handshakeFailureText.map(FailureWording.isNoCipherInCommon) == true:
            return .nothingShopKitOffers
        case .failed:
            return nil
        }
    }

    /// Connects with a context shared by many checks (its trust anchors; its pins are not used), handshakes,
    /// closes, and reports with this inspector's pins: the fleet check's step.
    ///
    /// Call ``pinningPolicy()`` first to learn whether the pins apply to the checked name; if they do not,
    /// the report carries no pin verdict.
    package func inspect(sharedContext context: TLSClientContext, group: any EventLoopGroup) async -> ServerReport {
        if replaceablePins != nil { return await resolvingPins().inspect(sharedContext: context, group: group) }
        let outcome = await handshake(context: context, group: group)
        return report(for: outcome, policy: (try? pinningPolicy()) ?? PinningPolicy())
    }

    /// How the handshake ended.
    enum Outcome: Sendable {
        case established(TLSConnectionInfo)
        case failed(Failure, TLSHandshakeFailureDetails?)
    }

    /// Why no verified connection was made.
    enum Failure: Sendable, CustomStringConvertible {
        /// The TCP connection was refused or could not be made; `reason` says so in one sentence.
        case connectFailed(host: String, port: Int, reason: String)
        /// The TCP connection was not up within the timeout.
        case connectTimeout
        /// TLS failed: handshake, chain, hostname (or the handshake timed out).
        case tls(TLSError)
        /// The proxy's tunnel could not be opened (its own error: refused, authentication, closed, TLS).
        case proxy(String)

        var description: String {
            switch self {
            case .connectFailed(_, _, let reason): return reason
            case .connectTimeout: return "connect timeout"
            case .tls(let error): return error.description
            case .proxy(let reason): return reason
            }
        }

        /// The TLS failure, for ``tls(_:)``; else nil.
        var tlsError: TLSError? {
            if case .tls(let error) = self { return error }
            return nil
        }

        /// OpenSSL's error text of a failed handshake (`TLSError.handshakeFailed`); else nil.
        var handshakeFailureText: String? {
            guard let error = tlsError, error.code == .handshakeFailed else { return nil }
            return error.reason
        }
    }

    private func handshake(context: TLSClientContext, group: any EventLoopGroup) async -> Outcome {
        let loop = group.next()
        let promise = loop.makePromise(of: Outcome.self)
        let timeout = TimeAmount(self.timeout)
        let name = checkedName
        let port = address.port
        // One clock for connect and handshake; whether the TCP connection was up says which one ran out.
        let connected = NIOLoopBoundBox.makeBoxSendingValue(false, as: Bool.self, eventLoop: loop)
        let addHandlers: @Sendable (any Channel) throws -> Void = { channel in
            try channel.pipeline.syncOperations.addHandler(context.makeClientHandler(host: name, port: port))
            try channel.pipeline.syncOperations.addHandler(InspectionHandler(promise: promise))
        }
        let connect: EventLoopFuture<any Channel>
        if let proxy = route {
            do {
                connect = try ProxyTunnel.open(to: connectHost, port: port, through: proxy, group: loop, timeout: timeout)
                    .flatMapThrowing { channel in
                        try addHandlers(channel)
                        return channel
                    }
            } catch {
                return .failed(.proxy("the proxy's trust anchors cannot be loaded: \(error)"), nil)
            }
            connect.whenFailure { error in
                guard let failure = error as? HTTPSTransportError else {
                    return promise.succeed(.failed(.proxy("\(error)"), nil))
                }
                if failure.code == .timeout { return promise.succeed(.failed(.connectTimeout, nil)) }
                promise.succeed(.failed(.proxy(failure.description), nil))
            }
        } else {
            let host = connectHost
            connect = ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try addHandlers(channel) } }
                .connect(literalOrHost: host, port: address.port)
            connect.whenFailure { error in
                if case ChannelError.connectTimeout = error {
                    promise.succeed(.failed(.connectTimeout, nil))
                } else {
                    let reason = FailureWording.connectFailure(host: host, port: port, error: error)
                    promise.succeed(.failed(.connectFailed(host: host, port: port, reason: reason), nil))
                }
            }
        }
        connect.whenSuccess { _ in connected.value = true }
        // The clock starts on the loop, after the connect has started there. A loop that was busy when the check
        // began then delays the connect's completion and the clock alike, so a connection that came up is never
        // reported as a connect timeout.
        let timer = loop.submit {
            loop.scheduleTask(in: timeout) {
                promise.succeed(.failed(connected.value ? .tls(.handshakeTimeout) : .connectTimeout, nil))
            }
        }
        let outcome = try? await promise.futureResult.get()
        try? await timer.get().cancel()
        if let channel = try? await connect.get() { try? await channel.close() }
        return outcome ?? .failed(.tls(.connectionClosed), nil)
    }
}

/// Waits for the first of: the handshake event, the failure details and error, or an early close.
final class InspectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let promise: EventLoopPromise<ServerInspector.Outcome>
    private var details: TLSHandshakeFailureDetails?

    init(promise: EventLoopPromise<ServerInspector.Outcome>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted {
            promise.succeed(.established(completed.info))
            context.close(promise: nil)
        } else if let failure = event as? TLSHandshakeFailureDetails {
            details = failure
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let tlsError = error as? TLSError ?? .handshakeFailed(reason: FailureWording.handshakeTransportFailure(error))
        promise.succeed(.failed(.tls(tlsError), details))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.succeed(.failed(.tls(.handshakeFailed(reason: "the server closed the connection")), details))
        context.fireChannelInactive()
    }
}

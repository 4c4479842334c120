import Foundation
import NIOConcurrencyHelpers
import ShopKitOpenSSL
import ShopKitPinning

/// A context's Certificate Transparency policy with the OpenSSL log store built from its log list: replaced
/// together, read together.
struct CertificateTransparencyState: Sendable {
    var policy: CertificateTransparencyPolicy
    var logs: OpenSSLCTLogStore
    /// Names this log list (a new one for every list a context applies): sessions are resumed only under the list
    /// that checked their SCTs (`TLSSessionCache.Key`).
    var listID = UUID()
    /// The SPKI pins of the roots CT applies to; nil when the system's public roots cannot be read (see
    /// ``isPublic(_:)``).
    var publicRoots: Set<SPKIPin>?
    /// The SPKI pins of the app's own PEM trust anchors: never public when ``publicRoots`` is nil.
    var appRoots: Set<SPKIPin>
    /// When this list stops applying, and what applies from then (the configuration's list): a list from a signed
    /// document ends at the document's expiry on every handshake, whether or not its updater still runs.
    var expiry: Expiry?

    /// The end of a list and the state after it.
    final class Expiry: Sendable {
        let at: Date
        let then: CertificateTransparencyState

        init(at: Date, then: CertificateTransparencyState) {
            self.at = at
            self.then = then
        }
    }

    /// The state in force at `now`: this one, or what follows it once it expired.
    func inForce(at now: Date) -> CertificateTransparencyState {
        guard let expiry, now >= expiry.at else { return self }
        return expiry.then.inForce(at: now)
    }

    /// The state for `policy`, with `trustRoots` (the context's) telling the app's own anchors apart;
    /// `systemDirectory` is where the system's public roots are read for ``CertificateTransparencyPolicy/PublicRoots/system``.
    init(
        _ policy: CertificateTransparencyPolicy, trustRoots: TLSClientConfiguration.TrustRoots,
        systemDirectory: String = PublicRootStore.systemDirectory
    ) throws(TLSContextError) {
        self.policy = policy
        do { logs = try OpenSSLCTLogStore(policy.logList) } catch {
            throw TLSContextError(message: "the Certificate Transparency log list cannot be used: \(error)")
        }
        switch policy.publicRoots {
        case .system: publicRoots = PublicRootStore.system(directory: systemDirectory)
        case .spkiPins(let pins): publicRoots = pins
        }
        switch trustRoots {
        case .system: appRoots = []
        case .pem(let pem, _): appRoots = PublicRootStore.pins(ofPEM: pem)
        }
    }

    /// Whether `chain` ends at a public root (its last certificate, the trust anchor OpenSSL verified it to).
    ///
    /// When the system's public roots cannot be read (no `/usr/share/ca-certificates/mozilla`: another
    /// distribution, a container), every anchor but the app's own PEM anchors counts as public: CT is then applied
    /// too widely (a root an administrator added is judged), never silently not at all.
    func isPublic(_ chain: VerifiedChain) -> Bool {
        guard let anchor = chain.certificates.last else { return false }
        guard let publicRoots else { return !appRoots.contains(anchor.spkiPin) }
        return publicRoots.contains(anchor.spkiPin)
    }

    /// The CT evaluation of a verified chain and the SCTs that came with it.
    func evaluate(host: String, chain: VerifiedChain, scts: [SignedCertificateTimestamp], now: Date) -> CTEvaluation {
        policy.evaluate(host: host, chain: chain, scts: scts, rootIsPublic: isPublic(chain), now: now)
    }

    /// The CT evaluation of a verified chain of one certificate (a leaf trusted as its own root), for which OpenSSL
    /// checks no SCT (it needs an issuer): judged with none, so under `enforced` it is refused inside verification,
    /// before the client's certificate is sent.
    func evaluateWithoutIssuer(host: String, chain: VerifiedChain, now: Date) -> CTEvaluation {
        let evaluation = evaluate(host: host, chain: chain, scts: [], now: now)
        guard case .notCompliant = evaluation.verdict else { return evaluation }
        return CTEvaluation(
            mode: evaluation.mode, effectiveMode: evaluation.effectiveMode,
            verdict: .notCompliant(
                reason: "the verified chain is a single certificate (trusted as its own root): OpenSSL checks no "
                    + "SCT without an issuer, so none can count"),
            logListStale: evaluation.logListStale, logListExpiry: evaluation.logListExpiry, assessments: [])
    }
}

extension TLSClientContext {
    /// The Certificate Transparency policy new connections are checked against.
    package var certificateTransparency: CertificateTransparencyPolicy { ctSnapshot.policy }

    /// The CT state in force now: the list last applied, or the configuration's once that list expired.
    var ctSnapshot: CertificateTransparencyState { ctState.withLockedValue { $0 }.inForce(at: now()) }

    /// Replaces the CT log list while connections run: every handshake that starts after this returns checks
    /// SCTs against `logList` (and judges resumed sessions by it). Established connections keep running.
    ///
    /// - Warning: Apply only a list from a trusted source: the package, the app, or a signed document checked by
    ///   ``PinSetVerifier``.
    /// - Throws: ``TLSContextError`` (`.invalidInput`) when a log's key does not load or its id is not its key's
    ///   SHA-256; the list in force is kept.
    /// With `expiry`, the list applies until then and the configuration's list from then, on every handshake.
    package func replaceCertificateTransparencyLogList(_ logList: CTLogList, until expiry: Date? = nil)
        throws(TLSContextError)
    {
        var policy = certificateTransparency
        policy.logList = logList
        var state = try CertificateTransparencyState(policy, trustRoots: configuration.trustRoots)
        if let expiry { state.expiry = .init(at: expiry, then: baselineCT) }
        ctState.withLockedValue { $0 = state }
    }
}

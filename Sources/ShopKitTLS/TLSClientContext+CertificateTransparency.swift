import Foundation
import NIOConcurrencyHelpers
import ShopKitOpenSSL
import ShopKitPinning

/// A context's Certificate Transparency policy with the OpenSSL log store built from its log list: replaced
/// together, read together.
struct CertificateTransparencyState: Sendable {
    var policy: CertificateTransparencyPolicy
    var logs: OpenSSLCTLogStore
    /// The SPKI pins of the roots CT applies to.
    var publicRoots: Set<SPKIPin>

    init(_ policy: CertificateTransparencyPolicy) throws(TLSContextError) {
        self.policy = policy
        do { logs = try OpenSSLCTLogStore(policy.logList) } catch {
            throw TLSContextError(message: "the Certificate Transparency log list cannot be used: \(error)")
        }
        switch policy.publicRoots {
        case .system: publicRoots = PublicRootStore.system
        case .spkiPins(let pins): publicRoots = pins
        }
    }

    /// Whether `chain` ends at a public root (its last certificate, the trust anchor OpenSSL verified it to).
    func isPublic(_ chain: VerifiedChain) -> Bool {
        guard let anchor = chain.certificates.last else { return false }
        return publicRoots.contains(anchor.spkiPin)
    }

    /// The CT evaluation of a verified chain and the SCTs that came with it.
    func evaluate(host: String, chain: VerifiedChain, scts: [SignedCertificateTimestamp], now: Date) -> CTEvaluation {
        policy.evaluate(host: host, chain: chain, scts: scts, rootIsPublic: isPublic(chain), now: now)
    }
}

extension TLSClientContext {
    /// The Certificate Transparency policy new connections are checked against.
    package var certificateTransparency: CertificateTransparencyPolicy { ctState.withLockedValue { $0.policy } }

    var ctSnapshot: CertificateTransparencyState { ctState.withLockedValue { $0 } }

    /// Replaces the CT log list while connections run: every handshake that starts after this returns checks
    /// SCTs against `logList` (and judges resumed sessions by it). Established connections keep running.
    ///
    /// - Warning: Apply only a list from a trusted source: the package, the app, or a signed document checked by
    ///   ``PinSetVerifier``.
    /// - Throws: ``TLSContextError`` (`.invalidInput`) when a log's key does not load or its id is not its key's
    ///   SHA-256; the list in force is kept.
    package func replaceCertificateTransparencyLogList(_ logList: CTLogList) throws(TLSContextError) {
        var policy = certificateTransparency
        policy.logList = logList
        let state = try CertificateTransparencyState(policy)
        ctState.withLockedValue { $0 = state }
    }
}

import Foundation
import Logging
import NIOCore
import ShopKitOpenSSL
import ShopKitPinning

extension TLSHandler {
    /// Asks the server for SCTs and has them judged inside the handshake, unless CT is disabled for the host or the
    /// log list has no logs (the bundled default: no SCT could count, and sessions resume only under the list that
    /// checked them, so nothing is asked for and nothing is checked; the verdict is `noLogList`).
    func requestCertificateTransparency(_ connection: OpenSSLConnection, client: TLSClientContext) throws {
        guard let state = certificateTransparency, !state.policy.logList.logs.isEmpty else { return }
        try connection.requestCertificateTransparency(
            CertificateTransparencyCheck(
                logs: state.logs, now: client.now(),
                judge: { [unowned self] timestamps in self.judgeDuringHandshake(timestamps) }))
    }

    /// OpenSSL's SCT callback (full handshakes, after the chain and the name passed): the CT evaluation of the
    /// verified chain; false (an enforced, non-compliant chain) ends the handshake before the client's certificate
    /// or any request is sent.
    private func judgeDuringHandshake(_ timestamps: [SignedCertificateTimestamp]) -> Bool {
        guard case .client(let client, _, let host, _, _) = role, let state = certificateTransparency else { return true }
        guard let chain = chainVerifiedDuringHandshake ?? (try? connection?.verifiedChain()) ?? nil else { return false }
        let evaluation = state.evaluate(host: host, chain: chain, scts: timestamps, now: client.now())
        ctEvaluationDuringHandshake = evaluation
        return evaluation.allowsConnection
    }

    /// A verified chain of one certificate gets no SCT callback from OpenSSL: judged here, inside verification
    /// (after the pins passed), so an enforced refusal still comes before the client's certificate. True to go on.
    func judgeSingleCertificateChain(_ chain: VerifiedChain, client: TLSClientContext, host: String) -> Bool {
        guard chain.certificates.count == 1, let state = certificateTransparency else { return true }
        let evaluation = state.evaluateWithoutIssuer(host: host, chain: chain, now: client.now())
        ctEvaluationDuringHandshake = evaluation
        return evaluation.allowsConnection
    }

    /// The CT evaluation of an established connection: the one made inside the handshake; on a resumed session,
    /// the cached SCTs (checked against the same log list: sessions are resumed only under it) judged again under
    /// the policy at this instant. Nil when CT is disabled for the host.
    func certificateTransparencyEvaluation(
        client: TLSClientContext, host: String, chain: VerifiedChain, resumed: Bool
    ) -> (evaluation: CTEvaluation, timestamps: [SignedCertificateTimestamp])? {
        guard let state = certificateTransparency, let connection else { return nil }
        if resumed {
            let timestamps = offered?.signedCertificateTimestamps ?? []
            return (state.evaluate(host: host, chain: chain, scts: timestamps, now: client.now()), timestamps)
        }
        let timestamps = connection.judgedSCTs ?? connection.peerSCTs()
        if let evaluation = ctEvaluationDuringHandshake { return (evaluation, timestamps) }
        return (state.evaluate(host: host, chain: chain, scts: timestamps, now: client.now()), timestamps)
    }

    /// Logs the CT evaluation and reports a non-compliant chain; returns whether the connection may go on.
    ///
    /// The reporter is called on the event loop and must return at once (``PinFailureReporter``'s contract).
    func apply(_ evaluation: CTEvaluation, client: TLSClientContext, host: String, port: Int, chainPEM: [String]?)
        -> Bool
    {
        if evaluation.needsReport {
            let report = CTComplianceReport(
                evaluation: evaluation, host: host, port: port, servedChainPEM: connection?.peerChainPEM() ?? [],
                validatedChainPEM: chainPEM ?? connection?.verifiedChainPEM() ?? [], date: client.now())
            client.configuration.pinFailureReporter?.report(report)
            if evaluation.allowsConnection {
                logger.warning(
                    "Certificate Transparency: the chain is not compliant; connecting (report-only) and reporting",
                    metadata: ["tls.ct": "\(evaluation.verdictDescription)"])
            } else {
                logger.debug(
                    "Certificate Transparency enforced: the chain is not compliant; closing the connection",
                    metadata: ["tls.ct": "\(evaluation.verdictDescription)"])
            }
        } else {
            logger.debug("Certificate Transparency", metadata: ["tls.ct": "\(evaluation.verdictDescription)"])
        }
        return evaluation.allowsConnection
    }
}

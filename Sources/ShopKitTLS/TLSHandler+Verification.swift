import Foundation
import Logging
import NIOCore
import ShopKitOpenSSL
import ShopKitPinning

extension TLSHandler {
    /// The handshake finished: the server counts it; the client checks chain, hostname and pins again (on a resumed
    /// session the cached verified chain, as no verification ran; on a full handshake the pins already passed inside
    /// verification, see ``checkDuringVerification(_:)``).
    func handshakeCompleted(context: ChannelHandlerContext) {
        guard let connection else { return }
        switch role {
        case .server(let server):
            server.statistics.record(resumed: connection.sessionReused)
            if connection.peerSentCertificate { server.statistics.recordClientCertificate() }
            becomeActive(context: context)
            context.fireUserInboundEventTriggered(
                TLSServerHandshakeCompleted(
                    resumed: connection.sessionReused, protocolVersion: connection.protocolVersion,
                    alpnProtocol: connection.alpnProtocol))
        case .client(let client, _, let host, let port, let key):
            guard let (chain, resumed) = establishedChain(context: context, host: host) else { return }
            let policy = pinning.policy
            if policy.refusesUnpinned(host: host, at: client.now()) {
                // Strict hosts: refused like a pin mismatch, on the verified connection, before any byte is sent.
                fail(context: context, unpinnedError(client: client, host: host))
                return
            }
            let verdict = withReportDetails(policy.evaluate(host: host, chain: chain, now: client.now()), port: port)
            guard apply(verdict, client: client, host: host) else {
                if case .mismatch(let report) = verdict { fail(context: context, .pinMismatch(report)) }
                return
            }
            if !resumed, case .matched = verdict { warnIfNoBackup(client: client, host: host, chain: chain) }
            let ct = certificateTransparencyEvaluation(client: client, host: host, chain: chain, resumed: resumed)
            if let ct, !apply(ct.evaluation, client: client, host: host, port: port, chainPEM: nil) {
                fail(context: context, .certificateTransparency(host: host, evaluation: ct.evaluation))
                return
            }
            established = (
                chain, verdict, resumed ? (offered?.verifiedAt ?? client.now()) : client.now(), ct?.timestamps ?? []
            )
            for session in pendingSessions { store(session, cache: client.sessionCache, key: key) }
            pendingSessions = []
            let info = TLSConnectionInfo(
                host: host, port: port, protocolVersion: connection.protocolVersion,
                cipherSuite: connection.cipherSuite, forwardSecrecy: connection.keyExchangeHasForwardSecrecy,
                alpnProtocol: connection.alpnProtocol, verifiedChain: chain,
                presentedChain: resumed ? nil : (try? connection.presentedChain()) ?? nil, pinVerdict: verdict,
                resumed: resumed, certificateTransparency: ct?.evaluation,
                clientCertificateRequest: connection.clientCertificateRequest)
            becomeActive(context: context)
            context.fireUserInboundEventTriggered(TLSHandshakeCompleted(info: info, pinningGeneration: pinning.generation))
        }
    }

    /// The verified chain: OpenSSL's on a full handshake, the cached one on a resumed session.
    private func establishedChain(context: ChannelHandlerContext, host: String) -> (VerifiedChain, Bool)? {
        guard let connection else { return nil }
        if connection.sessionReused {
            // OpenSSL only resumes the session ShopKit offered, which was cached with its verified chain under
            // this host, port, trust and pin set.
            guard let offered else {
                fail(context: context, .handshakeFailed(reason: "the server resumed a session that was not offered"))
                return nil
            }
            logger.debug("TLS session resumed; using the verified chain of the session's full handshake")
            return (offered.verifiedChain, true)
        }
        let result = connection.verifyResult
        guard result.isOK else {
            fail(context: context, verifyError(result, host: host))
            return nil
        }
        guard let chain = try? connection.verifiedChain() else {
            fail(context: context, .untrustedChain(reason: "OpenSSL returned no verified chain", verifyCode: -1))
            return nil
        }
        return (chain, false)
    }

    /// The pin policy on the chain OpenSSL has just verified, run inside its verification (full handshakes; see
    /// `OpenSSLConnection.chainCheck`). An enforced mismatch, or a host no set covers under strict mode, returns
    /// false: the handshake ends at the server's Certificate message, before the client's certificate is sent or
    /// anything is signed with its key. The refusal is logged, reported and thrown by ``handshakeError(_:)``.
    func checkDuringVerification(_ chain: VerifiedChain) -> Bool {
        guard case .client(let client, _, let host, _, _) = role else { return true }
        chainVerifiedDuringHandshake = chain
        let policy = pinning.policy
        if policy.refusesUnpinned(host: host, at: client.now()) {
            refusedDuringVerification = .hostNotPinned(chain)
            return false
        }
        let verdict = policy.evaluate(host: host, chain: chain, now: client.now())
        guard case .mismatch = verdict else { return judgeSingleCertificateChain(chain, client: client, host: host) }
        refusedDuringVerification = .mismatch(verdict, chain)
        return false
    }

    /// Why a strict policy refuses `host`: every set covering it expired, or none does.
    private func unpinnedError(client: TLSClientContext, host: String) -> TLSError {
        let policy = pinning.policy.inForce(at: client.now())
        if let expired = policy.expiredPinSet(for: host, at: client.now()), let expiration = expired.expiration {
            return .pinSetExpired(host: host, pattern: expired.hostPattern.description, expiration: expiration)
        }
        return .hostNotPinned(host: host, patterns: policy.hostPatterns)
    }

    /// The error for a refusal made inside verification: the same error, log line and report as after a
    /// handshake.
    private func refusalError(_ refusal: VerificationRefusal, client: TLSClientContext, host: String, port: Int)
        -> TLSError
    {
        switch refusal {
        case .hostNotPinned:
            return unpinnedError(client: client, host: host)
        case .mismatch(let verdict, _):
            let verdict = withReportDetails(verdict, port: port, chainPEM: connection?.refusedChainPEM)
            _ = apply(verdict, client: client, host: host)
            guard case .mismatch(let report) = verdict else {
                return .handshakeFailed(reason: "the pin check refused the server's chain")
            }
            return .pinMismatch(report)
        }
    }

    /// The verdict with its report (if any) completed by what only the connection knows: the port and the
    /// verified chain as PEM (`chainPEM` when given; none on a resumed session).
    private func withReportDetails(_ verdict: PinVerdict, port: Int, chainPEM: [String]? = nil) -> PinVerdict {
        guard var report = verdict.report else { return verdict }
        report.port = port
        report.validatedChainPEM = chainPEM ?? connection?.verifiedChainPEM() ?? []
        switch verdict {
        case .expired: return .expired(report)
        case .reportOnlyMismatch: return .reportOnlyMismatch(report)
        case .mismatch: return .mismatch(report)
        case .notPinned, .matched: return verdict
        }
    }

    /// Logs the verdict and delivers reports (enforced mismatches too); returns whether the connection may go on.
    ///
    /// The reporter is called on the event loop and must return at once (``PinFailureReporter``'s contract);
    /// ShopKit's HTTP reporter only enqueues.
    private func apply(_ verdict: PinVerdict, client: TLSClientContext, host: String) -> Bool {
        let configuration = client.configuration
        switch verdict {
        case .notPinned:
            if client.unpinnedNotices.firstTime(host) {
                logger.notice(
                    "host is not pinned: no pin set covers it; chain and hostname verified by OpenSSL only",
                    metadata: ["tls.pinSets": "\(pinning.policy.hostPatterns)"])
            } else {
                logger.debug("no pin set for this host; chain and hostname verified by OpenSSL")
            }
        case .matched(let pin, let index):
            logger.debug("pin matched", metadata: ["tls.pin": "\(pin)", "tls.chainIndex": "\(index)"])
        case .expired(let report):
            logger.warning("pin set expired and is not enforced; no configured pin matched the verified chain")
            configuration.pinFailureReporter?.report(report)
        case .reportOnlyMismatch(let report):
            logger.warning(
                "report-only pin set: no pin matched the verified chain; connecting and reporting",
                metadata: ["tls.chainPins": "\(report.chainPins.map { $0.pin.description })"])
            configuration.pinFailureReporter?.report(report)
        case .mismatch(let report):
            // Thrown to the caller as `TLSError.pinMismatch`; the log only adds the chain's pins for debugging.
            logger.debug(
                "pin mismatch: closing the connection",
                metadata: ["tls.chainPins": "\(report.chainPins.map { $0.pin.description })"])
            configuration.pinFailureReporter?.report(report)
            return false
        }
        return true
    }

    /// Logs the pin set's no-backup warning (every pin is on the current chain) after a full handshake, once per
    /// host and client context: a warning per connection would drown the log.
    private func warnIfNoBackup(client: TLSClientContext, host: String, chain: VerifiedChain) {
        guard let warning = pinning.policy.backupWarning(host: host, chain: chain, at: client.now()),
            client.backupWarnings.firstTime(host)
        else { return }
        logger.notice("\(warning.description)", metadata: ["tls.pinSet": "\(warning.hostPattern)"])
    }

    /// A new session from OpenSSL: cache it once the handshake's checks passed, keep it until then.
    func sessionArrived(_ session: OpenSSLSession) {
        guard case .client(let client, _, _, _, let key) = role else { return }
        if established != nil {
            store(session, cache: client.sessionCache, key: key)
        } else if machine.isHandshaking {
            pendingSessions.append(session)
        }
    }

    private func store(_ session: OpenSSLSession, cache: TLSSessionCache, key: TLSSessionCache.Key) {
        guard let established, established.verdict.allowsConnection else { return }
        cache.store(
            .init(
                session: session, verifiedChain: established.chain, verdict: established.verdict,
                signedCertificateTimestamps: established.scts, verifiedAt: established.verifiedAt),
            for: key)
    }

    /// Maps a failed handshake to the most useful error: the pin check's refusal inside verification, then
    /// OpenSSL's verify result if it rejected the peer, then
    /// the client certificate if the server asked for one (see ``clientCertificateError(_:)``).
    func handshakeError(_ error: OpenSSLError) -> TLSError {
        if case .client(let client, _, let host, let port, _) = role, let connection {
            if let refusal = refusedDuringVerification {
                return refusalError(refusal, client: client, host: host, port: port)
            }
            if let evaluation = ctEvaluationDuringHandshake, !evaluation.allowsConnection {
                _ = apply(evaluation, client: client, host: host, port: port, chainPEM: connection.refusedChainPEM)
                return .certificateTransparency(host: host, evaluation: evaluation)
            }
            let result = connection.verifyResult
            if !result.isOK { return verifyError(result, host: host) }
            if let certificateError = clientCertificateError(error) { return certificateError }
        }
        return .handshakeFailed(reason: error.description)
    }

    /// The client-certificate error a failure stands for, once the server asked for a certificate (during the
    /// handshake, or on the first read: a TLS 1.3 server refuses a certificate after the client's handshake is
    /// done). Nil when the failure is not about the client certificate.
    ///
    /// - No identity: ShopKit's certificate callback ended the handshake (policy `.fail`), or the server sent a
    ///   certificate alert after the client went on without one → `.clientCertificateRequired` with the CA names.
    /// - Identity refused by ShopKit before sending (expired, not yet valid, wrong CA) → `.clientCertificateRejected`.
    /// - Identity sent, then a certificate alert from the server → `.clientCertificateRejected` with OpenSSL's alert.
    func clientCertificateError(_ error: OpenSSLError) -> TLSError? {
        guard case .client(let client, _, _, _, _) = role, let request = connection?.clientCertificateRequest else {
            return nil
        }
        switch request.answer {
        case .refused(let reason):
            return .clientCertificateRejected(reason: reason)
        case .noIdentity:
            guard client.configuration.certificateRequestWithoutIdentity == .fail || Self.isCertificateAlert(error)
            else { return nil }
            return .clientCertificateRequired(acceptedIssuers: request.acceptedIssuers)
        case .sent(let subject):
            guard Self.isCertificateAlert(error) else { return nil }
            return .clientCertificateRejected(reason: "the server refused the client certificate \(subject): \(error)")
        }
    }

    /// Whether OpenSSL's queue holds an alert a server sends about a client certificate (bad, unsupported, revoked,
    /// expired, unknown, from an unknown CA, missing, access denied, or a handshake failure after the request).
    static func isCertificateAlert(_ error: OpenSSLError) -> Bool {
        error.queue.contains { entry in
            entry.contains("alert")
                && ["certificate", "unknown ca", "access denied", "handshake failure"].contains { entry.contains($0) }
        }
    }

    private func verifyError(_ result: VerifyResult, host: String) -> TLSError {
        result.isHostnameMismatch
            ? .hostnameMismatch(host: host) : .untrustedChain(reason: result.reason, verifyCode: result.code)
    }
}

/// What the pin check inside OpenSSL's verification refused.
enum VerificationRefusal {
    /// Strict mode, and no live pin set covers the host (the chain is the one OpenSSL verified, for diagnostics).
    case hostNotPinned(VerifiedChain)
    /// An enforced pin set matched no certificate of the verified chain (the verdict holds the report; the chain
    /// is the one OpenSSL verified, for diagnostics such as `pin-check`'s report).
    case mismatch(PinVerdict, VerifiedChain)

    /// The verified chain the pin check refused, if it refused one.
    var refusedChain: VerifiedChain {
        switch self {
        case .hostNotPinned(let chain), .mismatch(_, let chain): return chain
        }
    }
}

import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

extension ServerInspector {
    /// Leaves that expire within this many days (this many days left, or fewer) get a warning.
    package static let expiryWarningDays = 30

    /// Turns the handshake outcome into a report: the pin verdict comes from `PinningPolicy` on the verified
    /// chain; a failed handshake shows the presented chain with no pin marked as matching. The CT evaluation is the
    /// connection's, or, when enforced CT refused the chain, the one the error carries.
    func report(for outcome: Outcome, policy: PinningPolicy) -> ServerReport {
        var report = pinReport(for: outcome, policy: policy)
        let source = certificateTransparencyLogListSource
        if certificateTransparency.mode(for: checkedName) == .disabled {
            if report.tlsVersion != nil {
                report.certificateTransparency = .init(disabledUnder: certificateTransparency, source: source, now: now())
            }
            return report
        }
        let evaluation: CTEvaluation?
        switch outcome {
        case .established(let info): evaluation = info.certificateTransparency
        case .failed(let failure, _): evaluation = failure.tlsError?.certificateTransparency
        }
        guard let evaluation else { return report }
        let section = ServerReport.CertificateTransparency(evaluation, policy: certificateTransparency, source: source)
        report.certificateTransparency = section
        if section.isNotCompliant, evaluation.allowsConnection {
            let why = evaluation.logListStale
                ? "CT is enforced, but the log list is stale (since \(section.logList.staleAfter.ISO8601Format())), so "
                    + "apps act as report-only: they connect and report"
                : "CT is \(section.effectiveMode): apps connect and report it"
            report.warnings.append("the chain is not Certificate Transparency compliant; \(why)")
        }
        return report
    }

    /// ``report(for:policy:)`` without the CT section.
    private func pinReport(for outcome: Outcome, policy: PinningPolicy) -> ServerReport {
        let now = now()
        let configured = pins.map(\.description)
        switch outcome {
        case .established(let info):
            let verdict = policy.evaluate(host: checkedName, chain: info.verifiedChain, now: now)
            var matchedPin: SPKIPin?
            if case .matched(let pin, _) = verdict { matchedPin = pin }
            let verified = info.verifiedChain.certificates.map {
                ServerReport.Certificate($0, now: now, matched: $0.spkiPin == matchedPin)
            }
            let presented = (info.presentedChain?.certificates ?? []).map {
                ServerReport.Certificate($0, now: now, matched: false)
            }
            var warnings = chainWarnings(verified)
            if !info.forwardSecrecy {
                warnings.append(
                    "the server uses static RSA key exchange (\(info.cipherSuite)): no forward secrecy, so its "
                        + "private key decrypts every recorded session; connected only because of --allow-static-rsa: "
                        + "have the server offer ECDHE")
            }
            if let warning = singlePinWarning {
                warnings.append(warning)
            } else if let warning = policy.backupWarning(host: checkedName, chain: info.verifiedChain, at: now) {
                warnings.append(warning.description)
            }
            let mismatch: Bool
            if documentPolicy != nil {
                // The document's policy as an app applies it: only an enforced mismatch refuses (and that ends the
                // handshake, below); an expired or report-only set lets the app connect, which a warning says.
                if case .mismatch = verdict { mismatch = true } else { mismatch = false }
                if let warning = documentWarning(verdict) { warnings.append(warning) }
            } else {
                // pin-check's own pins are report-only only so that the handshake completes: any miss is a mismatch.
                mismatch = matchedPin == nil && !pins.isEmpty
            }
            return withClientCertificate(info.clientCertificateRequest) { ServerReport(
                host: connectHost, port: address.port, servername: checkedName,
                verdict: mismatch ? .pinMismatch : .ok,
                reason: mismatch ? verdict.report?.description : nil,
                tlsVersion: info.protocolVersion, cipher: info.cipherSuite, alpn: info.alpnProtocol,
                verifiedChain: verified, presentedChain: presented, configuredPins: configured,
                matchedPin: matchedPin?.description, warnings: warnings) }
        case .failed(.tls(let error), let details?) where details.pinRefusal != nil:
            // Enforced pins (a client identity is set, or a document's enforced set) refused the verified chain
            // inside the handshake, or a strict document refused a host no live set covers (an expired set).
            let refusal = details.pinRefusal!
            let verified = refusal.verifiedChain.certificates.map { ServerReport.Certificate($0, now: now, matched: false) }
            let presented = (details.presentedChain?.certificates ?? []).map {
                ServerReport.Certificate($0, now: now, matched: false)
            }
            var reason = error.description
            if let pinReport = error.pinFailureReport { reason = pinReport.description }
            if error.code == .pinSetExpired { reason += " (strictHosts: true; apps refuse the host, TLSError.pinSetExpired)" }
            if clientIdentity != nil {
                reason += "\nThe handshake was stopped before the client certificate was sent: with --cert the pins are "
                    + "enforced, as in any ShopKit client."
            }
            var report = withClientCertificate(details.clientCertificateRequest) { ServerReport(
                host: connectHost, port: address.port, servername: checkedName, verdict: .pinMismatch,
                reason: reason, tlsVersion: refusal.protocolVersion, cipher: refusal.cipherSuite,
                alpn: refusal.alpnProtocol, verifiedChain: verified, presentedChain: presented,
                configuredPins: configured, matchedPin: nil,
                warnings: chainWarnings(verified) + (singlePinWarning.map { [$0] } ?? [])) }
            if report.clientCertificate == nil, let identity = clientIdentity {
                // The certificate was withheld before the server's request (if any) was answered: over TLS 1.2 the
                // request follows the server's Certificate, which the pins refused, so it was never read.
                report.clientCertificate = .init(
                    acceptedIssuers: [], sent: nil, requested: nil,
                    withheld: "the pins refused the server's chain, so the handshake stopped before \(identity.subject) "
                        + "could be asked for or sent")
            }
            return report
        case .failed(let error, let details):
            let presented = (details?.presentedChain?.certificates ?? []).map {
                ServerReport.Certificate($0, now: now, matched: false)
            }
            let verdict: ServerReport.Verdict
            switch error.tlsError?.code {
            case .untrustedChain: verdict = .untrusted
            // A strict document's refusal of a host no live set covers; refused after the chain was verified.
            case .pinSetExpired, .hostNotPinned: verdict = .pinMismatch
            case .hostnameMismatch: verdict = .hostnameMismatch
            // Enforced pins (with a client identity) refuse above, with the verified chain; this is a refusal
            // without one, which the handshake does not make.
            case .pinMismatch: verdict = .pinMismatch
            // Enforced CT refused the verified chain (after the chain and the name passed).
            case .certificateTransparency: verdict = .ctNotCompliant
            default: verdict = .connectFailed
            }
            var reason = error.description
            // The reason without OpenSSL's error-queue text, for text output; JSON's reason keeps everything.
            var plainReason: String?
            var openSSLText: String?
            if let issuers = error.tlsError?.acceptedIssuers {
                let from = issuers.isEmpty ? "" : " issued by \(issuers.joined(separator: "; "))"
                reason = "the server requires a client certificate\(from): pass --cert FILE --key FILE"
            } else if let text = error.handshakeFailureText, let phrase = FailureWording.openSSLReason(text) {
                openSSLText = text
                if let hint = FailureWording.handshakeHint(text) {
                    reason = "\(hint) (OpenSSL: \(text))"
                    plainReason = hint
                } else {
                    plainReason = "the TLS handshake failed: \(phrase)"
                }
            } else if let code = error.tlsError?.verifyCode,
                let hint = FailureWording.untrustedHint(
                    code: code, presented: presented.map { ($0.subject, $0.issuer, $0.signatureAlgorithm) })
            {
                reason = "\(error.description)\n\(hint)"
            }
            var report = withClientCertificate(details?.clientCertificateRequest) { ServerReport(
                host: connectHost, port: address.port, servername: checkedName, verdict: verdict,
                reason: reason, tlsVersion: nil, cipher: nil, alpn: nil, verifiedChain: [],
                presentedChain: presented, configuredPins: configured, matchedPin: nil, warnings: []) }
            report.plainReason = plainReason
            report.openSSLText = openSSLText
            return report
        }
    }

    /// The warning for a document's set that lets an app connect without a pin matching: expired (not enforced)
    /// or report-only. Nil for other verdicts.
    private func documentWarning(_ verdict: PinVerdict) -> String? {
        switch verdict {
        case .expired(let report):
            let when = report.expiration.map { " at \(PinSetDocument.timestamp($0))" } ?? ""
            return "the document's pin set \(report.hostPattern?.description ?? checkedName) expired\(when) and is not "
                + "enforced: apps connect to \(checkedName) unpinned (strictHosts: false); no pin matches the chain"
        case .reportOnlyMismatch(let report):
            return "no pin matches, but the document's pin set \(report.hostPattern?.description ?? checkedName) is "
                + "report-only: apps connect to \(checkedName) and report the mismatch"
        case .notPinned, .matched, .mismatch:
            return nil
        }
    }

    /// The document's set applied to the checked name at `now`, as the report labels it; nil without a document.
    func documentPinSet(at now: Date) -> ServerReport.DocumentPinSet? {
        guard let policy = documentPolicy, let set = policy.pinSet(for: checkedName, at: now) else { return nil }
        let enforcement: ServerReport.DocumentPinSet.Enforcement =
            set.isExpired(at: now) ? .expired : set.reportOnly ? .reportOnly : .enforced
        return .init(
            documentVersion: policy.version, strictHosts: policy.unpinnedHosts == .refuse,
            hostPattern: set.hostPattern.description, enforcement: enforcement, expiration: set.expiration)
    }

    /// The warnings about a verified chain itself: its leaf expires within ``expiryWarningDays``.
    private func chainWarnings(_ verified: [ServerReport.Certificate]) -> [String] {
        guard let leaf = verified.first, leaf.daysLeft <= Self.expiryWarningDays else { return [] }
        return [
            "the leaf certificate expires within \(Self.expiryWarningDays) days, in \(leaf.daysLeft) days "
                + "(\(leaf.notAfter.ISO8601Format())): renew it, and make sure its key is pinned"
        ]
    }

    /// The warning for a single pin given (no backup), or nil.
    private var singlePinWarning: String? {
        guard !pins.isEmpty, Set(pins).count < 2 else { return nil }
        return "only one pin given: add a backup pin (a key not in the chain yet), or a key rotation locks clients out"
    }

    /// `report` with the server's client-certificate request, if it made one.
    private func withClientCertificate(_ request: ClientCertificateRequest?, _ report: () -> ServerReport) -> ServerReport {
        var report = report()
        if let request {
            var sent: String?
            if case .sent(let subject) = request.answer { sent = subject }
            var withheld: String?
            if case .refused(let reason) = request.answer { withheld = reason }
            report.clientCertificate = .init(
                acceptedIssuers: request.acceptedIssuers, sent: sent, requested: true, withheld: withheld)
        }
        return report
    }
}

extension ServerReport {
    /// Replaces the "no cipher suite in common" hint with what the static-RSA probe found.
    mutating func noCipherInCommon(_ probe: ServerInspector.CipherProbe?, openSSLText: String) {
        let hint = FailureWording.noCipherInCommonHint(probe)
        reason = "\(hint) (OpenSSL: \(openSSLText))"
        plainReason = hint
    }
}

import Foundation

extension ServerReport {
    /// The report as one JSON object (sorted keys, ISO 8601 dates), as `pin-check --json` prints it; on one
    /// line unless `pretty` (the fleet check prints one object per line).
    package func json(pretty: Bool = true) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if pretty { encoder.outputFormatting.insert(.prettyPrinted) }
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The report for people: TLS details, the chain leaf to root with pins, the verdict and what to do. OpenSSL's
    /// error-queue text of a handshake failure is left out unless `verbose` (`pin-check --verbose`).
    package func text(verbose: Bool = false) -> String {
        var lines = ["\(servername) at \(hostDescription):\(port)"]
        if let proxy { lines.append("  via proxy \(proxy) (CONNECT tunnel)") }
        if let tlsVersion {
            lines.append("  TLS: \(tlsVersion), cipher \(cipher ?? "?"), ALPN \(alpn ?? "none")")
        }
        if !verifiedChain.isEmpty {
            lines.append("Verified chain (leaf to root):")
            lines += Self.describe(verifiedChain)
        }
        if verifiedChain.isEmpty, !presentedChain.isEmpty {
            let state: String
            switch verdict {
            case .hostnameMismatch: state = "it leads to a trusted root, but the name check failed"
            case .untrusted: state = "NOT trusted"
            case .ctNotCompliant:
                state = "it leads to a trusted root and the name matched, but Certificate Transparency refused it"
            // The handshake failed for another reason (key exchange, protocol, client certificate): the chain is
            // not what was refused, and it was not fully checked either.
            default: state = "not the cause of the failure below"
            }
            lines.append("Chain the server sent (\(state); in the order sent):")
            lines += Self.describe(presentedChain)
        }
        if let clientCertificate {
            if clientCertificate.requested == nil {
                lines.append("Client certificate: not sent (\(clientCertificate.withheld ?? "the handshake stopped first"))")
            } else {
                let issuers = clientCertificate.acceptedIssuers.isEmpty
                    ? "any CA" : clientCertificate.acceptedIssuers.joined(separator: "; ")
                lines.append("Client certificate: requested (accepted issuers: \(issuers)); sent: \(clientCertificate.sent ?? "none")")
            }
        }
        if let pinsDocument {
            let expiration = pinsDocument.expiration.map { "expires \($0.ISO8601Format())" } ?? "no expiration"
            let meaning: String
            switch pinsDocument.enforcement {
            case .enforced: meaning = "a mismatch refuses the connection"
            case .reportOnly: meaning = "a mismatch is reported, the app connects"
            case .expired:
                meaning = pinsDocument.strictHosts
                    ? "not enforced; strictHosts: apps refuse the host" : "not enforced; apps connect unpinned"
            }
            lines.append(
                "Pins document: version \(pinsDocument.documentVersion), strictHosts \(pinsDocument.strictHosts); set "
                    + "[\(pinsDocument.hostPattern)] \(pinsDocument.enforcement.rawValue) (\(meaning)), \(expiration)")
        }
        if let certificateTransparency { lines += certificateTransparency.textLines() }
        if !configuredPins.isEmpty {
            lines.append("Pins given: " + configuredPins.joined(separator: ", "))
        }
        lines.append("Verdict: \(verdict.rawValue) (exit \(verdict.exitCode))")
        switch verdict {
        case .ok:
            if let matchedPin { lines.append("  pin \(matchedPin) matched the verified chain") }
        case .pinMismatch:
            if let reason { lines.append("  " + reason.replacingOccurrences(of: "\n", with: "\n  ")) }
            lines.append("Pins to use (no given pin is on the verified chain; these are its leaf and intermediates):")
            lines += pinsToUse.map { "  \($0.pin)  \($0.subject)" }
            lines.append("  and keep a backup pin: the pin of a key that is not deployed yet")
        case .hostnameMismatch:
            if let reason { lines.append("  \(reason)") }
            let names = presentedChain.first?.subjectAlternativeNames ?? []
            lines.append(
                names.isEmpty
                    ? "  the chain leads to a trusted root, but the certificate has no SANs (its CN is never used)"
                    : "  the chain leads to a trusted root, but \(servername) is not in the certificate's SANs: "
                        + names.joined(separator: ", "))
        case .ctNotCompliant:
            // The CT section above has the verdict in full (and JSON's `reason` too).
            lines.append(
                "  Certificate Transparency is enforced and the chain is not compliant (see above): the handshake "
                    + "was ended, as apps with CT enforced end it")
            if !configuredPins.isEmpty { lines.append("  the pins were not judged: the handshake ended before they could be") }
        case .untrusted, .connectFailed:
            if let reason = plainReason ?? reason { lines.append("  " + reason.replacingOccurrences(of: "\n", with: "\n  ")) }
            if verbose, let openSSLText { lines.append("  OpenSSL: \(openSSLText)") }
        }
        for warning in warnings { lines.append("warning: \(warning)") }
        return lines.joined(separator: "\n")
    }

    private var hostDescription: String { host.contains(":") ? "[\(host)]" : host }

    /// The certificates whose pins to configure: the verified chain's leaf and intermediates, not the root.
    var pinsToUse: [Certificate] {
        verifiedChain.count > 1 ? Array(verifiedChain.dropLast()) : verifiedChain
    }

    private static func describe(_ chain: [Certificate]) -> [String] {
        var lines: [String] = []
        for (index, certificate) in chain.enumerated() {
            lines.append("  [\(index)] \(certificate.subject)")
            lines.append("      issuer:    \(certificate.issuer)")
            if !certificate.subjectAlternativeNames.isEmpty {
                lines.append("      SANs:      \(certificate.subjectAlternativeNames.joined(separator: ", "))")
            }
            let left = certificate.daysLeft < 0 ? "expired \(-certificate.daysLeft) days ago" : "\(certificate.daysLeft) days left"
            lines.append(
                "      valid:     \(day(certificate.notBefore)) to \(day(certificate.notAfter)) (\(left))")
            lines.append("      key:       \(certificate.key), signature \(certificate.signatureAlgorithm)")
            lines.append("      pin:       \(certificate.pin)\(certificate.matched ? "  <- matched" : "")")
        }
        return lines
    }

    private static func day(_ date: Date) -> String { String(date.ISO8601Format().prefix(10)) }
}

/// The formats `pin-check --print-config` writes a server's pins in.
package enum PinConfigFormat: String, Sendable, CaseIterable {
    /// A ShopKit `PinSet` in Swift.
    case shopkit
    /// An OkHttp `CertificatePinner` in Kotlin.
    case okhttp
    /// curl's `--pinnedpubkey` value.
    case curl
    /// An Android Network Security Config `<pin-set>`.
    case android

    /// The leaf and intermediate pins of `report`'s verified chain (not the root), ready to paste, with a
    /// reminder to add a backup pin. Nil when there is no verified chain to take pins from.
    package func render(_ report: ServerReport) -> String? {
        guard !report.verifiedChain.isEmpty else { return nil }
        return render(
            host: report.servername, pins: report.pinsToUse.map(\.pin), placeholder: "sha256/BACKUP…",
            comment: "add a backup pin: the pin of a key that is not in this chain yet (the next leaf or CA key)")
    }

    /// `pins` for `host` in this format, with `comment` on top and, where the format has a list, a commented-out
    /// `placeholder` entry for the pin still to add.
    package func render(host: String, pins: [String], placeholder: String, comment: String) -> String {
        switch self {
        case .shopkit:
            let list = pins.map { "        \"\($0)\"," }.joined(separator: "\n")
            return """
                // \(comment)
                let pinSet = try PinSet(
                    host: "\(host)",
                    pins: [
                \(list)
                        // "\(placeholder)",
                    ])
                """
        case .okhttp:
            let adds = pins.map { "    .add(\"\(host)\", \"\($0)\")" }.joined(separator: "\n")
            return "// \(comment)\nval certificatePinner = CertificatePinner.Builder()\n\(adds)\n    .build()"
        case .curl:
            let value = pins.map { $0.replacingOccurrences(of: "sha256/", with: "sha256//") }.joined(separator: ";")
            return "# \(comment)\n--pinnedpubkey '\(value)'"
        case .android:
            let entries = pins.map { "        <pin digest=\"SHA-256\">\($0.dropFirst("sha256/".count))</pin>" }
            return """
                <!-- \(comment) -->
                <network-security-config>
                    <domain-config>
                        <domain includeSubdomains="false">\(host)</domain>
                        <pin-set>
                \(entries.joined(separator: "\n"))
                        </pin-set>
                    </domain-config>
                </network-security-config>
                """
        }
    }
}

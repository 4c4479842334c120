import Foundation
import NIOCore
import NIOPosix
import ShopKitHTTPS

/// Plain sentences for the failures `pin-check` meets most, like curl's: what happened and what to do, never
/// NIO's internal type names or a bare OpenSSL string.
package enum FailureWording {
    /// A failed TCP connect to `host:port` in one sentence: the name did not resolve, nothing listens, the host
    /// is unreachable; otherwise the system's own error text (``SocketFailureWording``).
    package static func connectFailure(host: String, port: Int, error: any Error) -> String {
        let reason = SocketFailureWording.reason(error)
        if reason == SocketFailureWording.unresolved { return "could not resolve host \(host) (check the name and DNS)" }
        return "could not connect to \(host) port \(port): \(reason)"
    }

    /// A connection that failed during the handshake without a TLS error (a reset, a broken pipe), in one sentence.
    package static func handshakeTransportFailure(_ error: any Error) -> String {
        if let error = error as? IOError, error.errnoCode == ECONNRESET {
            return "the connection was reset during the TLS handshake (by the server or something on the path)"
        }
        return "the connection failed during the TLS handshake: \(SocketFailureWording.reason(error))"
    }

    /// The reason phrase of OpenSSL's first queued error (`…:SSL routines::wrong version number` → `wrong version
    /// number`), or nil when `text` holds no OpenSSL error-queue entry.
    package static func openSSLReason(_ text: String) -> String? {
        guard let start = text.range(of: "error:") else { return nil }
        let entry = text[start.lowerBound...].prefix { $0 != ";" }
        guard let last = entry.lastIndex(of: ":") else { return nil }
        let phrase = entry[entry.index(after: last)...].trimmingCharacters(in: .whitespaces)
        return phrase.isEmpty ? nil : phrase
    }

    /// A plain hint for a handshake failure whose OpenSSL text is one of the common ones, or nil.
    ///
    /// | OpenSSL says | hint |
    /// | --- | --- |
    /// | `tlsv1 alert protocol version`, `unsupported protocol` | protocol too old |
    /// | `excessive message size` | certificate list over 100 KiB |
    /// | `dh key too small` | DH key too small (key exchange, not the chain) |
    /// | `certificate required` alert | client certificate required |
    /// | `no shared cipher`, `no ciphers available`, `sslv3 alert handshake failure` | no cipher in common |
    package static func handshakeHint(_ openSSLText: String) -> String? {
        let text = openSSLText.lowercased()
        if text.contains("alert protocol version") || text.contains("unsupported protocol") {
            return "the server speaks only a TLS version older than 1.2 (protocol too old): ShopKit needs TLS 1.2 "
                + "or later; the server must be upgraded"
        }
        if text.contains("excessive message size") {
            return "the server's certificate list is over 100 KiB, more than OpenSSL accepts: the server sends too "
                + "many or too large certificates"
        }
        if text.contains("dh key too small") {
            return "the server's Diffie-Hellman key is too small: a key exchange failure, not a certificate problem; "
                + "the server needs a DH group of 2048 bits or more, or ECDHE"
        }
        if text.contains("certificate required") {
            return "the server requires a client certificate: pass --cert FILE --key FILE"
        }
        if isNoCipherInCommon(text) { return noCipherInCommonHint(nil) }
        return nil
    }

    /// Whether OpenSSL's text says the server shares no cipher suite with the client (or refused the ClientHello
    /// with a handshake-failure alert, which is how servers say it).
    package static func isNoCipherInCommon(_ openSSLText: String) -> Bool {
        let text = openSSLText.lowercased()
        return text.contains("no shared cipher") || text.contains("no ciphers available")
            || text.contains("alert handshake failure")
    }

    /// The "no cipher suite in common" hint, made exact by what `ServerInspector`'s static-RSA probe found (nil:
    /// no probe ran).
    ///
    /// There is no opt-in for finite-field DHE or for CBC suites, in the library or in pin-check: browsers dropped
    /// DHE (Chrome in 2016), and CBC's padding oracles are why TLS 1.3 has AEAD only. Only static RSA has an opt-in,
    /// for servers that cannot be upgraded, because that is the one legacy kind still met in practice.
    package static func noCipherInCommonHint(_ probe: ServerInspector.CipherProbe?) -> String {
        let ours = "no cipher suite in common: the server offers none of ShopKit's (TLS 1.3, or TLS 1.2 with ECDHE "
            + "and AES-GCM or ChaCha20-Poly1305)"
        switch probe {
        case .staticRSA(let cipher) where cipher.contains("GCM"):
            return "\(ours); it does accept static RSA key exchange (\(cipher)): pass --allow-static-rsa to connect "
                + "without forward secrecy, and have the server offer ECDHE"
        case .staticRSA(let cipher):
            let suite = cipher.isEmpty ? "" : " (\(cipher))"
            return "\(ours); of the rest, it accepts only static RSA key exchange with a CBC cipher\(suite): pass --allow-static-rsa "
                + "only if the server cannot be fixed, as it then connects with neither forward secrecy nor AEAD; "
                + "have the server offer ECDHE with AES-GCM"
        case .weakKey(let key):
            return "no signature algorithm fits the server's key: the server's key (\(key)) is too small to sign "
                + "the TLS 1.3 handshake with (RSA-PSS needs more than 512 bits), and ShopKit refuses RSA keys under "
                + "2048 bits on any version; the server needs a new key (RSA 2048 or more, or ECDSA P-256), not other "
                + "cipher suites"
        case .nothingShopKitOffers:
            return "\(ours), nor static RSA: most likely it offers only finite-field DHE suites or only CBC suites, "
                + "which ShopKit never offers, and no option changes that; the server must offer ECDHE with AES-GCM or "
                + "ChaCha20-Poly1305, or TLS 1.3 (a TLS 1.3 server also ends here when no signature algorithm fits its "
                + "key, such as an RSA key under 2048 bits)"
        case nil:
            return "\(ours); a server that offers only finite-field DHE or only CBC suites ends here too, and no "
                + "option reaches it; for a server with static RSA key exchange only, pass --allow-static-rsa"
        }
    }

    /// Words for OpenSSL's verify errors that do not say what to do by themselves, using the chain the server
    /// sent (leaf first, in its order) to name the certificate at fault; nil for the others.
    ///
    /// | code | OpenSSL says | said here |
    /// | --- | --- | --- |
    /// | 20 | unable to get local issuer certificate | where the chain sent stops: the leaf's issuer was not sent (most likely a missing intermediate; else a private root to pass with `--ca-file`), or the chain sent ends at a CA whose issuer was neither sent nor trusted (an untrusted CA, or one more intermediate left out) |
    /// | 19 | self-signed certificate in certificate chain | the chain ends at a self-signed root that is not trusted here |
    /// | 26 | unsuitable certificate purpose | a certificate may not be used by a TLS server (its extended key usage), or the chain is out of order |
    /// | 68 | CA signature digest algorithm too weak | the certificate signed with SHA-1 or MD5, by name |
    package static func untrustedHint(code: Int, presented: [(subject: String, issuer: String, signature: String)]) -> String? {
        switch code {
        case 20:
            // Walk from the leaf along issuer names through what was sent: the first certificate whose issuer was
            // not sent is where OpenSSL could go no further.
            guard let leaf = presented.first else { return nil }
            var index = 0
            var visited: Set<Int> = [0]
            while let next = presented.indices.first(where: { presented[$0].subject == presented[index].issuer }),
                visited.insert(next).inserted
            {
                index = next
            }
            // Where it stops, the issuer was neither sent nor trusted: a root not trusted here, or an intermediate
            // the server left out. Nothing in the chain sent tells which, so the hint names both, likelier first.
            let stuck = presented[index]
            if index == 0 {
                return "the server did not send the certificate of \(leaf.issuer), which issued its own certificate "
                    + "(\(leaf.subject)), and it is not a trusted root here: most likely an intermediate certificate "
                    + "is missing, and the server must send its intermediate certificates after its own (a browser "
                    + "may fetch them; ShopKit does not); if \(leaf.issuer) is a private CA's root, which issues server "
                    + "certificates itself, pass its certificate with --ca-file"
            }
            return "the chain the server sent ends at \(stuck.subject), issued by \(stuck.issuer), which the server did "
                + "not send and which is not a trusted root here: either the server's CA is not trusted (if it is a "
                + "private CA, pass its root with --ca-file), or \(stuck.issuer) is an intermediate certificate that "
                + "the server leaves out (it must send it after \(stuck.subject))"
        case 19:
            guard let root = presented.last(where: { $0.subject == $0.issuer }) else { return nil }
            return "the chain the server sent ends at the self-signed root \(root.subject), which is not trusted "
                + "here (if it is a private CA, pass its certificate with --ca-file)"
        case 26:
            return "a certificate of the chain may not be used by a TLS server: the server's certificate was not "
                + "issued for TLS servers (its extended key usage leaves out serverAuth), or the server sends its "
                + "certificates in the wrong order (its own first, then each issuer)"
        case 68:
            guard
                let weak = presented.first(where: {
                    $0.subject != $0.issuer
                        && ["sha1", "md5"].contains(where: $0.signature.lowercased().contains)
                })
            else { return nil }
            let digest = weak.signature.lowercased().contains("md5") ? "MD5" : "SHA-1"
            return "the certificate \(weak.subject) is signed with \(digest) (\(weak.signature)), which ShopKit "
                + "refuses: its CA (\(weak.issuer)) must issue it again with SHA-256"
        default:
            return nil
        }
    }
}

import COpenSSL
import ShopKitPinning

/// OpenSSL's verdict on the peer's chain and name (`SSL_get_verify_result`), in words.
package struct VerifyResult: Sendable, Equatable, CustomStringConvertible {
    /// The `X509_V_*` code; 0 is `X509_V_OK`.
    package let code: Int
    /// `X509_verify_cert_error_string` for the code.
    package let reason: String

    /// The chain and the name were accepted.
    package var isOK: Bool { code == Int(X509_V_OK) }
    /// The certificate does not cover the requested host name or IP address.
    package var isHostnameMismatch: Bool {
        code == Int(X509_V_ERR_HOSTNAME_MISMATCH) || code == Int(X509_V_ERR_IP_ADDRESS_MISMATCH)
    }

    package var description: String { "\(reason) (\(code))" }
}

/// The certificates the peer *sent*, leaf first, exactly as received (`SSL_get_peer_cert_chain`).
///
/// For diagnostics only. It is deliberately a different type from `VerifiedChain`, so it can never reach the
/// pin check: a certificate a server sends that is not on the verified path must never match a pin.
package struct PresentedChain: Sendable, Hashable {
    /// The sent certificates, in the order received.
    package let certificates: [CertificateInfo]
}

extension OpenSSLConnection {
    /// OpenSSL's verify result for the peer, in words. Meaningful after the handshake ran (or failed).
    package var verifyResult: VerifyResult {
        let code = withSSL { SSL_get_verify_result($0) }
        return VerifyResult(code: code, reason: String(cString: X509_verify_cert_error_string(code)))
    }

    /// The chain OpenSSL built and verified (`SSL_get0_verified_chain`), leaf first; nil on a resumed
    /// session (OpenSSL keeps none) or when verification did not succeed.
    ///
    /// - Warning: This is the only source of `VerifiedChain`. It is built only when the verify result is OK.
    package func verifiedChain() throws(OpenSSLError) -> VerifiedChain? {
        guard verifyResult.isOK else { return nil }
        let certificates = try withSSL { ssl throws(OpenSSLError) -> [CertificateInfo]? in
            guard let stack = SSL_get0_verified_chain(ssl) else { return nil }
            return try Self.infos(of: stack)
        }
        guard let certificates, !certificates.isEmpty else { return nil }
        return VerifiedChain(verifiedCertificates: certificates)
    }

    /// The chain the peer sent, for diagnostics. Never use it for trust decisions.
    package func presentedChain() throws(OpenSSLError) -> PresentedChain? {
        let certificates = try withSSL { ssl throws(OpenSSLError) -> [CertificateInfo]? in
            guard let stack = SSL_get_peer_cert_chain(ssl) else { return nil }
            return try Self.infos(of: stack)
        }
        return certificates.map(PresentedChain.init(certificates:))
    }

    private static func infos(of stack: OpaquePointer) throws(OpenSSLError) -> [CertificateInfo] {
        var result: [CertificateInfo] = []
        for index in 0..<shopkit_sk_X509_num(stack) {
            guard let x509 = shopkit_sk_X509_value(stack, index) else { continue }
            result.append(try OpenSSLCertificate(borrowing: x509).info)
        }
        return result
    }

    /// The negotiated protocol, e.g. `TLSv1.3`.
    package var protocolVersion: String { withSSL { String(cString: SSL_get_version($0)) } }

    /// The negotiated cipher suite, e.g. `TLS_AES_256_GCM_SHA384`.
    ///
    /// During a TLS 1.2 handshake (or after one failed) the suite the ServerHello chose is still pending
    /// (`SSL_get_pending_cipher`); it is reported then, and "" before any ServerHello.
    package var cipherSuite: String {
        withSSL { ssl in
            (SSL_get_current_cipher(ssl) ?? SSL_get_pending_cipher(ssl)).map { String(cString: SSL_CIPHER_get_name($0)) }
                ?? ""
        }
    }

    /// Whether the negotiated key exchange has forward secrecy (`SSL_CIPHER_get_kx_nid`: ECDHE, DHE, or TLS 1.3's
    /// "any", which is always (EC)DHE); false for static RSA (`kRSA`) and PSK-only exchanges.
    package var keyExchangeHasForwardSecrecy: Bool {
        withSSL { ssl in
            guard let cipher = SSL_get_current_cipher(ssl) else { return false }
            let kx = SSL_CIPHER_get_kx_nid(cipher)
            return [NID_kx_ecdhe, NID_kx_dhe, NID_kx_any, NID_kx_ecdhe_psk, NID_kx_dhe_psk].contains(kx)
        }
    }

    /// The ALPN protocol both sides agreed on, if any.
    package var alpnProtocol: String? {
        withSSL { ssl in
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            guard let data, length > 0 else { return nil }
            return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
        }
    }

    /// Whether the peer sent a certificate (`SSL_get0_peer_certificate`): on a server, whether the client's
    /// Certificate message carried one. Test servers count it, so tests can tell whether a client sent its identity.
    package var peerSentCertificate: Bool { withSSL { SSL_get0_peer_certificate($0) != nil } }

    /// Whether this handshake resumed an earlier session (no certificates were exchanged).
    package var sessionReused: Bool { withSSL { SSL_session_reused($0) == 1 } }
}

import COpenSSL

extension OpenSSLConnection {
    /// The verified chain (`SSL_get0_verified_chain`) as PEM `CERTIFICATE` blocks, leaf first: what a pin failure
    /// report carries (TrustKit's `validated-certificate-chain`). Empty on a resumed session, when verification
    /// did not succeed, or when a certificate cannot be encoded.
    package func verifiedChainPEM() -> [String] {
        guard verifyResult.isOK else { return [] }
        return withSSL { ssl -> [String] in
            guard let stack = SSL_get0_verified_chain(ssl) else { return [] }
            var blocks: [String] = []
            for index in 0..<shopkit_sk_X509_num(stack) {
                guard let x509 = shopkit_sk_X509_value(stack, index) else { continue }
                blocks.append(OpenSSLCertificate(borrowing: x509).pem)
            }
            return blocks
        }
    }
}

extension OpenSSLConnection {
    /// The chain the peer sent (`SSL_get_peer_cert_chain`) as PEM blocks, in the order received: for reports
    /// only (RFC 9163's `served-certificate-chain`), never for trust. Empty on a resumed session.
    package func peerChainPEM() -> [String] {
        withSSL { ssl -> [String] in
            guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
            return (0..<shopkit_sk_X509_num(stack)).compactMap { index in
                shopkit_sk_X509_value(stack, index).map { OpenSSLCertificate(borrowing: $0).pem }
            }
        }
    }
}

extension OpenSSLCertificate {
    /// The certificate as one PEM `CERTIFICATE` block (`PEM_write_bio_X509`); empty if OpenSSL cannot encode it.
    package var pem: String {
        withX509 { x509 in withWritableBIO { bio in _ = PEM_write_bio_X509(bio, x509) } }
    }
}

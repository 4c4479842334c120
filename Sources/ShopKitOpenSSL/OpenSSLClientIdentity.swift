import COpenSSL
import Foundation

/// A client certificate chain and its private key (mutual TLS), parsed once and owned.
///
/// The key is one `OpenSSLKey` (one `EVP_PKEY` reference, freed in its `deinit`; OpenSSL clears private key
/// material when the last reference goes); a client context using this identity takes a reference of its own.
/// The PEM or PKCS#12 bytes and the passphrase are read from `SecureBytes`, which wipe themselves, and never
/// from a Swift `String`. Nothing of the key appears in an error: only OpenSSL's error reasons do.
package final class OpenSSLClientIdentity: Sendable {
    /// The certificates sent to the server, leaf first.
    package let chain: [OpenSSLCertificate]
    /// The leaf's private key.
    let key: OpenSSLKey
    /// SHA-256 of the leaf's DER, as lowercase hex: what the identity is known by (session-cache keys, logs).
    package let fingerprint: String

    private init(chain: [OpenSSLCertificate], key: OpenSSLKey) throws(OpenSSLError) {
        guard let leaf = chain.first else {
            throw OpenSSLError(operation: "client identity", queue: ["no certificate was given"])
        }
        OpenSSLError.clearQueue()
        let matches = leaf.withX509 { x509 in key.withKey { X509_check_private_key(x509, $0) } }
        guard matches == 1 else {
            _ = OpenSSLError.drainQueue()
            throw OpenSSLError(
                operation: "client identity", queue: ["the private key does not belong to the first certificate"])
        }
        self.chain = chain
        self.key = key
        self.fingerprint = try SHA256Checksum.digest(leaf.derBytes).map { String(format: "%02x", $0) }.joined()
    }

    /// A chain (PEM, leaf first) and a PEM private key (PKCS#8, traditional RSA or EC, encrypted or not).
    ///
    /// - Parameter passphrase: decrypts an encrypted key; without one, an encrypted key fails to load (OpenSSL's
    ///   terminal prompt is never used).
    package static func pem(
        certificateChain: String, privateKey: SecureBytes, passphrase: SecureBytes?
    ) throws(OpenSSLError) -> OpenSSLClientIdentity {
        let chain = try OpenSSLCertificate.parsePEM(certificateChain)
        // The callback reads the passphrase through an unretained pointer; `passphrase` outlives the call.
        let userData = passphrase.map { Unmanaged.passUnretained($0).toOpaque() }
        let key = try withExtendedLifetime(passphrase) { () throws(OpenSSLError) -> OpenSSLKey in
            try withReadBIO(privateKey) { bio throws(OpenSSLError) in
                guard let key = PEM_read_bio_PrivateKey(bio, nil, passphraseCallback, userData) else {
                    throw OpenSSLError.drain("PEM_read_bio_PrivateKey (client key)")
                }
                return OpenSSLKey(takingOwnership: key)
            }
        }
        return try OpenSSLClientIdentity(chain: chain, key: key)
    }

    /// A PKCS#12 bundle (`.p12`/`.pfx`): its certificate, private key and extra certificates (sent after the leaf).
    package static func pkcs12(_ bundle: SecureBytes, passphrase: SecureBytes?) throws(OpenSSLError) -> OpenSSLClientIdentity {
        try withReadBIO(bundle) { bio throws(OpenSSLError) in
            guard let p12 = d2i_PKCS12_bio(bio, nil) else { throw OpenSSLError.drain("d2i_PKCS12_bio") }
            defer { PKCS12_free(p12) }
            var key: OpaquePointer?
            var leaf: OpaquePointer?
            var extra: OpaquePointer?
            let parsed = withNULTerminated(passphrase) { PKCS12_parse(p12, $0, &key, &leaf, &extra) }
            // Own whatever PKCS12_parse handed out before deciding anything, so nothing leaks on failure.
            let ownedKey = key.map(OpenSSLKey.init(takingOwnership:))
            let ownedLeaf = leaf.map(OpenSSLCertificate.init(takingOwnership:))
            var others: [OpenSSLCertificate] = []
            if let extra {
                for index in 0..<shopkit_sk_X509_num(extra) {
                    if let x509 = shopkit_sk_X509_value(extra, index) { others.append(OpenSSLCertificate(borrowing: x509)) }
                }
                shopkit_sk_X509_pop_free(extra)
            }
            guard parsed == 1 else { throw OpenSSLError.drain("PKCS12_parse (wrong passphrase or not a PKCS#12 bundle)") }
            guard let ownedKey, let ownedLeaf else {
                throw OpenSSLError(operation: "PKCS12_parse", queue: ["the bundle holds no private key and certificate"])
            }
            return try OpenSSLClientIdentity(chain: [ownedLeaf] + others, key: ownedKey)
        }
    }

    /// Uses this identity in a client context: leaf, chain certificates, key (each with a reference of its own).
    func install(in ctx: OpaquePointer) throws(OpenSSLError) {
        try chain[0].withX509 { x509 throws(OpenSSLError) in
            try check(SSL_CTX_use_certificate(ctx, x509), "SSL_CTX_use_certificate (client)")
        }
        for certificate in chain.dropFirst() {
            try certificate.withX509 { x509 throws(OpenSSLError) in
                try check(shopkit_SSL_CTX_add1_chain_cert(ctx, x509), "SSL_CTX_add1_chain_cert (client)")
            }
        }
        try key.withKey { pkey throws(OpenSSLError) in
            try check(SSL_CTX_use_PrivateKey(ctx, pkey), "SSL_CTX_use_PrivateKey (client)")
        }
        try check(SSL_CTX_check_private_key(ctx), "SSL_CTX_check_private_key (client key does not match its certificate)")
    }
}

/// Runs `body` with a read-only memory BIO straight over `bytes` (no copy is made, so none is left unwiped).
private func withReadBIO<T>(
    _ bytes: SecureBytes, _ body: (OpaquePointer) throws(OpenSSLError) -> T
) throws(OpenSSLError) -> T {
    try bytes.withUnsafeBytes { buffer throws(OpenSSLError) in
        OpenSSLError.clearQueue()
        guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(clamping: buffer.count)) else {
            throw OpenSSLError.drain("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// Calls `body` with a NUL-terminated copy of `passphrase` (wiped afterwards), or nil for none.
private func withNULTerminated<T>(_ passphrase: SecureBytes?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let passphrase else { return body(nil) }
    let terminated = SecureBytes(count: passphrase.count + 1) { (buffer) throws(Never) in
        passphrase.withUnsafeBytes { buffer.copyMemory(from: $0) }
    }
    return terminated.withUnsafeBytes { body($0.baseAddress?.assumingMemoryBound(to: CChar.self)) }
}

/// OpenSSL's `pem_password_cb`: copies the `SecureBytes` behind `userData` into `buffer`; -1 when there is none
/// or it does not fit, so OpenSSL never falls back to prompting on a terminal.
private let passphraseCallback:
    @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { buffer, size, _, userData in
    guard let buffer, let userData else { return -1 }
    let passphrase = Unmanaged<SecureBytes>.fromOpaque(userData).takeUnretainedValue()
    return passphrase.withUnsafeBytes { bytes in
        guard bytes.count <= Int(size), let base = bytes.baseAddress else { return -1 }
        UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count)
        return Int32(bytes.count)
    }
}

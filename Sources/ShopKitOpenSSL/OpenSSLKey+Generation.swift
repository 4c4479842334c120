import COpenSSL

extension OpenSSLKey {
    /// The key types a new (backup) key can have.
    package enum GeneratedType: String, Sendable, CaseIterable {
        /// ECDSA on P-256 (prime256v1): the default, what most CAs and TLS stacks expect.
        case ecdsaP256 = "ecdsa-p256"
        /// RSA with a 2048-bit modulus.
        case rsa2048 = "rsa-2048"
        /// Ed25519 (few public CAs issue it yet).
        case ed25519

        /// e.g. `ECDSA P-256`, as `keyDescription` prints it.
        package var displayName: String {
            switch self {
            case .ecdsaP256: return "ECDSA P-256"
            case .rsa2048: return "RSA 2048"
            case .ed25519: return "Ed25519"
            }
        }
    }

    /// A new key pair from OpenSSL's default random generator (`EVP_PKEY_generate`).
    ///
    /// - Warning: The private key is secret: write it only with ``withPrivateKeyPEM(_:)``.
    package static func generate(_ type: GeneratedType) throws(OpenSSLError) -> OpenSSLKey {
        OpenSSLError.clearQueue()
        let algorithm: String
        switch type {
        case .ecdsaP256: algorithm = "EC"
        case .rsa2048: algorithm = "RSA"
        case .ed25519: algorithm = "ED25519"
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
            throw OpenSSLError.drain("EVP_PKEY_CTX_new_from_name(\(algorithm))")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { throw OpenSSLError.drain("EVP_PKEY_keygen_init") }
        switch type {
        case .ecdsaP256:
            guard EVP_PKEY_CTX_set_group_name(context, "P-256") == 1 else {
                throw OpenSSLError.drain("EVP_PKEY_CTX_set_group_name(P-256)")
            }
        case .rsa2048:
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048) == 1 else {
                throw OpenSSLError.drain("EVP_PKEY_CTX_set_rsa_keygen_bits(2048)")
            }
        case .ed25519:
            break
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else { throw OpenSSLError.drain("EVP_PKEY_generate") }
        return OpenSSLKey(takingOwnership: key)
    }

    /// Calls `body` with the private key as unencrypted PKCS#8 PEM (`PEM_write_bio_PrivateKey`).
    ///
    /// The PEM is written into an OpenSSL secure-memory BIO (`BIO_s_secmem`, wiped when freed) and copied into
    /// ``SecureBytes`` (wiped when released); no `String` or `Array` copy of it is made.
    ///
    /// - Warning: The bytes are secret: they must not escape `body` (write them to a `0600` file, nothing else).
    package func withPrivateKeyPEM<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws -> R {
        OpenSSLError.clearQueue()
        guard let bio = BIO_new(BIO_s_secmem()) else { throw OpenSSLError.drain("BIO_new(BIO_s_secmem)") }
        defer { BIO_free(bio) }
        guard withKey({ PEM_write_bio_PrivateKey(bio, $0, nil, nil, 0, nil, nil) }) == 1 else {
            throw OpenSSLError.drain("PEM_write_bio_PrivateKey")
        }
        var data: UnsafeMutablePointer<CChar>?
        let length = shopkit_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw OpenSSLError(operation: "PEM_write_bio_PrivateKey", queue: ["no output"]) }
        let secret = SecureBytes(count: length) { (buffer) throws(Never) in
            buffer.copyMemory(from: UnsafeRawBufferPointer(start: data, count: length))
        }
        return try secret.withUnsafeBytes(body)
    }
}

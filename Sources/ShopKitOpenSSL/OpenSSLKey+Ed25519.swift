import COpenSSL

/// Ed25519 signatures (RFC 8032) through OpenSSL's EVP interface: what verifies a signed pin-set document
/// (JWS `EdDSA`, RFC 8037) and what `pin-check sign-pins` signs it with.
///
/// Ed25519 is a "one-shot" algorithm in OpenSSL: `EVP_DigestSign`/`EVP_DigestVerify` with a NULL digest, over the
/// whole message at once.
extension OpenSSLKey {
    /// The length of an Ed25519 signature.
    package static let ed25519SignatureLength = 64

    /// Whether this is an Ed25519 key (`EVP_PKEY_is_a(key, "ED25519")`).
    package var isEd25519: Bool { withKey { EVP_PKEY_is_a($0, "ED25519") == 1 } }

    /// The public half as PEM `PUBLIC KEY` (SubjectPublicKeyInfo): what an app embeds to verify signatures.
    package var publicKeyPEM: String {
        get throws(OpenSSLError) {
            OpenSSLError.clearQueue()
            guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLError.drain("BIO_new") }
            defer { BIO_free(bio) }
            guard withKey({ PEM_write_bio_PUBKEY(bio, $0) }) == 1 else { throw OpenSSLError.drain("PEM_write_bio_PUBKEY") }
            var data: UnsafeMutablePointer<CChar>?
            let length = shopkit_BIO_get_mem_data(bio, &data)
            guard length > 0, let data else { throw OpenSSLError(operation: "PEM_write_bio_PUBKEY", queue: ["no output"]) }
            return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        }
    }

    /// An unencrypted PEM private key read straight from `pem` (a wiped buffer: no `String` copy of the key is made).
    ///
    /// - Warning: The key is secret: it never appears in an error or a log, only OpenSSL's error reasons do.
    package static func privateKey(pem: SecureBytes) throws(OpenSSLError) -> OpenSSLKey {
        try pem.withUnsafeBytes { buffer throws(OpenSSLError) in
            OpenSSLError.clearQueue()
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(clamping: buffer.count)) else {
                throw OpenSSLError.drain("BIO_new_mem_buf")
            }
            defer { BIO_free(bio) }
            let (read, asked) = PEMBlocks.withoutPassphrase { flag in PEM_read_bio_PrivateKey(bio, nil, noPEMPassphrase, flag) }
            guard let key = read else {
                if asked {
                    OpenSSLError.clearQueue()
                    throw OpenSSLError(operation: "PEM_read_bio_PrivateKey", queue: [PEMBlocks.encryptedReason])
                }
                throw OpenSSLError.drain("PEM_read_bio_PrivateKey")
            }
            return OpenSSLKey(takingOwnership: key)
        }
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` under this (public or private) key.
    ///
    /// False for any other key type, a signature of the wrong length, or a signature that does not verify;
    /// OpenSSL's error queue is left empty either way (a bad signature is an answer, not an error).
    package func verifiesEd25519(signature: [UInt8], of message: [UInt8]) -> Bool {
        guard isEd25519, signature.count == Self.ed25519SignatureLength else { return false }
        OpenSSLError.clearQueue()
        defer { OpenSSLError.clearQueue() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return withKey { key in
            guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
            return signature.withUnsafeBufferPointer { signature in
                message.withUnsafeBufferPointer { message in
                    EVP_DigestVerify(context, signature.baseAddress, signature.count, message.baseAddress, message.count) == 1
                }
            }
        }
    }

    /// The Ed25519 signature of `message` with this private key.
    ///
    /// - Throws: `OpenSSLError` when the key is not an Ed25519 private key or OpenSSL fails.
    package func signEd25519(_ message: [UInt8]) throws(OpenSSLError) -> [UInt8] {
        guard isEd25519 else {
            throw OpenSSLError(operation: "EVP_DigestSign", queue: ["the key is not an Ed25519 key"])
        }
        OpenSSLError.clearQueue()
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drain("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        return try withKey { key throws(OpenSSLError) -> [UInt8] in
            guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else {
                throw OpenSSLError.drain("EVP_DigestSignInit")
            }
            var signature = [UInt8](repeating: 0, count: Self.ed25519SignatureLength)
            var length = signature.count
            let signed = signature.withUnsafeMutableBufferPointer { output in
                message.withUnsafeBufferPointer { input in
                    EVP_DigestSign(context, output.baseAddress, &length, input.baseAddress, input.count)
                }
            }
            guard signed == 1, length == Self.ed25519SignatureLength else { throw OpenSSLError.drain("EVP_DigestSign") }
            return signature
        }
    }
}

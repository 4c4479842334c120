import COpenSSL

/// AES-256-GCM through OpenSSL EVP: 32-byte key, 12-byte nonce, 16-byte tag, additional authenticated data.
///
/// Why GCM: one pass gives confidentiality and integrity, and the header can be bound in as AAD.
///
/// - Warning: A (key, nonce) pair must never be used twice; draw nonces from ``SecureRandom`` and keep the
///   number of messages per key far below 2^32.
package enum AES256GCM {
    /// Key length in bytes.
    package static let keySize = 32
    /// Nonce length in bytes.
    package static let nonceSize = 12
    /// Tag length in bytes.
    package static let tagSize = 16

    /// Encrypts `plaintext` under `key` and `nonce`, authenticating `aad` too; returns ciphertext and tag.
    package static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecureBytes, nonce: [UInt8], aad: [UInt8]
    ) throws(OpenSSLError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        try checkSizes(key: key, nonce: nonce, operation: "AES-256-GCM seal")
        let context = try GCMCipherContext()
        OpenSSLError.clearQueue()
        let initialised = key.withUnsafeBytes { keyBytes in
            nonce.withUnsafeBufferPointer { nonceBytes in
                EVP_EncryptInit_ex(
                    context.pointer, EVP_aes_256_gcm(), nil,
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), nonceBytes.baseAddress)
            }
        }
        guard initialised == 1 else { throw OpenSSLError.drain("EVP_EncryptInit_ex") }
        try context.update(aad: aad, encrypt: true)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        try context.update(input: plaintext, output: &ciphertext, encrypt: true)
        var finalLength: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptFinal_ex(context.pointer, &scratch, &finalLength) == 1, finalLength == 0 else {
            throw OpenSSLError.drain("EVP_EncryptFinal_ex")
        }
        var tag = [UInt8](repeating: 0, count: tagSize)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_GET_TAG, Int32(tagSize), &tag) == 1 else {
            throw OpenSSLError.drain("EVP_CTRL_AEAD_GET_TAG")
        }
        return (ciphertext, tag)
    }

    /// Decrypts and authenticates; returns the plaintext, or `nil` when the tag does not verify (wrong key,
    /// wrong AAD, or tampered data). Throws only when OpenSSL itself fails.
    package static func open(
        _ ciphertext: [UInt8], tag: [UInt8], key: SecureBytes, nonce: [UInt8], aad: [UInt8]
    ) throws(OpenSSLError) -> SecureBytes? {
        try checkSizes(key: key, nonce: nonce, operation: "AES-256-GCM open")
        guard tag.count == tagSize else {
            throw OpenSSLError(operation: "AES-256-GCM open", queue: ["tag must be \(tagSize) bytes"])
        }
        let context = try GCMCipherContext()
        OpenSSLError.clearQueue()
        let initialised = key.withUnsafeBytes { keyBytes in
            nonce.withUnsafeBufferPointer { nonceBytes in
                EVP_DecryptInit_ex(
                    context.pointer, EVP_aes_256_gcm(), nil,
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), nonceBytes.baseAddress)
            }
        }
        guard initialised == 1 else { throw OpenSSLError.drain("EVP_DecryptInit_ex") }
        try context.update(aad: aad, encrypt: false)
        let plaintext = try SecureBytes(count: ciphertext.count) { (out) throws(OpenSSLError) in
            let bytes = out.bindMemory(to: UInt8.self)
            try ciphertext.withUnsafeBytes { input in
                Result { () throws(OpenSSLError) in try context.update(input: input, output: bytes, encrypt: false) }
            }.get()
        }
        var expected = tag
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_SET_TAG, Int32(tagSize), &expected) == 1 else {
            throw OpenSSLError.drain("EVP_CTRL_AEAD_SET_TAG")
        }
        var finalLength: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_DecryptFinal_ex(context.pointer, &scratch, &finalLength) == 1 else {
            // The tag did not verify: not an OpenSSL malfunction, so the queue is cleared, not reported.
            OpenSSLError.clearQueue()
            return nil
        }
        return plaintext
    }

    private static func checkSizes(key: SecureBytes, nonce: [UInt8], operation: String) throws(OpenSSLError) {
        guard key.count == keySize else {
            throw OpenSSLError(operation: operation, queue: ["key must be \(keySize) bytes"])
        }
        guard nonce.count == nonceSize else {
            throw OpenSSLError(operation: operation, queue: ["nonce must be \(nonceSize) bytes"])
        }
    }
}

/// Owns one `EVP_CIPHER_CTX`, freed (and so wiped by OpenSSL) in `deinit`.
final class GCMCipherContext {
    let pointer: OpaquePointer

    init() throws(OpenSSLError) {
        OpenSSLError.clearQueue()
        guard let context = EVP_CIPHER_CTX_new() else { throw OpenSSLError.drain("EVP_CIPHER_CTX_new") }
        pointer = context
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }

    /// Feeds additional authenticated data (no output).
    func update(aad: [UInt8], encrypt: Bool) throws(OpenSSLError) {
        guard !aad.isEmpty else { return }
        guard aad.count <= Int(Int32.max) else {
            throw OpenSSLError(operation: "AES-256-GCM", queue: ["AAD too long"])
        }
        var outLength: Int32 = 0
        let result = aad.withUnsafeBufferPointer { bytes in
            encrypt
                ? EVP_EncryptUpdate(pointer, nil, &outLength, bytes.baseAddress, Int32(bytes.count))
                : EVP_DecryptUpdate(pointer, nil, &outLength, bytes.baseAddress, Int32(bytes.count))
        }
        guard result == 1 else { throw OpenSSLError.drain(encrypt ? "EVP_EncryptUpdate(AAD)" : "EVP_DecryptUpdate(AAD)") }
    }

    /// Encrypts or decrypts `input` into `output` (same length: GCM is a stream mode).
    func update(input: UnsafeRawBufferPointer, output: UnsafeMutableBufferPointer<UInt8>, encrypt: Bool)
        throws(OpenSSLError)
    {
        guard !input.isEmpty else { return }
        guard input.count <= Int(Int32.max), output.count >= input.count else {
            throw OpenSSLError(operation: "AES-256-GCM", queue: ["message too long"])
        }
        var outLength: Int32 = 0
        let bytes = input.bindMemory(to: UInt8.self)
        let result = encrypt
            ? EVP_EncryptUpdate(pointer, output.baseAddress, &outLength, bytes.baseAddress, Int32(bytes.count))
            : EVP_DecryptUpdate(pointer, output.baseAddress, &outLength, bytes.baseAddress, Int32(bytes.count))
        guard result == 1, Int(outLength) == input.count else {
            throw OpenSSLError.drain(encrypt ? "EVP_EncryptUpdate" : "EVP_DecryptUpdate")
        }
    }

    /// Array-output convenience for ``update(input:output:encrypt:)``.
    func update(input: UnsafeRawBufferPointer, output: inout [UInt8], encrypt: Bool) throws(OpenSSLError) {
        try output.withUnsafeMutableBufferPointer { (buffer) throws(OpenSSLError) in
            try update(input: input, output: buffer, encrypt: encrypt)
        }
    }
}

import COpenSSL

/// SHA-256 through OpenSSL EVP, for checksums (the token file's header check).
package enum SHA256Checksum {
    /// Digest length in bytes.
    package static let size = 32

    /// The SHA-256 digest of `bytes`.
    package static func digest(_ bytes: [UInt8]) throws(OpenSSLError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        var outLength: UInt32 = 0
        OpenSSLError.clearQueue()
        let result = bytes.withUnsafeBufferPointer { input in
            EVP_Digest(input.baseAddress, input.count, &out, &outLength, EVP_sha256(), nil)
        }
        guard result == 1, outLength == UInt32(size) else { throw OpenSSLError.drain("EVP_Digest(SHA-256)") }
        return out
    }
}

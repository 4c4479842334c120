import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`).
package enum SecureRandom {
    /// Fills `buffer` with random bytes.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(OpenSSLError) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        OpenSSLError.clearQueue()
        guard buffer.count <= Int(Int32.max),
            RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1
        else { throw OpenSSLError.drain("RAND_bytes") }
    }

    /// Returns `count` random bytes (for salts and nonces; use ``key(count:)`` for keys).
    package static func bytes(count: Int) throws(OpenSSLError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { buffer in Result { () throws(OpenSSLError) in try fill(buffer) } }.get()
        return out
    }

    /// Returns a random key of `count` bytes in a buffer that is wiped when released.
    package static func key(count: Int) throws(OpenSSLError) -> SecureBytes {
        try SecureBytes(count: count) { (buffer) throws(OpenSSLError) in try fill(buffer) }
    }
}

import COpenSSL

/// scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`, with `maxmem` computed from the parameters.
///
/// Why an explicit `maxmem`: OpenSSL's default cap (32 MiB) rejects ShopKit's default cost (N=2^17, r=8 needs
/// 128 MiB), and passing an unbounded cap would let any caller-supplied parameters allocate without limit.
/// Callers that take parameters from untrusted input must range-check them first.
package enum Scrypt {
    /// Bytes of memory scrypt needs for N=2^logN, r, p: 128·r·(N+2) for V plus 128·r·p for B; `nil` on overflow.
    package static func memoryRequired(logN: UInt8, r: UInt32, p: UInt32) -> UInt64? {
        guard logN < 63, r > 0, p > 0 else { return nil }
        let n = UInt64(1) << UInt64(logN)
        let (rBlock, o1) = UInt64(128).multipliedReportingOverflow(by: UInt64(r))
        let (v, o2) = rBlock.multipliedReportingOverflow(by: n + 2)
        let (b, o3) = rBlock.multipliedReportingOverflow(by: UInt64(p))
        let (total, o4) = v.addingReportingOverflow(b)
        return o1 || o2 || o3 || o4 ? nil : total
    }

    /// Derives `length` bytes from `password` and `salt` with cost N=2^logN, r, p.
    ///
    /// - Warning: The work and memory grow with the parameters; never pass unchecked values from a file.
    package static func deriveKey(
        password: UnsafeRawBufferPointer, salt: [UInt8], logN: UInt8, r: UInt32, p: UInt32, length: Int
    ) throws(OpenSSLError) -> SecureBytes {
        guard length > 0, logN > 0, let needed = memoryRequired(logN: logN, r: r, p: p) else {
            throw OpenSSLError(operation: "EVP_PBE_scrypt", queue: ["invalid scrypt parameters"])
        }
        // A little headroom over the exact need; OpenSSL checks Blen + Vlen against maxmem.
        let maxmem = needed + 64 * 1024
        return try SecureBytes(count: length) { (out) throws(OpenSSLError) in
            OpenSSLError.clearQueue()
            let result = salt.withUnsafeBufferPointer { saltBytes in
                EVP_PBE_scrypt(
                    password.baseAddress?.assumingMemoryBound(to: CChar.self), password.count,
                    saltBytes.baseAddress, saltBytes.count,
                    UInt64(1) << UInt64(logN), UInt64(r), UInt64(p), maxmem,
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), length)
            }
            guard result == 1 else { throw OpenSSLError.drain("EVP_PBE_scrypt") }
        }
    }
}

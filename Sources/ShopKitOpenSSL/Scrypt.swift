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

    /// Why N=2^logN, r, p are not valid scrypt parameters under RFC 7914, or `nil` when they are.
    ///
    /// RFC 7914 section 2: r ≥ 1, p ≥ 1, N > 1 and N < 2^(128·r/8) = 2^(16·r), p ≤ (2^32−1)·32 / (128·r); and the
    /// memory, 128·r·(N+2) + 128·r·p bytes, must be countable. OpenSSL enforces the same bound on N, but only
    /// after the caller has committed to the parameters, as "memory limit exceeded"; checking first turns it into
    /// a clear, typed refusal.
    package static func parameterProblem(logN: UInt8, r: UInt32, p: UInt32) -> String? {
        guard r >= 1 else { return "scrypt r must be at least 1" }
        guard p >= 1 else { return "scrypt p must be at least 1" }
        guard logN >= 1 else { return "scrypt N must be greater than 1 (logN at least 1)" }
        // N < 2^(16·r) ⇔ logN < 16·r (r ≥ 4 allows every logN < 64).
        guard UInt64(logN) < 16 * UInt64(r) else {
            return "RFC 7914 requires N < 2^(16·r): logN \(logN) needs r ≥ \(Int(logN) / 16 + 1), r is \(r)"
        }
        let (blocks, overflow) = (128 * UInt64(r)).multipliedReportingOverflow(by: UInt64(p))
        guard !overflow, blocks <= UInt64(UInt32.max) * 32 else {
            return "RFC 7914 requires p ≤ (2^32−1)·32/(128·r): p \(p) is too large for r \(r)"
        }
        guard memoryRequired(logN: logN, r: r, p: p) != nil else {
            return "scrypt memory 128·r·(N+2) + 128·r·p overflows"
        }
        return nil
    }

    /// Derives `length` bytes from `password` and `salt` with cost N=2^logN, r, p.
    ///
    /// Parameters outside RFC 7914 (``parameterProblem(logN:r:p:)``) are refused before OpenSSL is called.
    ///
    /// - Warning: The work and memory grow with the parameters; never pass unchecked values from a file.
    package static func deriveKey(
        password: UnsafeRawBufferPointer, salt: [UInt8], logN: UInt8, r: UInt32, p: UInt32, length: Int
    ) throws(OpenSSLError) -> SecureBytes {
        if let problem = parameterProblem(logN: logN, r: r, p: p) {
            throw OpenSSLError(operation: "EVP_PBE_scrypt", queue: [problem])
        }
        guard length > 0, let needed = memoryRequired(logN: logN, r: r, p: p) else {
            throw OpenSSLError(operation: "EVP_PBE_scrypt", queue: ["invalid scrypt output length \(length)"])
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

import COpenSSL

/// Key material in a heap buffer that is wiped with `OPENSSL_cleanse` when the last reference goes away.
///
/// Why a class: a Swift `Array` may be copied or reallocated behind our back, leaving stray copies of a key in
/// freed memory; this buffer is allocated once, never grows, and is wiped in `deinit`. Its description is redacted.
///
/// - Warning: Bytes read through ``withUnsafeBytes(_:)`` must not escape the closure.
package final class SecureBytes: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable is safe: `storage` is filled only during init (before the object is shared)
    // and only read afterwards; it is wiped and freed in deinit, when no other reference exists.
    private let storage: UnsafeMutableRawBufferPointer

    /// A zero-filled buffer of `count` bytes that `fill` writes into before the object is shared.
    package init<E: Error>(count: Int, fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        storage = .allocate(byteCount: Swift.max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
        } catch {
            Self.wipe(storage)
            storage.deallocate()
            throw error
        }
        self.count = count
    }

    /// Copies `bytes`; the caller should wipe its own copy.
    package convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { (buffer) throws(Never) in buffer.copyBytes(from: bytes) }
    }

    /// The number of bytes.
    package let count: Int

    /// Calls `body` with the bytes; do not let them escape.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Compares with `other` in time independent of where they differ.
    package func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in
                CRYPTO_memcmp(mine.baseAddress, theirs.baseAddress, count) == 0
            }
        }
    }

    package var description: String { "SecureBytes(\(count) bytes, <redacted>)" }

    deinit {
        Self.wipe(storage)
        storage.deallocate()
    }

    /// Wipes `buffer` in a way the optimiser keeps.
    package static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        OPENSSL_cleanse(base, buffer.count)
    }

    /// Wipes an array's bytes in place (for plaintext that had to live in an `Array` briefly).
    package static func wipe(_ array: inout [UInt8]) {
        array.withUnsafeMutableBytes { wipe($0) }
    }
}

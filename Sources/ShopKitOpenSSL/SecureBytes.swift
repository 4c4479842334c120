import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// Key material in pages of its own that are wiped with `OPENSSL_cleanse` when the last reference goes away.
///
/// Why a class: a Swift `Array` may be copied or reallocated behind our back, leaving stray copies of a key in
/// freed memory; this buffer is allocated once, never grows, and is wiped in `deinit`. Its description is redacted.
///
/// The pages are an anonymous mapping of their own (`mmap`), so that what is done to them touches no other data:
/// they are left out of core dumps (`madvise(MADV_DONTDUMP)`), and locked in memory so they never reach swap
/// (`mlock`) where `RLIMIT_MEMLOCK` allows; ``isLockedInMemory`` says whether it did. A refused `mlock` is not an
/// error: the bytes are still wiped, and still left out of core dumps (SECURITY.md, "Secrets in memory").
///
/// - Warning: Bytes read through ``withUnsafeBytes(_:)`` must not escape the closure.
package final class SecureBytes: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable is safe: `storage` is filled only during init (before the object is shared)
    // and only read afterwards; it is wiped, unlocked and unmapped in deinit, when no other reference exists.
    private let storage: UnsafeMutableRawBufferPointer
    /// Whether `storage` came from `mmap` (else, when mapping failed, from the heap).
    private let mapped: Bool
    /// Whether `mlock` locked the pages, so they cannot be swapped out.
    package let isLockedInMemory: Bool

    /// A zero-filled buffer of `count` bytes that `fill` writes into before the object is shared.
    package init<E: Error>(count: Int, fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        (storage, mapped, isLockedInMemory) = Self.allocate(count: count)
        do {
            try fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
        } catch {
            Self.release(storage, mapped: mapped, locked: isLockedInMemory)
            throw error
        }
        self.count = count
    }

    /// Whole pages of their own for `count` bytes, zero-filled, left out of core dumps and locked where the limit
    /// allows; heap memory (neither) only if the kernel refuses the mapping.
    private static func allocate(count: Int) -> (UnsafeMutableRawBufferPointer, mapped: Bool, locked: Bool) {
        let page = Swift.max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let length = (Swift.max(count, 1) + page - 1) / page * page
        let raw = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let raw, raw != UnsafeMutableRawPointer(bitPattern: -1) else {
            let heap = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(count, 1), alignment: 16)
            heap.initializeMemory(as: UInt8.self, repeating: 0)
            return (heap, false, false)
        }
        _ = madvise(raw, length, MADV_DONTDUMP)
        let locked = mlock(raw, length) == 0
        return (UnsafeMutableRawBufferPointer(start: raw, count: length), true, locked)
    }

    /// Wipes `buffer`, then unlocks and unmaps it (or frees it).
    private static func release(_ buffer: UnsafeMutableRawBufferPointer, mapped: Bool, locked: Bool) {
        wipe(buffer)
        guard mapped else { return buffer.deallocate() }
        if locked { _ = munlock(buffer.baseAddress, buffer.count) }
        _ = munmap(buffer.baseAddress, buffer.count)
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
        Self.release(storage, mapped: mapped, locked: isLockedInMemory)
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

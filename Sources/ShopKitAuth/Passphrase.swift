import Foundation

/// A passphrase held in memory that is zeroed when the last reference goes away.
///
/// It never prints: its description is redacted.
public final class Passphrase: Sendable, CustomStringConvertible {
    // Safe to share: the bytes are written once in init, only read afterwards (through `withBytes`),
    // and zeroed in deinit, when no other reference can exist.
    private nonisolated(unsafe) let storage: UnsafeMutableBufferPointer<UInt8>

    /// Copies `bytes`; the caller should zero its own copy.
    public init(bytes: some Collection<UInt8>) {
        storage = .allocate(capacity: bytes.count)
        _ = storage.initialize(from: bytes)
    }

    /// Calls `body` with the passphrase bytes; do not let them escape.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(storage))
    }

    /// The number of bytes.
    public var count: Int { storage.count }

    public var description: String { "Passphrase(<redacted>)" }

    deinit {
        if let base = storage.baseAddress {
            memset_s_compat(base, storage.count)
        }
        storage.deallocate()
    }
}

/// Zeroes memory in a way the optimiser does not remove.
@inline(never)
func memset_s_compat(_ pointer: UnsafeMutablePointer<UInt8>, _ count: Int) {
    let volatile = UnsafeMutableRawPointer(pointer)
    for index in 0..<count {
        volatile.storeBytes(of: 0, toByteOffset: index, as: UInt8.self)
    }
}

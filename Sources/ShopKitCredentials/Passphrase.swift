import Foundation
import ShopKitOpenSSL

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
    package func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(storage))
    }

    /// The number of bytes.
    package var count: Int { storage.count }

    /// The shortest passphrase a new token file is created with: 8 bytes. Existing files open with any
    /// passphrase they were created with.
    public static let minimumNewFileLength = 8

    /// The longest passphrase read from a terminal or a descriptor: 4096 bytes. Longer input is refused
    /// (``CredentialError/passphraseRejected(_:)``), never cut.
    package static let maximumLength = 4096

    /// Throws ``CredentialError/passphraseRejected(_:)`` when this passphrase is too short to create a new
    /// token file with (empty, or under ``minimumNewFileLength`` bytes).
    package func checkForNewFile() throws(CredentialError) {
        guard count >= Self.minimumNewFileLength else {
            throw .passphraseRejected(
                (count == 0 ? "it is empty" : "it is \(count) bytes")
                    + "; a new token file needs a passphrase of at least \(Self.minimumNewFileLength) bytes")
        }
    }

    public var description: String { "Passphrase(<redacted>)" }

    deinit {
        SecureBytes.wipe(UnsafeMutableRawBufferPointer(storage))
        storage.deallocate()
    }
}

import Foundation
import ShopKitAPI

// Placeholder API of the encrypted-file backend; the real implementation replaces this file.

/// Tokens in one AES-256-GCM encrypted file, for machines where no Secret Service runs.
public final class EncryptedFileStore: CredentialBackend {
    /// Where the file lives and how its key is derived.
    public struct Configuration: Sendable {
        /// The store file. Its directory is created 0700; the file is 0600.
        public var url: URL
        /// scrypt cost for new files (existing files carry their own, range-checked).
        public var kdf: ScryptParameters
        /// This machine's id for `thisDeviceOnly` items; `nil` reads `/etc/machine-id`.
        public var deviceID: String?

        public init(url: URL = EncryptedFileStore.defaultURL(), kdf: ScryptParameters = .default, deviceID: String? = nil) {
            self.url = url
            self.kdf = kdf
            self.deviceID = deviceID
        }
    }

    /// scrypt cost parameters.
    public struct ScryptParameters: Sendable, Hashable {
        public var logN: UInt8
        public var r: UInt32
        public var p: UInt32
        public init(logN: UInt8, r: UInt32, p: UInt32) {
            self.logN = logN
            self.r = r
            self.p = p
        }
        /// N=2^17, r=8, p=1.
        public static let `default` = ScryptParameters(logN: 17, r: 8, p: 1)
    }

    public let name = "file"
    public let canBindToDevice = true

    public init(configuration: Configuration, passphrase: Passphrase) {}

    /// `$XDG_DATA_HOME/shopkit/tokens.skt` (or `~/.local/share/shopkit/tokens.skt`).
    public static func defaultURL(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".local/share")
        return base.appendingPathComponent("shopkit/tokens.skt")
    }

    public func read(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential? {
        throw .io("not implemented")
    }

    public func write(_ credential: StoredCredential, for key: CredentialKey) async throws(CredentialError) {
        throw .io("not implemented")
    }

    public func delete(_ key: CredentialKey) async throws(CredentialError) {
        throw .io("not implemented")
    }
}

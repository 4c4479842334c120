import Foundation
import ShopKitCredentials

/// Runs `body` with an encrypted-file backend (fast scrypt parameters) in a fresh temporary directory, which is
/// removed afterwards; `name` labels the directory and the passphrase.
func withTemporaryFileBackend(_ name: String, _ body: (any CredentialBackend) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-\(name)-\(UUID())")
    defer { try? FileManager.default.removeItem(at: directory) }
    try await body(
        EncryptedFileStore(
            configuration: .init(
                url: directory.appendingPathComponent("tokens.skt"), kdf: .init(logN: 10, r: 8, p: 1),
                deviceID: "test-device"),
            passphrase: Passphrase(bytes: Array("\(name)-test-passphrase".utf8))))
}

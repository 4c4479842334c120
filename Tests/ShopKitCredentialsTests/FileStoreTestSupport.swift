import NIOConcurrencyHelpers
import Foundation
import ShopKitAPI
@testable import ShopKitCredentials

/// Fast scrypt for tests (N=2^10, r=8, p=1: 1 MiB, a few milliseconds).
let fastKDF = EncryptedFileStore.ScryptParameters(logN: 10, r: 8, p: 1)

/// A fresh 0700 directory under the system temp dir, removed by `remove()`.
struct TempDirectory {
    let url: URL

    init() throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("shopkit-auth-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CredentialError.io("mkdtemp failed") }
        url = URL(fileURLWithPath: String(cString: made))
    }

    /// The store file inside a not-yet-existing `shopkit` subdirectory (the store creates it 0700).
    var storeURL: URL { url.appendingPathComponent("shopkit/tokens.skt") }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Runs `body` with a temp directory that is removed afterwards.
func withTempDirectory<T>(_ body: (TempDirectory) async throws -> T) async throws -> T {
    let directory = try TempDirectory()
    defer { directory.remove() }
    return try await body(directory)
}

func passphrase(_ text: String) -> Passphrase { Passphrase(bytes: Array(text.utf8)) }

func makeStore(
    _ url: URL, passphrase text: String = "test passphrase", deviceID: String? = "device-a",
    kdf: EncryptedFileStore.ScryptParameters = fastKDF
) -> EncryptedFileStore {
    EncryptedFileStore(
        configuration: .init(url: url, kdf: kdf, deviceID: deviceID), passphrase: passphrase(text))
}

let aliceKey = CredentialKey(service: "com.example.shop", account: "alice")
let bobKey = CredentialKey(service: "com.example.shop", account: "bob")
let aliceTokens = AuthTokens(
    accessToken: "access-alice", refreshToken: "refresh-alice", expiresAt: Date(timeIntervalSinceReferenceDate: 800_000_000))
let bobTokens = AuthTokens(accessToken: "access-bob")

/// Reads a whole file's bytes.
func fileBytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

/// Writes bytes and keeps mode 0600.
func writeBytes(_ bytes: [UInt8], to url: URL) throws {
    try Data(bytes).write(to: url)
    chmod(url.path, 0o600)
}

/// The permission bits of `path`.
func mode(_ path: String) -> mode_t {
    var info = stat()
    stat(path, &info)
    return info.st_mode & 0o777
}

/// An injectable presence clock for policy tests: time moves only when the test says so.
final class TestClock: PresenceClock, Sendable {
    private let time = NIOLockedValueBox(Duration.seconds(700_000_000))

    func now() -> Duration { time.withLockedValue { $0 } }
    func advance(_ seconds: Int) { time.withLockedValue { $0 += .seconds(seconds) } }
}

/// Counts presence prompts and answers them with a fixed verdict.
final class PromptCounter: Sendable {
    private let storage = NIOLockedValueBox(0)
    var count: Int { storage.withLockedValue { $0 } }
    func record() { storage.withLockedValue { $0 += 1 } }
}

/// A real backend that reports it cannot bind items to a device (as on a machine without a machine id).
struct UnbindableBackend: CredentialBackend {
    let inner: EncryptedFileStore
    var name: String { "unbindable-file" }
    var canBindToDevice: Bool { false }
    func read(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential? { try await inner.read(key) }
    func write(_ credential: StoredCredential, for key: CredentialKey) async throws(CredentialError) {
        try await inner.write(credential, for: key)
    }
    func delete(_ key: CredentialKey) async throws(CredentialError) { try await inner.delete(key) }
}

/// Expects `body` to throw exactly `expected`.
func expectError<T>(
    _ expected: CredentialError, _ body: () async throws(CredentialError) -> T
) async -> Bool {
    do {
        _ = try await body()
        return false
    } catch {
        return error == expected
    }
}

/// The kind of `error` (nil for none): `failureCode(of: error) == .corrupt` is the enum's `case .corrupt = error`.
func failureCode(of error: CredentialError?) -> CredentialError.Code? { error?.code }

/// The reason of `error` when it is of kind `code`, else nil: `let why = failureReason(of: error, ifIs: .corrupt)`
/// is the enum's `case .corrupt(let why) = error`.
func failureReason(of error: CredentialError?, ifIs code: CredentialError.Code) -> String? {
    error?.code == code ? error?.reason : nil
}

/// The error `body` throws, or `nil`.
func caughtError<T>(_ body: () async throws(CredentialError) -> T) async -> CredentialError? {
    do {
        _ = try await body()
        return nil
    } catch { return error }
}

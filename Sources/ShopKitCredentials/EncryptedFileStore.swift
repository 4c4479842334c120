import Dispatch
import Foundation
import ShopKitOpenSSL
import ShopKitAPI

/// Tokens in one AES-256-GCM encrypted file, for machines where no Secret Service runs.
///
/// The passphrase derives (scrypt) a key that unwraps a random 256-bit data key; the data key seals the whole
/// item set, with the header as authenticated data. Writes are read-modify-write under an advisory lock and
/// replace the file atomically. The format is specified in `docs/token-file-format.md`.
///
/// All file I/O and scrypt run on one serial dispatch queue per store, never on the cooperative pool. The
/// derived keys are cached in memory (wiped when the store is released) so only the first access pays scrypt.
///
/// - Warning: A corrupt, truncated or tampered file is an error (`.corrupt`), never an empty store, and writes
///   refuse to replace it: move it aside to start over. Device binding uses the machine id, which is not secret:
///   it stops a copied file from opening elsewhere by accident or by a casual thief, not an attacker who has the
///   passphrase and edits the code.
public final class EncryptedFileStore: CredentialBackend {
    /// Where the file lives and how its key is derived.
    public struct Configuration: Sendable {
        /// The store file. Its directory is created 0700; the file is 0600.
        public var url: URL
        /// scrypt cost for new files (existing files carry their own, range-checked): N=2^17 r=8 p=1 unless a
        /// test lowers it (package access: an app has no reason to weaken the key derivation).
        package var kdf: ScryptParameters
        /// This machine's id for `thisDeviceOnly` items; `nil` reads `/etc/machine-id` (package access: tests
        /// play two machines with it).
        package var deviceID: String?

        /// A configuration for the file at `url` (default: the XDG path), derived with scrypt N=2^17 r=8 p=1 and
        /// bound to `/etc/machine-id`.
        public init(url: URL = EncryptedFileStore.defaultURL()) {
            self.init(url: url, kdf: .default)
        }

        /// The same with the scrypt cost and the machine id injected (tests).
        package init(url: URL = EncryptedFileStore.defaultURL(), kdf: ScryptParameters, deviceID: String? = nil) {
            self.url = url
            self.kdf = kdf
            self.deviceID = deviceID
        }
    }

    /// scrypt cost parameters: N = 2^logN, block size r, parallelism p.
    ///
    /// Accepted ranges (for new files and for files read): logN 10…20, r 1…32, p 1…16, RFC 7914's N < 2^(16·r)
    /// (so r = 1 allows logN ≤ 15), 128·r·N ≤ 256 MiB, N·r·p ≤ 2^23. Anything else in a file is reported as
    /// `.corrupt` before any derivation; in `Configuration.kdf` it is `.invalidConfiguration` on the first write
    /// (check up front with `problem`).
    ///
    /// Package access: new files always use ``default``; only tests lower the cost.
    package struct ScryptParameters: Sendable, Hashable {
        /// log2 of the CPU/memory cost N.
        package var logN: UInt8
        /// The block size.
        package var r: UInt32
        /// The parallelism.
        package var p: UInt32
        /// Parameters N=2^logN, r, p.
        package init(logN: UInt8, r: UInt32, p: UInt32) {
            self.logN = logN
            self.r = r
            self.p = p
        }
        /// N=2^17, r=8, p=1 (128 MiB, a fraction of a second on a current CPU).
        package static let `default` = ScryptParameters(logN: 17, r: 8, p: 1)
        /// Why these parameters would be refused (outside the accepted ranges or RFC 7914), or `nil`.
        package var problem: String? { TokenFile.rangeProblem(self) }
    }

    /// `file`.
    public let name = "file"
    /// Whether a machine id is known (from the configuration or `/etc/machine-id`).
    public let canBindToDevice: Bool
    /// The store file's location.
    package let url: URL

    private let engine: FileStoreEngine
    private let queue: DispatchQueue

    /// A store at `configuration.url` opened (or, on first write, created) with `passphrase`.
    /// Nothing touches the disk until the first call.
    public init(configuration: Configuration, passphrase: Passphrase) {
        let deviceID = configuration.deviceID ?? Self.machineID()
        url = configuration.url
        canBindToDevice = deviceID != nil
        engine = FileStoreEngine(
            path: configuration.url.standardizedFileURL.path, kdf: configuration.kdf, deviceID: deviceID,
            passphrase: passphrase)
        queue = DispatchQueue(label: "ShopKitCredentials.EncryptedFileStore")
    }

    /// `$XDG_DATA_HOME/shopkit/tokens.skt` (or `~/.local/share/shopkit/tokens.skt`).
    public static func defaultURL(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".local/share")
        return base.appendingPathComponent("shopkit/tokens.skt")
    }

    /// The contents of `/etc/machine-id` (trimmed), or `nil` when it is missing or empty.
    package static func machineID(path: String = "/etc/machine-id") -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }

    /// Reads the item for `key`; `nil` when there is no such item or no file yet.
    ///
    /// Throws `.wrongPassphrase`, `.corrupt`, `.insecurePermissions`, `.wrongDevice` (a `thisDeviceOnly` item
    /// written on another machine) or `.io`.
    public func read(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential? {
        try await run { engine throws(CredentialError) in
            guard let (_, dataKey, items) = try engine.load() else { return nil }
            return try engine.credential(key, in: items, dataKey: dataKey)
        }
    }

    /// Stores `credential` for `key`, replacing any earlier item (read-modify-write under the lock).
    ///
    /// A `thisDeviceOnly` credential is sealed again with this machine's id; with no machine id the write is
    /// refused with `.policyUnsupported`.
    public func write(_ credential: StoredCredential, for key: CredentialKey) async throws(CredentialError) {
        if key.kind == .clientKey {
            // Sealed on its own, as writeClientKey does (the key arrives here as a String already).
            return try await writeClientKey(
                SecureBytes(copying: credential.tokens.accessToken.utf8), policy: credential.policy, for: key)
        }
        try await modify { engine, items, dataKey throws(CredentialError) in
                let fields = TokenItem.fields(of: credential.policy)
                var item = TokenItem(
                    service: key.service, account: key.account, kind: TokenItem.kindField(key.kind), access: fields.access,
                    reuseSeconds: fields.reuseSeconds, thisDeviceOnly: credential.policy.thisDeviceOnly,
                    tokens: nil, bound: nil)
                if credential.policy.thisDeviceOnly {
                    item.bound = try engine.sealBound(credential.tokens, for: key, dataKey: dataKey)
                } else {
                    item.tokens = credential.tokens
                }
                items.removeAll { $0.key == key }
                items.append(item)
        }
    }

    /// Runs `change` on the items under the file's lock (read-modify-write), on the store's queue.
    func modify(
        _ change: @escaping @Sendable (FileStoreEngine, inout [TokenItem], SecureBytes) throws(CredentialError) -> Void
    ) async throws(CredentialError) {
        try await run { engine throws(CredentialError) in
            try engine.modify { (items, dataKey) throws(CredentialError) in try change(engine, &items, dataKey) }
        }
    }

    /// Deletes the item for `key`; deleting a missing item (or from a missing file) succeeds.
    public func delete(_ key: CredentialKey) async throws(CredentialError) {
        try await run { engine throws(CredentialError) in
            guard try engine.load()?.items.contains(where: { $0.key == key }) == true else { return }
            try engine.modify { (items, _) throws(CredentialError) in items.removeAll { $0.key == key } }
        }
    }

    /// The keys of every stored item, sorted; empty when there is no file (package access: tests inspect the file
    /// with it; apps read the items they know through the vault).
    package func keys() async throws(CredentialError) -> [CredentialKey] {
        try await run { engine throws(CredentialError) in
            (try engine.load()?.items.map(\.key) ?? []).sorted { $0.precedes($1) }
        }
    }

    /// The file's generation counter (incremented by every write), or `nil` when there is no file (package access:
    /// for tests).
    package func generation() async throws(CredentialError) -> UInt64? {
        try await run { engine throws(CredentialError) in try engine.load()?.file.generation }
    }

    /// How many times this store ran scrypt (for tests: caching and hostile-parameter checks).
    var derivationCount: Int {
        get async { await withCheckedContinuation { continuation in
            queue.async { [engine] in continuation.resume(returning: engine.derivations) }
        } }
    }

    /// Runs `body` on the store's serial queue, off the cooperative pool.
    func run<T: Sendable>(_ body: @escaping @Sendable (FileStoreEngine) throws(CredentialError) -> T)
        async throws(CredentialError) -> T
    {
        let engine = self.engine
        let result: Result<T, CredentialError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(CredentialError) in try body(engine) })
            }
        }
        return try result.get()
    }
}

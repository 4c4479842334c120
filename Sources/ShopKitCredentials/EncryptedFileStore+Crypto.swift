import Foundation
import ShopKitAPI
import ShopKitOpenSSL

/// The file store's state and work: key derivation and caching, opening and sealing the file.
///
/// - Note: `@unchecked Sendable` is safe because the store touches an engine only from its one serial
///   dispatch queue, so the mutable caches below are never accessed concurrently.
final class FileStoreEngine: @unchecked Sendable {
    let path: String
    let newFileKDF: EncryptedFileStore.ScryptParameters
    let deviceID: String?
    private let passphrase: Passphrase
    /// The passphrase key, for the KDF prefix (parameters and salt) it was derived for.
    private var passphraseKey: (kdfPrefix: [UInt8], key: SecureBytes)?
    /// The data key, for the wrapped form it was unwrapped from.
    private var dataKey: (wrapped: [UInt8], key: SecureBytes)?
    /// How many times scrypt ran (tests check that hostile files never reach it).
    private(set) var derivations = 0

    init(path: String, kdf: EncryptedFileStore.ScryptParameters, deviceID: String?, passphrase: Passphrase) {
        self.path = path
        self.newFileKDF = kdf
        self.deviceID = deviceID
        self.passphrase = passphrase
    }

    var directory: String { (path as NSString).deletingLastPathComponent }
    var lockPath: String { path + ".lock" }

    // MARK: Reading

    /// The parsed file, its data key and items; `nil` when there is no file.
    func load() throws(CredentialError) -> (file: TokenFile, key: SecureBytes, items: [TokenItem])? {
        guard try TokenFileIO.checkDirectory(directory), let bytes = try TokenFileIO.read(path) else { return nil }
        let file = try TokenFile.parse(bytes)
        let key = try unwrapDataKey(file)
        return (file, key, try openItems(file, key: key))
    }

    /// The credential for `key`, opening a device-bound item only on its own device.
    func credential(_ key: CredentialKey, in items: [TokenItem], dataKey: SecureBytes)
        throws(CredentialError) -> StoredCredential?
    {
        // CredentialKey compares UTF-8 bytes: NFC and NFD spellings are two items, as in the keyring.
        guard let item = items.first(where: { $0.key == key }) else { return nil }
        if key.kind == .clientKey {
            // The generic read of a client key item (migrate, a backend read) makes a String of it, as tokens are:
            // clientIdentity reads it with readClientKey instead.
            guard let (pem, policy) = try clientKey(key, in: items, dataKey: dataKey) else { return nil }
            return StoredCredential(
                tokens: AuthTokens(accessToken: pem.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }),
                policy: policy)
        }
        guard let policy = item.policy else { throw .corrupt("item \(key) has an unknown access policy") }
        if !item.thisDeviceOnly {
            guard let tokens = item.tokens else { throw .corrupt("item \(key) has no tokens") }
            return StoredCredential(tokens: tokens, policy: policy)
        }
        guard let bound = item.bound else { throw .corrupt("device-bound item \(key) has no sealed tokens") }
        guard let deviceID else { throw .wrongDevice }
        let aad = BoundTokens.deviceAAD(service: key.service, account: key.account, deviceID: deviceID)
        guard let plaintext = try crypto({ () throws(OpenSSLError) in
            try AES256GCM.open(Array(bound.ciphertext), tag: Array(bound.tag), key: dataKey,
                               nonce: Array(bound.nonce), aad: aad)
        }) else { throw .wrongDevice }
        return StoredCredential(tokens: try decode(AuthTokens.self, from: plaintext, what: "item \(key)"), policy: policy)
    }

    // MARK: Writing

    /// Read-modify-write under the lock: applies `change` to the items and replaces the file atomically.
    func modify(_ change: (inout [TokenItem], SecureBytes) throws(CredentialError) -> Void) throws(CredentialError) {
        try TokenFileIO.ensureDirectory(directory)
        try TokenFileIO.withExclusiveLock(lockPath) { () throws(CredentialError) in
            TokenFileIO.removeStaleTempFiles(for: path)
            var file: TokenFile
            var items: [TokenItem]
            let key: SecureBytes
            if let existing = try load() {
                (file, key, items) = existing
            } else {
                (file, key) = try newFile()
                items = []
            }
            try change(&items, key)
            if file.formatVersion < TokenFile.version { try upgrade(&file, dataKey: key) }
            file.generation &+= 1
            try seal(&file, items: items, key: key)
            try TokenFileIO.atomicReplace(path, with: try crypto { () throws(OpenSSLError) in try file.serialized() })
        }
    }

    /// Seals the tokens of a device-bound item for this device.
    func sealBound(_ tokens: AuthTokens, for key: CredentialKey, dataKey: SecureBytes) throws(CredentialError)
        -> BoundTokens
    {
        guard let deviceID else { throw .policyUnsupported("no machine id: set Configuration.deviceID") }
        var json = try encode(tokens)
        defer { SecureBytes.wipe(&json) }
        let aad = BoundTokens.deviceAAD(service: key.service, account: key.account, deviceID: deviceID)
        return try crypto { () throws(OpenSSLError) in
            let nonce = try SecureRandom.bytes(count: AES256GCM.nonceSize)
            let sealed = try json.withUnsafeBytes { plain in
                Result { () throws(OpenSSLError) in try AES256GCM.seal(plain, key: dataKey, nonce: nonce, aad: aad) }
            }.get()
            return BoundTokens(nonce: Data(nonce), ciphertext: Data(sealed.ciphertext), tag: Data(sealed.tag))
        }
    }

    // MARK: Keys

    private func newFile() throws(CredentialError) -> (TokenFile, SecureBytes) {
        try passphrase.checkForNewFile()  // an empty or short passphrase never creates a file
        if let problem = TokenFile.rangeProblem(newFileKDF) {
            throw .invalidConfiguration(
                "Configuration.kdf is out of range (\(problem)); use EncryptedFileStore.ScryptParameters.default")
        }
        return try crypto { () throws(OpenSSLError) in
            var file = TokenFile(
                kdf: newFileKDF, salt: try SecureRandom.bytes(count: TokenFile.saltSize), generation: 0,
                wrapNonce: try SecureRandom.bytes(count: AES256GCM.nonceSize), wrappedKey: [], wrapTag: [],
                payloadNonce: [], ciphertext: [], payloadTag: [])
            let dataKey = try SecureRandom.key(count: AES256GCM.keySize)
            let wrapKey = try derivePassphraseKey(file)
            let wrapped = try dataKey.withUnsafeBytes { (plain) throws(OpenSSLError) in
                try AES256GCM.seal(plain, key: wrapKey, nonce: file.wrapNonce, aad: file.kdfPrefix)
            }
            file.wrappedKey = wrapped.ciphertext
            file.wrapTag = wrapped.tag
            self.dataKey = (file.kdfPrefix + file.wrapNonce + file.wrappedKey + file.wrapTag, dataKey)
            return (file, dataKey)
        }
    }

    /// Rewrites an older file's header as the current version: the version is part of the key wrap's AAD, so the
    /// data key is wrapped again (one more scrypt run, once per file).
    private func upgrade(_ file: inout TokenFile, dataKey: SecureBytes) throws(CredentialError) {
        file.formatVersion = TokenFile.version
        try crypto { () throws(OpenSSLError) in
            file.wrapNonce = try SecureRandom.bytes(count: AES256GCM.nonceSize)
            let wrapKey = try derivePassphraseKey(file)
            let prefix = file.kdfPrefix
            let nonce = file.wrapNonce
            let wrapped = try dataKey.withUnsafeBytes { (plain) throws(OpenSSLError) in
                try AES256GCM.seal(plain, key: wrapKey, nonce: nonce, aad: prefix)
            }
            file.wrappedKey = wrapped.ciphertext
            file.wrapTag = wrapped.tag
        }
        self.dataKey = (file.kdfPrefix + file.wrapNonce + file.wrappedKey + file.wrapTag, dataKey)
    }

    private func unwrapDataKey(_ file: TokenFile) throws(CredentialError) -> SecureBytes {
        let wrapped = file.kdfPrefix + file.wrapNonce + file.wrappedKey + file.wrapTag
        if let cached = dataKey, cached.wrapped == wrapped { return cached.key }
        let wrapKey = try crypto { () throws(OpenSSLError) in try derivePassphraseKey(file) }
        guard let key = try crypto({ () throws(OpenSSLError) in
            try AES256GCM.open(file.wrappedKey, tag: file.wrapTag, key: wrapKey, nonce: file.wrapNonce,
                               aad: file.kdfPrefix)
        }), key.count == AES256GCM.keySize else {
            throw .wrongPassphrase
        }
        dataKey = (wrapped, key)
        return key
    }

    /// scrypt over the passphrase, cached per (parameters, salt). Callers have range-checked the parameters.
    private func derivePassphraseKey(_ file: TokenFile) throws(OpenSSLError) -> SecureBytes {
        let prefix = file.kdfPrefix
        if let cached = passphraseKey, cached.kdfPrefix == prefix { return cached.key }
        precondition(TokenFile.rangeProblem(file.kdf) == nil, "scrypt parameters must be range-checked first")
        derivations += 1
        let result = passphrase.withBytes { bytes in
            Result { () throws(OpenSSLError) in
                try Scrypt.deriveKey(password: UnsafeRawBufferPointer(bytes), salt: file.salt,
                                     logN: file.kdf.logN, r: file.kdf.r, p: file.kdf.p, length: AES256GCM.keySize)
            }
        }
        let key = try result.get()
        passphraseKey = (prefix, key)
        return key
    }

    // MARK: Payload

    private func openItems(_ file: TokenFile, key: SecureBytes) throws(CredentialError) -> [TokenItem] {
        let header = try crypto { () throws(OpenSSLError) in try file.header() }
        guard let plaintext = try crypto({ () throws(OpenSSLError) in
            try AES256GCM.open(file.ciphertext, tag: file.payloadTag, key: key, nonce: file.payloadNonce, aad: header)
        }) else {
            throw .corrupt("the item set failed authentication (tampered or damaged); restore a backup or delete the file")
        }
        let set = try decode(TokenItemSet.self, from: plaintext, what: "item set")
        guard Set(set.items.map(\.key)).count == set.items.count else { throw .corrupt("duplicate items") }
        // A kind the file's version does not have, or one this ShopKit does not know, is never read as tokens; a
        // client key item holds a sealed key and nothing else, a token item no sealed key.
        for item in set.items {
            switch item.kind {
            case nil:
                guard item.sealedKey == nil else { throw .corrupt("token item \(item.key) holds a sealed key") }
            case "clientKey" where file.formatVersion >= 2:
                guard item.sealedKey != nil, item.tokens == nil, item.bound == nil else {
                    throw .corrupt("client key item \(item.key) must hold a sealed key and nothing else")
                }
            default:
                throw .corrupt("an item has an unknown kind; upgrade ShopKit")
            }
        }
        return set.items
    }

    /// Seals `items` into `file`. Refuses (`.tooLarge`) an item set whose file would exceed the format's maximum,
    /// before anything is written: a store must never write a file it would then refuse to read as corrupt.
    private func seal(_ file: inout TokenFile, items: [TokenItem], key: SecureBytes) throws(CredentialError) {
        var json = try encode(TokenItemSet(items: items))
        defer { SecureBytes.wipe(&json) }
        let size = TokenFile.size(payloadLength: json.count)
        guard size <= TokenFile.maximumSize else {
            throw .tooLarge("the token file would be \(size) bytes, over the format's limit of "
                + "\(TokenFile.maximumSize / (1024 * 1024)) MiB; the file was not changed (store fewer or smaller items)")
        }
        try crypto { () throws(OpenSSLError) in
            file.payloadNonce = try SecureRandom.bytes(count: AES256GCM.nonceSize)
            // The header's length field must be final before it becomes the AAD; GCM keeps lengths.
            file.ciphertext = [UInt8](repeating: 0, count: json.count)
            let header = try file.header()
            let nonce = file.payloadNonce
            let sealed = try json.withUnsafeBytes { plain in
                Result { () throws(OpenSSLError) in try AES256GCM.seal(plain, key: key, nonce: nonce, aad: header) }
            }.get()
            file.ciphertext = sealed.ciphertext
            file.payloadTag = sealed.tag
        }
    }

    private func encode<T: Encodable>(_ value: T) throws(CredentialError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            var data = try encoder.encode(value)
            defer { data.withUnsafeMutableBytes { SecureBytes.wipe($0) } }
            return Array(data)
        } catch { throw .io("cannot encode the item set: \(type(of: error))") }
    }

    private func decode<T: Decodable>(_ type: T.Type, from plaintext: SecureBytes, what: String)
        throws(CredentialError) -> T
    {
        var data = plaintext.withUnsafeBytes { Data($0) }
        defer { data.withUnsafeMutableBytes { SecureBytes.wipe($0) } }
        do { return try JSONDecoder().decode(type, from: data) } catch {
            throw .corrupt("\(what) is not valid JSON of the expected shape")
        }
    }

    func crypto<T>(_ body: () throws(OpenSSLError) -> T) throws(CredentialError) -> T {
        do { return try body() } catch { throw .io("OpenSSL failed: \(error)") }
    }
}

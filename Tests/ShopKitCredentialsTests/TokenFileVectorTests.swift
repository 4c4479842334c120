import Foundation
import ShopKitAPI
import ShopKitOpenSSL
import Testing
@testable import ShopKitCredentials

/// The committed format vector (docs/token-file-format.md): a known passphrase and file, a known token set.
@Suite(.timeLimit(.minutes(3))) struct TokenFileVectorTests {
    static let vectorURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/token-file-v1.skt")
    static let vectorPassphrase = "correct horse battery staple"
    static let vectorDevice = "0123456789abcdef0123456789abcdef"
    static let presenceKey = CredentialKey(service: "com.example.shop", account: "bob")
    static let presencePolicy = AccessPolicy(access: .userPresence(reuseSeconds: 300), thisDeviceOnly: true)

    @Test func vectorDecryptsToTheKnownTokenSet() async throws {
        try await withTempDirectory { dir in
            // Git does not keep mode 0600, so the vector is copied into a private directory first.
            try FileManager.default.createDirectory(
                at: dir.storeURL.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try writeBytes(try fileBytes(Self.vectorURL), to: dir.storeURL)
            let store = makeStore(dir.storeURL, passphrase: Self.vectorPassphrase, deviceID: Self.vectorDevice)
            #expect(try await store.keys() == [aliceKey, Self.presenceKey])
            #expect(try await store.read(aliceKey) == StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock))
            #expect(try await store.read(Self.presenceKey) == StoredCredential(tokens: bobTokens, policy: Self.presencePolicy))
            #expect(try await store.generation() == 2)
            let elsewhere = makeStore(dir.storeURL, passphrase: Self.vectorPassphrase, deviceID: "another-machine")
            #expect(await caughtError { () async throws(CredentialError) in try await elsewhere.read(Self.presenceKey) } == .wrongDevice)
            let wrong = makeStore(dir.storeURL, passphrase: "Correct horse battery staple", deviceID: Self.vectorDevice)
            #expect(await caughtError { () async throws(CredentialError) in try await wrong.read(aliceKey) } == .wrongPassphrase)
        }
    }

    @Test func vectorHeaderFieldsAreAtTheDocumentedOffsets() throws {
        let bytes = try fileBytes(Self.vectorURL)
        #expect(Array(bytes[0..<4]) == Array("SKTF".utf8))
        #expect(bytes[4] == 1)  // version
        #expect(bytes[5] == 1)  // KDF id: scrypt
        #expect(bytes[6] == 10)  // logN
        #expect(bytes[7] == 0)  // reserved
        #expect(readUInt32(bytes, at: 8) == 8)  // r
        #expect(readUInt32(bytes, at: 12) == 1)  // p
        #expect(readUInt64(bytes, at: 32) == 2)  // generation
        #expect(Int(readUInt32(bytes, at: 112)) == bytes.count - 148 - 16)  // payload length
        #expect(try TokenFile.parse(bytes).serialized() == bytes)
    }

    /// The format document's item-set example names the keys in the order the store writes them (sorted): the
    /// vector's decrypted payload, written by the store, has the same key sequence.
    @Test func documentedItemSetExampleMatchesWhatTheStoreWrites() throws {
        let bytes = try fileBytes(Self.vectorURL)
        let file = try TokenFile.parse(bytes)
        let passphrase = Array(Self.vectorPassphrase.utf8)
        let payload = try passphrase.withUnsafeBytes { (password) throws(OpenSSLError) -> [UInt8]? in
            let wrapKey = try Scrypt.deriveKey(
                password: password, salt: file.salt, logN: file.kdf.logN, r: file.kdf.r, p: file.kdf.p,
                length: AES256GCM.keySize)
            guard let dataKey = try AES256GCM.open(
                file.wrappedKey, tag: file.wrapTag, key: wrapKey, nonce: file.wrapNonce, aad: file.kdfPrefix)
            else { return nil }
            let plain = try AES256GCM.open(
                file.ciphertext, tag: file.payloadTag, key: dataKey, nonce: file.payloadNonce,
                aad: Array(bytes[0..<TokenFile.headerSize]))
            return plain?.withUnsafeBytes { Array($0) }
        }
        let written = String(decoding: try #require(payload), as: UTF8.self)

        let document = try String(
            contentsOf: Self.vectorURL.deletingLastPathComponent().appendingPathComponent("../../docs/token-file-format.md"),
            encoding: .utf8)
        let start = try #require(document.range(of: "    {\"items\":["))
        let end = try #require(document.range(of: "    ]}", range: start.upperBound..<document.endIndex))
        let example = String(document[start.lowerBound..<end.upperBound])

        func keys(_ json: String) -> [String] {
            json.matches(of: #/"([A-Za-z]+)":/#).map { String($0.output.1) }
        }
        #expect(!keys(written).isEmpty)
        #expect(keys(example) == keys(written), "written: \(keys(written))")
    }

    /// Regenerates the vector: `SHOPKIT_WRITE_TOKEN_VECTOR=1 swift test --filter TokenFileVectorTests`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOPKIT_WRITE_TOKEN_VECTOR"] == "1"))
    func writeVector() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL, passphrase: Self.vectorPassphrase, deviceID: Self.vectorDevice)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            try await store.write(StoredCredential(tokens: bobTokens, policy: Self.presencePolicy), for: Self.presenceKey)
            try Data(try fileBytes(dir.storeURL)).write(to: Self.vectorURL)
        }
    }
}

import Foundation
import ShopKitAPI
import Testing
import TestSupport

@testable import ShopKitCredentials

/// Client keys are items of their own kind (issue 26, "client-certificate keys"): with the same service and account
/// a token and a key are two items in both backends, so a token can never overwrite a key or be read as one.
@Suite(.timeLimit(.minutes(3))) struct ClientKeyItemTests {
    static let pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIClientKeyItemTests\n-----END PRIVATE KEY-----\n"
    static let token = CredentialKey(service: "dev.shopkit.kinds", account: "a")
    static let key = CredentialKey(service: "dev.shopkit.kinds", account: "a", kind: .clientKey)

    /// Writes a key, then a token with the same service and account, and checks that each reads back as itself
    /// and that deleting one leaves the other.
    static func keysAndTokensStayApart(_ store: any CredentialBackend, token: CredentialKey, key: CredentialKey)
        async throws
    {
        let keyItem = StoredCredential(tokens: AuthTokens(accessToken: pem), policy: .afterFirstUnlock)
        let tokenItem = StoredCredential(tokens: AuthTokens(accessToken: "kind-token"), policy: .afterFirstUnlock)
        try await store.write(keyItem, for: key)
        #expect(try await store.read(token) == nil, "a key must not be read as a token")
        try await store.write(tokenItem, for: token)
        #expect(try await store.read(key) == keyItem, "a token must not overwrite a key")
        #expect(try await store.read(token) == tokenItem)
        try await store.delete(token)
        #expect(try await store.read(key) == keyItem, "deleting the token must leave the key")
        try await store.delete(key)
        #expect(try await store.read(key) == nil)
    }

    @Test func theFileStoreKeepsKeysAndTokensApart() async throws {
        try await withTempDirectory { dir in
            try await Self.keysAndTokensStayApart(makeStore(dir.storeURL), token: Self.token, key: Self.key)
        }
    }

    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func theKeyringKeepsKeysAndTokensApart() async throws {
        let token = KeyringTestEnvironment.uniqueKey()
        try await Self.keysAndTokensStayApart(
            KeyringStore(timeout: .seconds(60)), token: token, key: token.of(.clientKey))
    }

    /// The type tag is on the item itself, as any Secret Service client sees it (`secret-tool`):
    /// the key's schema and `kind` attribute, and the token's own schema.
    @Test(.enabled(
        if: KeyringTestEnvironment.isPrivate && FileManager.default.isExecutableFile(atPath: "/usr/bin/secret-tool"),
        "needs scripts/with-keyring and secret-tool"))
    func theKeyringItemCarriesItsTypeTag() async throws {
        let token = KeyringTestEnvironment.uniqueKey()
        let store = KeyringStore(timeout: .seconds(60))
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: Self.pem), policy: .afterFirstUnlock), for: token.of(.clientKey))
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: "kind-token"), policy: .afterFirstUnlock), for: token)
        let listing = try await offPool("secret-tool to list the items") { () throws -> String in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/secret-tool")
            process.arguments = ["search", "--all", "service", token.service]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        try await store.delete(token.of(.clientKey))
        try await store.delete(token)
        let attributes = listing.split(separator: "\n").filter { $0.hasPrefix("attribute.") || $0.hasPrefix("schema") }
        #expect(attributes.contains("schema = dev.shopkit.ClientKey"), "\(attributes)")
        #expect(attributes.contains("schema = dev.shopkit.Token"), "\(attributes)")
        #expect(attributes.filter { $0 == "attribute.kind = client-key" }.count == 1, "\(attributes)")
    }

    /// A file written now is format version 2 and lists its key item as such; the version 1 vector still opens
    /// (TokenFileVectorTests), and a version 1 file is rewritten as version 2 by its next write.
    @Test func aFileWithAKeyItemIsVersion2() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(
                StoredCredential(tokens: AuthTokens(accessToken: Self.pem), policy: .afterFirstUnlock), for: Self.key)
            #expect(try fileBytes(dir.storeURL)[4] == 2)
            #expect(try await makeStore(dir.storeURL).keys() == [Self.key])
        }
    }

    /// The version 1 vector takes a key item: the file is rewritten as version 2 (its data key wrapped again) and
    /// every earlier item still reads, with the same passphrase.
    @Test func aVersion1FileIsUpgradedByItsNextWrite() async throws {
        try await withTempDirectory { dir in
            try FileManager.default.createDirectory(
                at: dir.storeURL.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try writeBytes(try fileBytes(TokenFileVectorTests.vectorURL), to: dir.storeURL)
            let open = { makeStore(dir.storeURL, passphrase: TokenFileVectorTests.vectorPassphrase, deviceID: TokenFileVectorTests.vectorDevice) }
            let keyItem = StoredCredential(tokens: AuthTokens(accessToken: Self.pem), policy: .afterFirstUnlock)
            try await open().write(keyItem, for: Self.key)
            #expect(try fileBytes(dir.storeURL)[4] == 2)
            let reopened = open()
            #expect(try await reopened.read(aliceKey) == StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock))
            #expect(try await reopened.read(TokenFileVectorTests.presenceKey)?.tokens == bobTokens)
            #expect(try await reopened.read(Self.key) == keyItem)
            #expect(try await reopened.read(Self.key.of(.tokens)) == nil)
        }
    }
}

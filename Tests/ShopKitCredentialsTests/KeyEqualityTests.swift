import Foundation
import ShopKitAPI
import Testing
@testable import ShopKitCredentials

/// Keys are equal when their UTF-8 bytes are (issue 16, item 11): `"é"` in NFC (U+00E9) and in NFD (e + U+0301)
/// are two keys, in the file store as in the keyring, although Swift's `String ==` calls them equal.
enum UnicodeKeys {
    static let nfc = CredentialKey(service: "caf\u{E9}.example", account: "jos\u{E9}")
    static let nfd = CredentialKey(service: "cafe\u{301}.example", account: "jose\u{301}")
    static let nfcTokens = AuthTokens(accessToken: "access-nfc")
    static let nfdTokens = AuthTokens(accessToken: "access-nfd")

    /// Writes both spellings to `backend` and checks each reads its own item and a delete removes only its own.
    static func checkTwoItems(_ backend: any CredentialBackend, nfc: CredentialKey, nfd: CredentialKey) async throws {
        try await backend.write(StoredCredential(tokens: nfcTokens, policy: .afterFirstUnlock), for: nfc)
        try await backend.write(StoredCredential(tokens: nfdTokens, policy: .afterFirstUnlock), for: nfd)
        #expect(try await backend.read(nfc)?.tokens == nfcTokens)
        #expect(try await backend.read(nfd)?.tokens == nfdTokens)
        try await backend.delete(nfd)
        #expect(try await backend.read(nfd) == nil)
        #expect(try await backend.read(nfc)?.tokens == nfcTokens)
        try await backend.delete(nfc)
        #expect(try await backend.read(nfc) == nil)
    }
}

@Suite(.timeLimit(.minutes(3))) struct KeyEqualityTests {
    @Test func keysCompareAndHashByUTF8Bytes() {
        #expect(UnicodeKeys.nfc.service == UnicodeKeys.nfd.service)  // what String == says
        #expect(UnicodeKeys.nfc != UnicodeKeys.nfd)
        #expect(Set([UnicodeKeys.nfc, UnicodeKeys.nfd]).count == 2)
        #expect(UnicodeKeys.nfc == CredentialKey(service: "caf\u{E9}.example", account: "jos\u{E9}"))
        #expect(UnicodeKeys.nfc.precedes(UnicodeKeys.nfd) != UnicodeKeys.nfd.precedes(UnicodeKeys.nfc))
    }

    @Test func fileStoreKeepsNFCAndNFDApart() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: UnicodeKeys.nfcTokens, policy: .afterFirstUnlock), for: UnicodeKeys.nfc)
            try await store.write(StoredCredential(tokens: UnicodeKeys.nfdTokens, policy: .afterFirstUnlock), for: UnicodeKeys.nfd)
            // Both items are in the file, and a fresh instance (no cache) reads them back apart.
            let reopened = makeStore(dir.storeURL)
            let keys = try await reopened.keys()
            #expect(keys.count == 2)
            #expect(Set(keys) == [UnicodeKeys.nfc, UnicodeKeys.nfd])
            try await UnicodeKeys.checkTwoItems(reopened, nfc: UnicodeKeys.nfc, nfd: UnicodeKeys.nfd)
        }
    }
}

@Suite(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason), .timeLimit(.minutes(3)))
struct KeyringKeyEqualityTests {
    /// The keyring (gnome-keyring compares attribute bytes) agrees with the file store.
    @Test func keyringKeepsNFCAndNFDApart() async throws {
        let unique = UUID().uuidString
        let nfc = CredentialKey(service: "dev.shopkit.tests.\(unique).caf\u{E9}", account: "jos\u{E9}")
        let nfd = CredentialKey(service: "dev.shopkit.tests.\(unique).cafe\u{301}", account: "jose\u{301}")
        try await UnicodeKeys.checkTwoItems(KeyringStore(timeout: .seconds(120)), nfc: nfc, nfd: nfd)
    }
}

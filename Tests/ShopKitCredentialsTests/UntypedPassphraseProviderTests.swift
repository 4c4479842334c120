import Foundation
import ShopKitAPI
import ShopKitCredentials  // not @testable: both spellings must work with the public API alone
import Testing

/// A passphrase provider spelled with an ordinary `throws` is accepted next to the typed spelling, and what it
/// throws is mapped: a `CredentialError` passes, a cancellation is a denial, anything else names the provider.
@Suite(.timeLimit(.minutes(3))) struct UntypedPassphraseProviderTests {
    /// An app's own error whose description holds what the provider read.
    struct ProviderError: Error, CustomStringConvertible {
        var description: String { "vault answered with secret-passphrase-123" }
    }

    /// An app's provider: ordinary `async throws`, as most Swift code is written.
    @Sendable static func appProvider(_ request: PassphraseRequest) async throws -> Passphrase {
        Passphrase(bytes: Array("untyped provider passphrase".utf8))
    }

    @Test func bothSpellingsOpenTheSameFile() async throws {
        try await withTempDirectory { dir in
            let configuration = EncryptedFileStore.Configuration(url: dir.storeURL, kdf: fastKDF)
            // Untyped: the closure infers `throws(any Error)`.
            let untyped = try await BackendSelection.choose(
                .file(configuration), passphrase: { request in try await Self.appProvider(request) })
            #expect(untyped.selected == .file)
            let key = CredentialKey(service: "dev.shopkit.tests.untyped", account: "alice")
            try await untyped.backend.write(
                StoredCredential(tokens: AuthTokens(accessToken: "access-1"), policy: AccessPolicy()), for: key)

            // Typed, as before: still picks the typed entry point and opens what the untyped one wrote.
            let typed = try await BackendSelection.choose(
                .file(configuration),
                passphrase: { (_: PassphraseRequest) async throws(CredentialError) -> Passphrase in
                    Passphrase(bytes: Array("untyped provider passphrase".utf8))
                })
            #expect(try await typed.backend.read(key)?.tokens.accessToken == "access-1")

            // A closure that does not throw is not ambiguous.
            let plain = try await BackendSelection.defaultStore(
                .file(configuration), passphrase: { Passphrase(bytes: Array("untyped provider passphrase".utf8)) })
            #expect(try await plain.read(key)?.tokens.accessToken == "access-1")

            // defaultStore's untyped spelling.
            let viaDefault = try await BackendSelection.defaultStore(
                .file(configuration), passphrase: { try await Self.appProvider(.existingFile(dir.storeURL)) })
            #expect(try await viaDefault.read(key)?.tokens.accessToken == "access-1")
        }
    }

    @Test func aCredentialErrorPassesThrough() async throws {
        let configuration = EncryptedFileStore.Configuration(url: URL(fileURLWithPath: "/tmp/unused-untyped.skt"))
        let error = await credentialError { () async throws(CredentialError) in
            try await BackendSelection.choose(
                .file(configuration),
                passphrase: { (_: PassphraseRequest) async throws -> Passphrase in
                    throw CredentialError.passphraseRejected("too short")
                })
        }
        #expect(error == .passphraseRejected("too short"))
    }

    @Test func aCancellationIsADenial() async throws {
        let configuration = EncryptedFileStore.Configuration(url: URL(fileURLWithPath: "/tmp/unused-untyped.skt"))
        let error = await credentialError { () async throws(CredentialError) in
            try await BackendSelection.defaultStore(
                .file(configuration), passphrase: { () async throws -> Passphrase in throw CancellationError() })
        }
        guard let error, error.code == .accessDenied, let why = error.reason else {
            Issue.record("expected accessDenied, got \(String(describing: error))")
            return
        }
        #expect(why.contains("cancelled"))
        // A real cancelled task: Task.checkCancellation in the provider.
        let task = Task { () async -> CredentialError? in
            await credentialError { () async throws(CredentialError) in
                try await BackendSelection.defaultStore(
                    .file(configuration),
                    passphrase: { () async throws -> Passphrase in
                        try await Task.sleep(for: .seconds(600))  // cancelled below: ends at once
                        return Passphrase(bytes: Array("never".utf8))
                    })
            }
        }
        task.cancel()
        guard await task.value?.code == .accessDenied else {
            Issue.record("a cancelled provider must map to accessDenied")
            return
        }
    }

    @Test func anyOtherErrorNamesTheProviderAndNotItsMessage() async throws {
        let configuration = EncryptedFileStore.Configuration(url: URL(fileURLWithPath: "/tmp/unused-untyped.skt"))
        let error = await credentialError { () async throws(CredentialError) in
            try await BackendSelection.defaultStore(
                .file(configuration), passphrase: { () async throws -> Passphrase in throw ProviderError() })
        }
        guard let error, error.code == .passphraseProviderFailed, let why = error.reason else {
            Issue.record("expected passphraseProviderFailed, got \(String(describing: error))")
            return
        }
        #expect(error.description.hasPrefix("the app's passphrase provider failed: "))
        #expect(why.contains("ProviderError"), "\(why)")
        #expect(!error.description.contains("secret-passphrase-123"))
        #expect(!error.isRetryable)
    }
}

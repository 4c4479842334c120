import NIOConcurrencyHelpers
import Foundation
import Testing

@testable import ShopKitCredentials

/// The selection rules as a pure function, then with real probes.
@Suite(.timeLimit(.minutes(3))) struct BackendSelectionTests {
    static let file = EncryptedFileStore.Configuration(url: URL(fileURLWithPath: "/tmp/unused.skt"))

    @Test func rulesTable() throws {
        #expect(try BackendSelection.decide(.auto, probe: .available(locked: false)) == .keyring)
        #expect(try BackendSelection.decide(.auto, probe: .unavailable("no bus")) == .file)
        #expect(try BackendSelection.decide(.keyring, probe: .available(locked: false)) == .keyring)
        #expect(try BackendSelection.decide(.file(Self.file), probe: .available(locked: false)) == .file)
        #expect(try BackendSelection.decide(.file(Self.file), probe: nil) == .file)
        #expect(try BackendSelection.decide(.auto, probe: .available(locked: true), unlockPromptAllowed: true) == .keyring)
    }

    @Test func aLockedKeyringIsAnErrorNeverADowngrade() {
        for preference in [BackendPreference.auto, .keyring] {
            #expect(throws: CredentialError.self) {
                try BackendSelection.decide(preference, probe: .available(locked: true))
            }
        }
        do {
            _ = try BackendSelection.decide(.auto, probe: .available(locked: true))
        } catch {
            guard failureCode(of: error) == .locked else { Issue.record("expected locked, got \(error)"); return }
        }
    }

    /// A keyring that is there but failing (a D-Bus error, a frozen daemon) is an error for auto and a forced
    /// keyring, never a reason to use the file; only a forced file ignores it.
    @Test func aFailingKeyringIsAnErrorNeverADowngrade() throws {
        for preference in [BackendPreference.auto, .keyring] {
            do {
                let chosen = try BackendSelection.decide(preference, probe: .failing("the Secret Service did not answer"))
                Issue.record("a failing keyring must not select \(chosen)")
            } catch {
                guard let why = failureReason(of: error, ifIs: .unavailable) else { Issue.record("expected unavailable, got \(error)"); continue }
                #expect(why.contains("failing") && why.contains("the Secret Service did not answer"))
                #expect(why.contains("not falling back"))
            }
        }
        #expect(try BackendSelection.decide(.file(Self.file), probe: .failing("x")) == .file)
    }

    @Test func aFailingKeyringNeverAsksForTheFilePassphrase() async {
        let error = await credentialError { () throws(CredentialError) in
            try await BackendSelection.makeStore(
                .auto, probe: .failing("timed out"), keyring: KeyringStore(), fileConfiguration: Self.file,
                passphrase: { () throws(CredentialError) -> Passphrase in
                    Issue.record("a failing keyring must not fall back to the file")
                    throw .accessDenied("not expected")
                })
        }
        guard failureCode(of: error) == .unavailable else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
    }

    /// Once a keyring held these tokens (the marker exists), a keyring that does not answer is an error for auto,
    /// never a fallback to the file; without the marker auto may still pick the file.
    @Test func aKeyringUsedBeforeIsNeverDowngradedToTheFile() throws {
        let marker = URL(fileURLWithPath: "/tmp/unused.skt.keyring")
        do {
            let chosen = try BackendSelection.decide(.auto, probe: .unavailable("no session bus"), keyringMarker: marker)
            Issue.record("a keyring used before must not fall back to \(chosen)")
        } catch {
            guard let why = failureReason(of: error, ifIs: .unavailable) else { Issue.record("expected unavailable, got \(error)"); return }
            #expect(why.contains("no session bus") && why.contains(marker.path) && why.contains("not falling back"))
        }
        #expect(try BackendSelection.decide(.auto, probe: .unavailable("no session bus")) == .file)
        #expect(try BackendSelection.decide(.file(Self.file), probe: .unavailable("x"), keyringMarker: marker) == .file)
        #expect(BackendSelection.keyringMarkerURL(for: Self.file.url).path == "/tmp/unused.skt.keyring")
    }

    /// The selection records the keyring's use beside the file store, and from then on a keyring that does not
    /// answer fails without asking for the file passphrase or creating a file.
    @Test func choosingTheKeyringRecordsItAndBlocksALaterFallback() async throws {
        try await withTempDirectory { dir in
            let configuration = EncryptedFileStore.Configuration(url: dir.storeURL, kdf: fastKDF)
            let marker = BackendSelection.keyringMarkerURL(for: dir.storeURL)
            let userMarker = dir.url.appendingPathComponent("user/keyring-uid-\(geteuid())")
            let neverAsked = { @Sendable (_: PassphraseRequest) throws(CredentialError) -> Passphrase in
                Issue.record("the file passphrase must not be asked")
                throw .accessDenied("not expected")
            }
            let first = try await BackendSelection.makeChoice(
                .auto, probe: .available(locked: false), keyring: KeyringStore(), fileConfiguration: configuration,
                userMarker: userMarker, passphrase: neverAsked)
            #expect(first.selected == .keyring)
            #expect(first.summary == "backend: keyring")
            #expect(FileManager.default.fileExists(atPath: marker.path))
            #expect(mode(marker.path) == 0o600)
            #expect(mode(userMarker.path) == 0o600)
            let error = await credentialError { () throws(CredentialError) in
                try await BackendSelection.makeChoice(
                    .auto, probe: .unavailable("nothing owns org.freedesktop.secrets"), keyring: KeyringStore(),
                    fileConfiguration: configuration, userMarker: userMarker, passphrase: neverAsked)
            }
            guard let why = failureReason(of: error, ifIs: .unavailable) else { Issue.record("expected unavailable, got \(String(describing: error))"); return }
            #expect(why.contains("nothing owns org.freedesktop.secrets"))
            #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))

            // The user's marker alone blocks the fallback for any other token file location (issue 26, item 2).
            let elsewhere = EncryptedFileStore.Configuration(url: dir.url.appendingPathComponent("elsewhere/t.skt"), kdf: fastKDF)
            let other = await credentialError { () throws(CredentialError) in
                try await BackendSelection.makeChoice(
                    .auto, probe: .unavailable("no session bus"), keyring: KeyringStore(), fileConfiguration: elsewhere,
                    userMarker: userMarker, passphrase: neverAsked)
            }
            guard let reason = failureReason(of: other, ifIs: .unavailable) else { Issue.record("expected unavailable, got \(String(describing: other))"); return }
            #expect(reason.contains(userMarker.path), "\(reason)")
        }
    }

    /// After a fallback with no file, reads and deletes are unavailable (not "no token", not a successful
    /// sign-out); a new file's passphrase is asked as such; a forced file is not affected.
    @Test func aFallbackWithoutAFileIsUnavailableForReadsAndDeletes() async throws {
        try await withTempDirectory { dir in
            let configuration = EncryptedFileStore.Configuration(url: dir.storeURL, kdf: fastKDF)
            let requests = RequestLog()
            let passphrase = { @Sendable (request: PassphraseRequest) throws(CredentialError) -> Passphrase in
                requests.append(request)
                return Passphrase(bytes: Array("fallback passphrase".utf8))
            }
            let choice = try await BackendSelection.makeChoice(
                .auto, probe: .unavailable("no session bus"), keyring: KeyringStore(), fileConfiguration: configuration,
                userMarker: nil, passphrase: passphrase)
            #expect(choice.selected == .file)
            #expect(choice.fallbackReason == "no session bus")
            #expect(choice.summary == "backend: file \(dir.storeURL.path) (no keyring: no session bus)")
            #expect(requests.values == [.newFile(dir.storeURL)])
            let readOrDelete = { () async throws(CredentialError) -> BackendChoice in
                try await BackendSelection.makeChoice(
                    .auto, probe: .unavailable("no session bus"), keyring: KeyringStore(),
                    fileConfiguration: configuration, requireFileOnFallback: true, userMarker: nil, passphrase: passphrase)
            }
            guard let why = failureReason(of: await credentialError(readOrDelete), ifIs: .unavailable) else {
                Issue.record("expected unavailable")
                return
            }
            #expect(why.contains("no session bus") && why.contains("no token file"))
            #expect(requests.values.count == 1)  // refused before asking the passphrase

            try await choice.backend.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(try await readOrDelete().selected == .file)  // the file exists now
            let forced = try await BackendSelection.makeChoice(
                .file(configuration), probe: nil, keyring: KeyringStore(), fileConfiguration: configuration,
                passphrase: passphrase)
            #expect(forced.fallbackReason == nil)
            #expect(forced.summary == "backend: file \(dir.storeURL.path) (chosen explicitly)")
            #expect(requests.values.last == .existingFile(dir.storeURL))
        }
    }

    @Test func forcedKeyringWithoutServiceIsUnavailable() {
        do {
            _ = try BackendSelection.decide(.keyring, probe: .unavailable("no bus"))
            Issue.record("forced keyring with no Secret Service must fail")
        } catch {
            #expect(error == .unavailable("no bus"))
        }
    }

    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func sessionWithSecretServicePicksTheKeyringWithoutAskingAPassphrase() async throws {
        let store = try await BackendSelection.defaultStore(
            .auto, keyring: KeyringStore(),
            passphrase: { () throws(CredentialError) -> Passphrase in
                Issue.record("the passphrase must not be asked when the keyring is chosen")
                throw .accessDenied("not expected")
            })
        #expect(store.name == "keyring")
    }

    @Test func noSecretServicePicksTheFileAndAsksThePassphraseOnce() async throws {
        let asked = Counter()
        let store = try await BackendSelection.makeStore(
            .auto, probe: .unavailable("no session bus"), keyring: KeyringStore(), fileConfiguration: Self.file,
            userMarker: nil, passphrase: { () throws(CredentialError) -> Passphrase in
                asked.increment()
                return Passphrase(bytes: Array("test passphrase".utf8))
            })
        #expect(store.name == "file")
        #expect(asked.value == 1)
    }

    @Test func aLockedKeyringNeverAsksForTheFilePassphrase() async {
        let error = await credentialError { () throws(CredentialError) in
            try await BackendSelection.makeStore(
                .auto, probe: .available(locked: true), keyring: KeyringStore(), fileConfiguration: Self.file,
                passphrase: { () throws(CredentialError) -> Passphrase in
                    Issue.record("a locked keyring must not fall back to the file")
                    throw .accessDenied("not expected")
                })
        }
        guard failureCode(of: error) == .locked else {
            Issue.record("expected locked, got \(String(describing: error))")
            return
        }
    }

    /// The real probe with no session bus, in a child process (libsecret uses the process's bus).
    @Test func realProbeWithoutBusChoosesTheFile() async throws {
        let probe = try await TokenStoreBinary.run(
            ["probe"], environment: TokenStoreCLITests.noBus)
        #expect(probe.status == 3)
        #expect(probe.stdout.hasPrefix("backend: file\n"))
    }

    /// The real probe of a locked keyring, in a child process on a private bus.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func realProbeOfALockedKeyringChoosesNothing() async throws {
        let daemons = try await PrivateKeyring.start()
        let outcome = try? await {
            try await daemons.lockDefaultCollection()
            return try await TokenStoreBinary.run(["probe"], environment: ["DBUS_SESSION_BUS_ADDRESS": daemons.address])
        }()
        await daemons.stop()
        #expect(outcome?.status == 2)
        #expect(outcome?.stdout.hasPrefix("backend: none") == true)
    }
}

/// A thread-safe counter for closures the code under test calls.
final class Counter: Sendable {
    private let count = NIOLockedValueBox(0)

    func increment() { count.withLockedValue { $0 += 1 } }
    var value: Int { count.withLockedValue { $0 } }
}

/// The passphrase requests a selection made, in order.
final class RequestLog: Sendable {
    private let log = NIOLockedValueBox<[PassphraseRequest]>([])

    func append(_ request: PassphraseRequest) { log.withLockedValue { $0.append(request) } }
    var values: [PassphraseRequest] { log.withLockedValue { $0 } }
}

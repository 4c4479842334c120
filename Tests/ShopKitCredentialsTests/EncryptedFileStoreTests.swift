import Foundation
import ShopKitAPI
import ShopKitOpenSSL
import Testing
@testable import ShopKitCredentials

@Suite(.timeLimit(.minutes(3))) struct EncryptedFileStoreTests {
    @Test func roundTripThroughAFreshStore() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let presence = AccessPolicy(access: .userPresence(reuseSeconds: 30))
            try await store.write(StoredCredential(tokens: bobTokens, policy: presence), for: bobKey)
            // A second instance has no cached key: it derives again from the passphrase.
            let reopened = makeStore(dir.storeURL)
            #expect(try await reopened.read(aliceKey) == StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock))
            #expect(try await reopened.read(bobKey) == StoredCredential(tokens: bobTokens, policy: presence))
            #expect(try await reopened.keys() == [aliceKey, bobKey])
            #expect(try await reopened.generation() == 2)
        }
    }

    @Test func absentKeyAndAbsentFileReadAsNil() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            #expect(try await store.read(aliceKey) == nil)
            #expect(try await store.generation() == nil)
            #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(try await store.read(bobKey) == nil)
        }
    }

    @Test func replaceAndDelete() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            try await store.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(try await store.read(aliceKey)?.tokens == bobTokens)
            #expect(try await store.keys() == [aliceKey])
            try await store.delete(aliceKey)
            #expect(try await store.read(aliceKey) == nil)
            try await store.delete(aliceKey)  // deleting a missing item succeeds
            #expect(try await makeStore(dir.storeURL).keys().isEmpty)
        }
    }

    /// The write limit is the read limit: a file of exactly the format's maximum is written and reads back; one
    /// byte more is refused (`.tooLarge`) before anything is written, so the store never produces a file it would
    /// then refuse as corrupt.
    @Test func writesStopAtTheSizeTheReaderAccepts() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            func bob(_ length: Int) -> StoredCredential {
                StoredCredential(tokens: AuthTokens(accessToken: String(repeating: "x", count: length)), policy: .afterFirstUnlock)
            }
            try await store.write(bob(1), for: bobKey)
            let fitting = 1 + TokenFile.maximumSize - (try fileBytes(dir.storeURL).count)
            try await store.write(bob(fitting), for: bobKey)
            let full = try fileBytes(dir.storeURL)
            #expect(full.count == TokenFile.maximumSize)
            #expect(try await makeStore(dir.storeURL).read(bobKey) == bob(fitting))

            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await store.write(bob(fitting + 1), for: bobKey)
            }), ifIs: .tooLarge) else { Issue.record("a file over the maximum must be refused"); return }
            #expect(why.contains("16 MiB"))
            #expect(try fileBytes(dir.storeURL) == full)
            let names = try FileManager.default.contentsOfDirectory(atPath: dir.storeURL.deletingLastPathComponent().path)
            #expect(names.sorted() == ["tokens.skt", "tokens.skt.lock"])
        }
    }

    @Test func createsA0700DirectoryAndA0600File() async throws {
        try await withTempDirectory { dir in
            let url = dir.url.appendingPathComponent("xdg/data/shopkit/tokens.skt")
            let store = makeStore(url)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(mode(url.path) == 0o600)
            #expect(mode(url.deletingLastPathComponent().path) == 0o700)
            #expect(mode(dir.url.appendingPathComponent("xdg").path) == 0o700)
            // The lock file sits beside the store; no temp file is left behind.
            let names = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            #expect(names.sorted() == ["tokens.skt", "tokens.skt.lock"])
        }
    }

    @Test func defaultURLFollowsXDG() {
        #expect(EncryptedFileStore.defaultURL(environment: ["XDG_DATA_HOME": "/x/data", "HOME": "/home/u"]).path
            == "/x/data/shopkit/tokens.skt")
        #expect(EncryptedFileStore.defaultURL(environment: ["HOME": "/home/u"]).path
            == "/home/u/.local/share/shopkit/tokens.skt")
        // A relative XDG_DATA_HOME is invalid per the XDG spec and ignored.
        #expect(EncryptedFileStore.defaultURL(environment: ["XDG_DATA_HOME": "rel", "HOME": "/home/u"]).path
            == "/home/u/.local/share/shopkit/tokens.skt")
    }

    @Test func wrongPassphraseIsItsOwnError() async throws {
        try await withTempDirectory { dir in
            try await makeStore(dir.storeURL).write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let intruder = makeStore(dir.storeURL, passphrase: "not the passphrase")
            #expect(await caughtError { () async throws(CredentialError) in try await intruder.read(aliceKey) } == .wrongPassphrase)
            // A write with the wrong passphrase is refused too, and the file is unchanged.
            let before = try fileBytes(dir.storeURL)
            #expect(await caughtError { () async throws(CredentialError) in
                try await intruder.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
            } == .wrongPassphrase)
            #expect(try fileBytes(dir.storeURL) == before)
        }
    }

    @Test func fileReadableByOthersIsRefused() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            for bits: mode_t in [0o640, 0o604, 0o620, 0o660] {
                chmod(dir.storeURL.path, bits)
                let error = await caughtError { () async throws(CredentialError) in try await store.read(aliceKey) }
                #expect(error == .insecurePermissions(
                    "\(dir.storeURL.path) is readable or writable by group or others; run: chmod 600 \(dir.storeURL.path)"))
                #expect(await caughtError { () async throws(CredentialError) in
                    try await store.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
                } == error)
            }
            chmod(dir.storeURL.path, 0o600)
            #expect(try await store.read(aliceKey)?.tokens == aliceTokens)
        }
    }

    @Test func directoryOpenToOthersIsRefused() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let directory = dir.storeURL.deletingLastPathComponent().path
            chmod(directory, 0o755)
            let error = await caughtError { () async throws(CredentialError) in try await store.read(aliceKey) }
            #expect(error == .insecurePermissions(
                "directory \(directory) is accessible by group or others; run: chmod 700 \(directory)"))
            chmod(directory, 0o700)
            #expect(try await store.read(aliceKey)?.tokens == aliceTokens)
        }
    }

    @Test func symlinkedStoreFileIsRefused() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let real = dir.url.appendingPathComponent("real.skt")
            try FileManager.default.moveItem(at: dir.storeURL, to: real)
            try FileManager.default.createSymbolicLink(at: dir.storeURL, withDestinationURL: real)
            // Issue 39, item 6: a security refusal of its own (`unsafeFile`, token-store exit 12), no longer `.io`.
            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in try await store.read(aliceKey) }), ifIs: .unsafeFile)
            else { Issue.record("expected an unsafeFile error"); return }
            #expect(why.contains("symbolic link"))
        }
    }

    @Test func deviceBoundItemsOpenOnlyOnTheirDevice() async throws {
        try await withTempDirectory { dir in
            let here = makeStore(dir.storeURL, deviceID: "machine-a")
            let bound = AccessPolicy(access: .afterFirstUnlock, thisDeviceOnly: true)
            try await here.write(StoredCredential(tokens: bobTokens, policy: bound), for: bobKey)
            try await here.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)

            // The same file opened as another machine: the bound item does not open, the others do.
            let elsewhere = makeStore(dir.storeURL, deviceID: "machine-b")
            #expect(await caughtError { () async throws(CredentialError) in try await elsewhere.read(bobKey) } == .wrongDevice)
            #expect(try await elsewhere.read(aliceKey)?.tokens == aliceTokens)
            // Writing elsewhere keeps the bound item intact for its own machine.
            try await elsewhere.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: CredentialKey(service: "s", account: "c"))
            #expect(try await makeStore(dir.storeURL, deviceID: "machine-a").read(bobKey) == StoredCredential(tokens: bobTokens, policy: bound))
            // No machine id at all: a bound item cannot open, and cannot be written.
            let noID = EncryptedFileStore(configuration: .init(url: dir.storeURL, kdf: fastKDF, deviceID: nil),
                                          passphrase: passphrase("test passphrase"))
            #expect(noID.canBindToDevice == (EncryptedFileStore.machineID() != nil))
        }
    }

    @Test func derivedKeyIsCachedAcrossReadsAndWrites() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            for _ in 0..<5 { _ = try await store.read(aliceKey) }
            try await store.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
            #expect(await store.derivationCount == 1)
            let other = makeStore(dir.storeURL)
            _ = try await other.read(aliceKey)
            _ = try await other.read(bobKey)
            #expect(await other.derivationCount == 1)
        }
    }

    @Test func outOfRangeConfigurationIsRefusedForNewFiles() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL, kdf: .init(logN: 22, r: 8, p: 1))
            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            }), ifIs: .invalidConfiguration) else { Issue.record("expected an invalid-configuration error"); return }
            #expect(why.contains("logN 22"))
            #expect(await store.derivationCount == 0)
        }
    }

    /// Two store instances in one process lock each other out too (flock locks belong to the open file).
    @Test func twoInstancesInOneProcessLoseNoUpdate() async throws {
        try await withTempDirectory { dir in
            let first = makeStore(dir.storeURL), second = makeStore(dir.storeURL)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    let store = index % 2 == 0 ? first : second
                    group.addTask {
                        try await store.write(
                            StoredCredential(tokens: AuthTokens(accessToken: "t\(index)"), policy: .afterFirstUnlock),
                            for: CredentialKey(service: "parallel", account: "\(index)"))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await first.keys().count == 20)
            #expect(try await second.generation() == 20)
        }
    }

    @Test func passphraseNeverAppearsInDescriptions() {
        let secret = passphrase("hunter2-very-secret")
        #expect(!"\(secret)".contains("hunter2"))
        #expect(!String(reflecting: secret).contains("hunter2"))
    }
}

import Foundation
import ShopKitAPI
import Testing

@testable import ShopKitCredentials

/// The keyring store against a real gnome-keyring-daemon: the with-keyring session for the plain cases, and a
/// second private bus + daemon (``PrivateKeyring``) for locking and stopping the daemon.
/// Stores get a 60 s per-call timeout: these tests check what the keyring does, not how fast a loaded machine's
/// gnome-keyring-daemon answers (the timeouts themselves are tested in KeyringTimeoutTests and KeyringMidRunTests).
@Suite(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason), .timeLimit(.minutes(3)))
struct KeyringStoreTests {
    let tokens = AuthTokens(
        accessToken: "access-\(UUID().uuidString)", refreshToken: "refresh-\(UUID().uuidString)",
        expiresAt: Date(timeIntervalSince1970: 1_900_000_000))

    @Test func roundTripKeepsTokensAndPolicy() async throws {
        let store = KeyringStore(timeout: .seconds(60))
        let key = KeyringTestEnvironment.uniqueKey()
        let policy = AccessPolicy(access: .userPresence(reuseSeconds: 30), thisDeviceOnly: false)
        try await store.write(StoredCredential(tokens: tokens, policy: policy), for: key)
        let read = try await store.read(key)
        #expect(read == StoredCredential(tokens: tokens, policy: policy))
        try await store.delete(key)
    }

    @Test func absentItemReadsAsNil() async throws {
        let read = try await KeyringStore(timeout: .seconds(60)).read(KeyringTestEnvironment.uniqueKey())
        #expect(read == nil)
    }

    @Test func deleteRemovesTheItemAndDeletingAgainSucceeds() async throws {
        let store = KeyringStore(timeout: .seconds(60))
        let key = KeyringTestEnvironment.uniqueKey()
        try await store.write(StoredCredential(tokens: tokens, policy: .afterFirstUnlock), for: key)
        try await store.delete(key)
        #expect(try await store.read(key) == nil)
        try await store.delete(key)
    }

    @Test func overwriteReplacesTheItemEvenWhenTheBindingChanges() async throws {
        let store = KeyringStore(timeout: .seconds(60))
        let key = KeyringTestEnvironment.uniqueKey()
        try await store.write(StoredCredential(tokens: AuthTokens(accessToken: "first"), policy: .afterFirstUnlock), for: key)
        let bound = StoredCredential(tokens: tokens, policy: AccessPolicy(thisDeviceOnly: true))
        try await store.write(bound, for: key)
        #expect(try await store.read(key) == bound)
        let unbound = StoredCredential(tokens: AuthTokens(accessToken: "third"), policy: .afterFirstUnlock)
        try await store.write(unbound, for: key)
        #expect(try await store.read(key) == unbound)
        try await store.delete(key)
        #expect(try await store.read(key) == nil)  // no older item was left behind
    }

    @Test func thisDeviceOnlyItemFromAnotherMachineIsWrongDevice() async throws {
        let here = KeyringStore(timeout: .seconds(60), allowUnlockPrompt: false, deviceID: "machine-a")
        let elsewhere = KeyringStore(timeout: .seconds(60), allowUnlockPrompt: false, deviceID: "machine-b")
        let key = KeyringTestEnvironment.uniqueKey()
        let bound = StoredCredential(tokens: tokens, policy: AccessPolicy(thisDeviceOnly: true))
        try await here.write(bound, for: key)
        #expect(try await here.read(key) == bound)
        #expect(await credentialError { () throws(CredentialError) in try await elsewhere.read(key) } == .wrongDevice)
        try await here.delete(key)
    }

    @Test func thisDeviceOnlyWithoutMachineIDIsRefused() async throws {
        let store = KeyringStore(timeout: .seconds(10), allowUnlockPrompt: false, deviceID: nil)
        #expect(!store.canBindToDevice)
        let error = await credentialError { () throws(CredentialError) in
            try await store.write(
                StoredCredential(tokens: tokens, policy: AccessPolicy(thisDeviceOnly: true)),
                for: KeyringTestEnvironment.uniqueKey())
        }
        guard failureCode(of: error) == .policyUnsupported else {
            Issue.record("expected policyUnsupported, got \(String(describing: error))")
            return
        }
    }

    @Test func concurrentCallsFromManyStoresAllComplete() async throws {
        let service = "dev.shopkit.tests.\(UUID().uuidString)"
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    // The point is that every call completes (one shared libsecret thread, no deadlock), not how
                    // fast: a generous per-call timeout keeps a loaded machine from failing it.
                    let store = KeyringStore(timeout: .seconds(60))
                    let key = CredentialKey(service: service, account: "account-\(index)")
                    let credential = StoredCredential(tokens: AuthTokens(accessToken: "token-\(index)"), policy: .afterFirstUnlock)
                    try await store.write(credential, for: key)
                    #expect(try await store.read(key) == credential)
                    try await store.delete(key)
                }
            }
            try await group.waitForAll()
        }
    }

    @Test func aForeignBodyUnderOurSchemaIsCorrupt() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        // secret-tool (libsecret's own CLI) stores a secret that is not a ShopKit body under the ShopKit schema.
        let stored = try await TokenStoreBinary.run(
            ["store", "--label", "foreign", "xdg:schema", "dev.shopkit.Token", "service", key.service, "account", key.account],
            stdin: "not a shopkit body", executable: URL(fileURLWithPath: "/usr/bin/secret-tool"))
        #expect(stored.status == 0)
        let error = await credentialError { () throws(CredentialError) in try await KeyringStore(timeout: .seconds(60)).read(key) }
        guard failureCode(of: error) == .corrupt else {
            Issue.record("expected corrupt, got \(String(describing: error))")
            return
        }
        try await KeyringStore(timeout: .seconds(60)).delete(key)
        #expect(try await KeyringStore(timeout: .seconds(60)).read(key) == nil)
    }

    @Test func probeFindsTheUnlockedSessionKeyring() async {
        #expect(await KeyringStore(timeout: .seconds(60)).probe() == .available(locked: false))
    }

    /// GLib's shared session-bus connection ends the process on close by default; the store's must not, or a
    /// program with a GLib main loop would die with its session bus instead of seeing "unavailable".
    @Test func theStoresBusConnectionDoesNotExitOnClose() async throws {
        let store = KeyringStore(timeout: .seconds(60))
        #expect(try await store.connectionExitsOnClose() == false)
        _ = try await store.read(KeyringTestEnvironment.uniqueKey())
        #expect(try await store.connectionExitsOnClose() == false)
    }

    // The cases below need a keyring of their own (locking the shared one, or stopping it, would disturb every
    // other test), so they run the real store in a child process, the token-store binary, pointed at a second
    // private bus with DBUS_SESSION_BUS_ADDRESS: libsecret only talks to the process's session bus.

    @Test func noSessionBusIsUnavailable() async throws {
        let outcome = try await TokenStoreBinary.run(
            ["get", "--backend", "keyring", "--service", "s", "--account", "a"],
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/shopkit-no-bus"])
        #expect(outcome.status == 3)
        #expect(outcome.stderr.contains("no Secret Service available"))
    }

    @Test func lockedCollectionReadsAsLockedWithoutPrompting() async throws {
        let keyring = try await PrivateKeyring.start()
        let bus = ["DBUS_SESSION_BUS_ADDRESS": keyring.address]
        let target = ["--service", "locked-test", "--account", "a"]
        do {
            let set = try await TokenStoreBinary.run(["set"] + target, stdin: "locked-token\n", environment: bus)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(try await TokenStoreBinary.run(["get"] + target, environment: bus).stdout == "locked-token\n")

            try await keyring.lockDefaultCollection()

            let probe = try await TokenStoreBinary.run(["probe"], environment: bus)
            #expect(probe.status == 2)
            #expect(probe.stdout.contains("keyring: available, locked"))
            let get = try await TokenStoreBinary.run(["get"] + target, environment: bus)
            #expect(get.status == 2, "\(get.stderr)")
            #expect(get.stdout.isEmpty)
            #expect(!get.stderr.contains("locked-token"))
            // An item the locked keyring does not show is not reported as absent.
            let unseen = try await TokenStoreBinary.run(["get", "--service", "locked-test", "--account", "b"], environment: bus)
            #expect(unseen.status == 2)
            let write = try await TokenStoreBinary.run(["set"] + target, stdin: "other\n", environment: bus)
            #expect(write.status == 2)
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
    }

    /// A delete must not report success while the item stays in a locked keyring.
    @Test func deleteInALockedKeyringIsLockedAndKeepsTheItem() async throws {
        let keyring = try await PrivateKeyring.start()
        let bus = ["DBUS_SESSION_BUS_ADDRESS": keyring.address]
        let key = CredentialKey(service: "delete-locked-test", account: "a")
        let target = ["--service", key.service, "--account", key.account]
        do {
            #expect(try await TokenStoreBinary.run(["set"] + target, stdin: "kept-token\n", environment: bus).status == 0)
            try await keyring.lockDefaultCollection()

            let delete = try await TokenStoreBinary.run(["delete"] + target, environment: bus)
            #expect(delete.status == 2, "\(delete.stderr)")
            #expect(delete.stderr.contains("locked"))
            #expect(try await keyring.holdsItem(key))
            // Deleting something the locked keyring does not show cannot be confirmed either.
            let unseen = try await TokenStoreBinary.run(["delete", "--service", key.service, "--account", "b"], environment: bus)
            #expect(unseen.status == 2)

            // Unlock for real: a new daemon opens the login keyring with its password. The item is still there.
            try await keyring.killKeyring()
            try await keyring.startKeyring()
            #expect(try await TokenStoreBinary.run(["get"] + target, environment: bus).stdout == "kept-token\n")
            #expect(try await TokenStoreBinary.run(["delete"] + target, environment: bus).status == 0)
            #expect(try await TokenStoreBinary.run(["get"] + target, environment: bus).status == 1)
            #expect(try await keyring.holdsItem(key) == false)
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
    }

    /// The keyring daemon dies while the bus lives: nothing owns the Secret Service name, which is "unavailable",
    /// not "failing"; auto, which used the keyring for the `set`, does not fall back to the file (issue 16).
    @Test func keyringDaemonKilledWhileTheBusLivesIsUnavailable() async throws {
        let keyring = try await PrivateKeyring.start()
        let bus = ["DBUS_SESSION_BUS_ADDRESS": keyring.address]
        let target = ["--service", "killed-daemon-test", "--account", "a"]
        do {
            #expect(try await TokenStoreBinary.run(["set"] + target, stdin: "t\n", environment: bus).status == 0)
            try await keyring.killKeyring()
            let get = try await TokenStoreBinary.run(["get", "--backend", "keyring"] + target, environment: bus)
            #expect(get.status == 3, "\(get.stderr)")
            #expect(get.stderr.contains("org.freedesktop.secrets"), "\(get.stderr)")
            let probe = try await TokenStoreBinary.run(["probe"], environment: bus)
            #expect(probe.status == 3)
            #expect(probe.stdout.hasPrefix("backend: none ("), "\(probe.stdout)")
            #expect(probe.stdout.contains("\nkeyring: unavailable: "), "\(probe.stdout)")
            let auto = try await TokenStoreBinary.run(["get"] + target, environment: bus)
            #expect(auto.status == 3)
            #expect(auto.stderr.contains("not falling back to the token file"), "\(auto.stderr)")
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
    }

    @Test func busKilledAfterAWriteIsUnavailable() async throws {
        let keyring = try await PrivateKeyring.start()
        let bus = ["DBUS_SESSION_BUS_ADDRESS": keyring.address]
        let target = ["--service", "stopped-test", "--account", "a"]
        do {
            #expect(try await TokenStoreBinary.run(["set"] + target, stdin: "t\n", environment: bus).status == 0)
            try await keyring.killBus()
            let get = try await TokenStoreBinary.run(["get", "--backend", "keyring"] + target, environment: bus)
            #expect(get.status == 3, "\(get.stderr)")
            #expect(try await TokenStoreBinary.run(["probe"], environment: bus).status == 3)
            // With no Secret Service left, auto does not turn to the file: the keyring held these tokens (issue 16).
            let auto = try await TokenStoreBinary.run(["get"] + target, environment: bus)
            #expect(auto.status == 3)
            #expect(auto.stderr.contains("not falling back to the token file"), "\(auto.stderr)")
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
    }

    @Test func frozenDaemonTimesOutAsUnavailable() async throws {
        let keyring = try await PrivateKeyring.start()
        let bus = ["DBUS_SESSION_BUS_ADDRESS": keyring.address]
        keyring.pauseKeyring()
        // The daemon is frozen: the call can only end by the store's cancellable firing.
        let target = ["--timeout", "1", "--service", "s", "--account", "a"]
        let outcomes = try? await (
            forced: TokenStoreBinary.run(["get", "--backend", "keyring"] + target, environment: bus),
            auto: TokenStoreBinary.run(["get"] + target, environment: bus),
            probe: TokenStoreBinary.run(["probe", "--timeout", "1"], environment: bus))
        await keyring.stop()
        let forced = try #require(outcomes?.forced)
        #expect(forced.status == 3)
        #expect(forced.stderr.contains("did not answer") || forced.stderr.contains("timed out"))
        // A keyring that is there but frozen is an error for auto too, never a fall-back to the file (which would
        // ask for a passphrase: exit 8 with no terminal).
        let auto = try #require(outcomes?.auto)
        #expect(auto.status == 3, "\(auto.stderr)")
        #expect(auto.stderr.contains("failing") && !auto.stderr.contains("passphrase"), "\(auto.stderr)")
        let probe = try #require(outcomes?.probe)
        #expect(probe.status == 3)
        #expect(probe.stdout.hasPrefix("backend: none"), "\(probe.stdout)")
        #expect(probe.stdout.contains("keyring: failing: "), "\(probe.stdout)")
    }
}

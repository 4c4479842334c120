import Foundation
import Testing

@testable import ShopKitCredentials

/// `token-store`'s `auto` backend when the keyring stops answering (issue 16, items 1 and 10): once a keyring held
/// the tokens it never falls back to the file, a fallback with no file is unavailable for get and delete, and
/// `--file` means the file. Each test has its own `XDG_DATA_HOME`, where the keyring marker lives.
@Suite(.timeLimit(.minutes(3))) struct TokenStoreFallbackCLITests {
    /// Runs `token-store` with DBUS_SESSION_BUS_ADDRESS removed from its environment (ssh, cron, `sudo -u`).
    static func runWithoutBus(
        _ arguments: [String], stdin: String = "", environment: [String: String]
    ) async throws -> TokenStoreBinary.Outcome {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        return try await TokenStoreBinary.run(
            ["-u", "DBUS_SESSION_BUS_ADDRESS", binary.path] + arguments, stdin: stdin, environment: environment,
            executable: URL(fileURLWithPath: "/usr/bin/env"))
    }

    /// The reproduction from the review: a token set into the keyring, then `delete` with no bus address returned
    /// 0 while the token stayed, `get` said "no token stored", `set` made a second copy in a file.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func withoutTheBusAKeyringUsedBeforeIsUnavailableNotTheFile() async throws {
        try await withTempDirectory { dir in
            let environment = ["XDG_DATA_HOME": dir.url.path]
            let key = KeyringTestEnvironment.uniqueKey()
            let target = ["--service", key.service, "--account", key.account]
            let token = "fallback-\(UUID().uuidString)"
            let set = try await TokenStoreBinary.run(["set"] + target, stdin: token + "\n", environment: environment)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stderr == "token-store: backend: keyring\n")
            #expect(FileManager.default.fileExists(atPath: dir.storeURL.path + ".keyring"))

            let delete = try await Self.runWithoutBus(["delete"] + target, environment: environment)
            #expect(delete.status == 3, "\(delete.stderr)")
            #expect(delete.stderr.contains("not falling back to the token file"), "\(delete.stderr)")
            let get = try await Self.runWithoutBus(["get"] + target, environment: environment)
            #expect(get.status == 3, "\(get.stderr)")
            #expect(get.stdout.isEmpty)
            let second = try await Self.runWithoutBus(["set"] + target, stdin: "second-copy\n", environment: environment)
            #expect(second.status == 3, "\(second.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
            let probe = try await Self.runWithoutBus(["probe"], environment: environment)
            #expect(probe.status == 3)
            #expect(probe.stdout.hasPrefix("backend: none (no Secret Service available: "), "\(probe.stdout)")

            // In the session the token is still there: nothing claimed a sign-out that did not happen.
            let still = try await TokenStoreBinary.run(["get"] + target, environment: environment)
            #expect(still.stdout == token + "\n")
            #expect(try await TokenStoreBinary.run(["delete"] + target, environment: environment).status == 0)
        }
    }

    /// The marker belongs to the user, not to one `XDG_DATA_HOME` (issue 26, item 2): a token stored into the
    /// keyring from a session with one data directory, then `set` from cron, systemd or `sudo -u` with no bus and
    /// another data directory, used to succeed and quietly make a second copy in a file there.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func theMarkerBelongsToTheUserNotToADataDirectory() async throws {
        try await withTempDirectory { dir in
            let user = dir.url.appendingPathComponent("user").path
            let desktop = ["XDG_DATA_HOME": dir.url.appendingPathComponent("desktop").path, Self.markerVariable: user]
            var cron = TokenStoreCLITests.noBus
            cron["XDG_DATA_HOME"] = dir.url.appendingPathComponent("cron").path
            cron[Self.markerVariable] = user
            let key = KeyringTestEnvironment.uniqueKey()
            let target = ["--service", key.service, "--account", key.account]
            let set = try await TokenStoreBinary.run(["set"] + target, stdin: "in-keyring\n", environment: desktop)
            #expect(set.status == 0, "\(set.stderr)")

            let second = try await TokenStoreCLITests.runWithPassphrase(
                ["set"] + target, passphrase: "second-copy-passphrase", stdin: "second-copy\n", environment: cron)
            #expect(second.status == 3, "\(second.stderr)")
            #expect(second.stderr.contains("not falling back to the token file"), "\(second.stderr)")
            #expect(!FileManager.default.fileExists(atPath: cron["XDG_DATA_HOME"]! + "/shopkit/tokens.skt"))
            let get = try await TokenStoreCLITests.runWithPassphrase(
                ["get"] + target, passphrase: "second-copy-passphrase", environment: cron)
            #expect(get.status == 3, "\(get.stderr)")

            #expect(try await TokenStoreBinary.run(["delete"] + target, environment: desktop).status == 0)
        }
    }

    /// Where the tests keep the user's keyring marker (scripts/with-keyring sets it for the whole run).
    static let markerVariable = "SHOPKIT_KEYRING_MARKER_DIR"

    /// The daemon killed while the bus lives: probe, get and set are unavailable, and no file appears.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func aKilledDaemonIsUnavailableNotTheFile() async throws {
        let daemons = try await PrivateKeyring.start()
        var failure: (any Error)?
        do {
            try await withTempDirectory { dir in
                let environment = ["XDG_DATA_HOME": dir.url.path, "DBUS_SESSION_BUS_ADDRESS": daemons.address]
                let target = ["--service", "killed-daemon", "--account", "a"]
                let set = try await TokenStoreBinary.run(["set"] + target, stdin: "before\n", environment: environment)
                #expect(set.status == 0, "\(set.stderr)")
                try await daemons.killKeyring()

                let probe = try await TokenStoreBinary.run(["probe"], environment: environment)
                #expect(probe.status == 3)
                #expect(probe.stdout.hasPrefix("backend: none ("), "\(probe.stdout)")
                let get = try await TokenStoreBinary.run(["get"] + target, environment: environment)
                #expect(get.status == 3, "\(get.stderr)")
                #expect(!get.stderr.contains("no token stored"))
                let again = try await TokenStoreBinary.run(["set"] + target, stdin: "after\n", environment: environment)
                #expect(again.status == 3, "\(again.stderr)")
                #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
            }
        } catch {
            failure = error
        }
        await daemons.stop()
        if let failure { throw failure }
    }

    /// No keyring was ever used and there is no file: get and delete cannot tell "nothing stored" from "stored in
    /// a keyring out of reach", so they are unavailable; once `set` has made the file, the file is used.
    @Test func aFallbackWithNoFileIsUnavailableForGetAndDelete() async throws {
        try await withTempDirectory { dir in
            var environment = TokenStoreCLITests.noBus
            environment["XDG_DATA_HOME"] = dir.url.path
            let target = ["--service", "s", "--account", "a"]
            let get = try await TokenStoreBinary.run(["get"] + target, environment: environment)
            #expect(get.status == 3, "\(get.stderr)")
            #expect(get.stderr.contains("no token file"), "\(get.stderr)")
            let delete = try await TokenStoreBinary.run(["delete"] + target, environment: environment)
            #expect(delete.status == 3, "\(delete.stderr)")

            let set = try await TokenStoreCLITests.runWithPassphrase(
                ["set"] + target, passphrase: "fallback-passphrase", stdin: "file-token\n", environment: environment)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stderr.hasPrefix("token-store: backend: file \(dir.storeURL.path) (no keyring: "), "\(set.stderr)")
            let read = try await TokenStoreCLITests.runWithPassphrase(
                ["get"] + target, passphrase: "fallback-passphrase", environment: environment)
            #expect(read.stdout == "file-token\n", "\(read.stderr)")
            let other = try await TokenStoreCLITests.runWithPassphrase(
                ["get", "--service", "s", "--account", "other"], passphrase: "fallback-passphrase", environment: environment)
            #expect(other.status == 1, "\(other.stderr)")
        }
    }

    /// `--file` while a keyring answers: the file is used (it implies `--backend file`), never silently ignored;
    /// with another explicit backend it is a usage error.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func fileOptionImpliesTheFileBackend() async throws {
        try await withTempDirectory { dir in
            let environment = ["XDG_DATA_HOME": dir.url.path]
            let file = dir.url.appendingPathComponent("explicit/tokens.skt").path
            let key = KeyringTestEnvironment.uniqueKey()
            let target = ["--service", key.service, "--account", key.account]
            let set = try await TokenStoreCLITests.runWithPassphrase(
                ["set", "--file", file] + target, passphrase: "explicit-file-pass", stdin: "explicit\n",
                environment: environment)
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stderr == "token-store: backend: file \(file) (chosen explicitly)\n")
            #expect(FileManager.default.fileExists(atPath: file))
            #expect(try await TokenStoreBinary.run(["get", "--backend", "keyring"] + target, environment: environment).status == 1)
            for backend in ["keyring", "auto"] {
                let refused = try await TokenStoreBinary.run(
                    ["get", "--backend", backend, "--file", file] + target, environment: environment)
                #expect(refused.status == 64, "\(backend): \(refused.stderr)")
                #expect(refused.stderr.contains("--file"))
            }
        }
    }
}

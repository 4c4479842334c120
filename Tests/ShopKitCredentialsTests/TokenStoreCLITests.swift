import Foundation
import Testing

@testable import ShopKitCredentials

/// Runs the built `token-store` binary as a child process and checks its standard output and exit status.
@Suite(.timeLimit(.minutes(3))) struct TokenStoreCLITests {
    /// No session bus, and a data directory and a user's marker directory no keyring marker was ever written to (a
    /// keyring test's `auto` writes them into the shared directories of scripts/with-keyring, which would rightly
    /// stop `auto` picking the file).
    static let noBus = [
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/shopkit-no-bus",
        "XDG_DATA_HOME": "/nonexistent/shopkit-no-data-\(UUID().uuidString)",
        "SHOPKIT_KEYRING_MARKER_DIR": "/nonexistent/shopkit-no-marker-\(UUID().uuidString)",
    ]

    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func setGetDeleteRoundTripOnTheKeyring() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        let target = ["--service", key.service, "--account", key.account]
        let token = "cli-token-\(UUID().uuidString)"
        let set = try await TokenStoreBinary.run(["set"] + target, stdin: token + "\n")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(!set.stderr.contains(token))
        let get = try await TokenStoreBinary.run(["get"] + target)
        #expect(get.status == 0)
        #expect(get.stdout == token + "\n")
        let forced = try await TokenStoreBinary.run(["get", "--backend", "keyring"] + target)
        #expect(forced.stdout == token + "\n")
        let delete = try await TokenStoreBinary.run(["delete"] + target)
        #expect(delete.status == 0)
        let gone = try await TokenStoreBinary.run(["get"] + target)
        #expect(gone.status == 1)
        #expect(gone.stdout.isEmpty)
    }

    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func jsonRoundTripKeepsRefreshTokenAndExpiry() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        let target = ["--service", key.service, "--account", key.account]
        let json = #"{"accessToken":"A1","expiresAt":"2030-01-01T00:00:00Z","refreshToken":"R1"}"#
        #expect(try await TokenStoreBinary.run(["set", "--json", "--this-device-only", "--policy", "after-first-unlock"] + target, stdin: json).status == 0)
        let get = try await TokenStoreBinary.run(["get", "--json"] + target)
        #expect(get.stdout == json + "\n")
        _ = try await TokenStoreBinary.run(["delete"] + target)
    }

    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func probeReportsTheKeyring() async throws {
        let probe = try await TokenStoreBinary.run(["probe"])
        #expect(probe.status == 0)
        let device = KeyringStore().canBindToDevice ? "available (machine id readable)" : "unavailable (no machine id)"
        #expect(probe.stdout == """
            backend: keyring
            keyring: available, unlocked
            device binding: \(device)
            unlock prompt: not allowed (never prompts)
            presence check: unavailable for keyring items in token-store

            """)
    }

    /// From a terminal (a pty made by util-linux `script`), `set` reads one line without echoing the token.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate && FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
        KeyringTestEnvironment.skipReason))
    func setFromATerminalDoesNotEchoTheToken() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        let key = KeyringTestEnvironment.uniqueKey()
        let token = "tty-\(UUID().uuidString)"
        let command = "'\(binary.path)' set --service '\(key.service)' --account '\(key.account)'"
        // Type the token only once the prompt shows (echo is off by then), as a person would.
        let (status, screen) = try await TerminalSession.run(command, answers: [("Token: ", token)])
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("Token: "))
        #expect(!screen.contains(token))
        #expect(try await TokenStoreBinary.run(["get", "--service", key.service, "--account", key.account]).stdout == token + "\n")
        _ = try await TokenStoreBinary.run(["delete", "--service", key.service, "--account", key.account])
    }

    @Test func usageErrorsExit64WithOneLine() async throws {
        let cases: [([String], String)] = [
            (["get", "--service", "s"], ""),  // no --account
            (["frobnicate"], ""),
            (["get", "--service", "s", "--account", "a", "--backend", "cloud"], ""),
            (["set", "--service", "s", "--account", "a", "--policy", "sometimes"], "t\n"),
            (["get", "--service", "s", "--account", "a", "--timeout", "0"], ""),
            (["get", "--service", "s", "--account", "a", "--passphrase-fd", "-1"], ""),
            (["set", "--service", "s", "--account", "a"], "\n"),  // empty token
            (["set", "--service", "s", "--account", "a"], "one\ntwo\n"),  // two lines
            (["set", "--service", "s", "--account", "a", "--passphrase-fd", "0"], "t\n"),  // stdin is the token's
        ]
        for (arguments, stdin) in cases {
            let outcome = try await TokenStoreBinary.run(arguments, stdin: stdin, environment: Self.noBus)
            #expect(outcome.status == 64, "\(arguments): \(outcome.stderr)")
            #expect(outcome.stderr.split(separator: "\n").count == 1, "\(arguments): \(outcome.stderr)")
            #expect(outcome.stdout.isEmpty)
        }
    }

    @Test func noSessionBusIsUnavailableAndAutoWouldPickTheFile() async throws {
        let probe = try await TokenStoreBinary.run(["probe"], environment: Self.noBus)
        #expect(probe.status == 3)
        #expect(probe.stdout.hasPrefix("backend: file\nkeyring: unavailable: "))
        let get = try await TokenStoreBinary.run(
            ["get", "--backend", "keyring", "--service", "s", "--account", "a"], environment: Self.noBus)
        #expect(get.status == 3)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr.hasPrefix("token-store: no Secret Service available"))
    }

    /// Runs the binary through bash so the passphrase arrives on descriptor 3 from a 0600 file; `withoutTerminal`
    /// runs it under `setsid`, in a session with no controlling terminal.
    static func runWithPassphrase(
        _ arguments: [String], passphrase: String, stdin: String = "", withoutTerminal: Bool = false,
        environment: [String: String] = noBus
    ) async throws -> TokenStoreBinary.Outcome {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("skpass-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("passphrase")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data((passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let shell = ["/bin/bash", "-c", "exec 3<\"$0\"; exec \"$@\" --passphrase-fd 3", file.path, binary.path] + arguments
        let command = withoutTerminal ? ["/usr/bin/setsid", "--wait"] + shell : shell
        return try await TokenStoreBinary.run(
            Array(command.dropFirst()), stdin: stdin, environment: environment, executable: URL(fileURLWithPath: command[0]))
    }

    @Test func corruptFileExits5AndOpenPermissionsExit7() async throws {
        try await withTempDirectory { dir in
            let url = dir.storeURL
            let target = ["get", "--backend", "file", "--file", url.path, "--service", "s", "--account", "a"]
            let set = try await Self.runWithPassphrase(
                ["set", "--backend", "file", "--file", url.path, "--service", "s", "--account", "a"],
                passphrase: "cli-exit-codes", stdin: "exit-code-token\n")
            #expect(set.status == 0, "\(set.stderr)")
            var bytes = try fileBytes(url)
            let original = bytes
            bytes[bytes.count - 1] ^= 0x01  // the payload tag
            try writeBytes(bytes, to: url)
            let corrupt = try await Self.runWithPassphrase(target, passphrase: "cli-exit-codes")
            #expect(corrupt.status == 5, "\(corrupt.stderr)")
            #expect(corrupt.stdout.isEmpty)
            #expect(corrupt.stderr.contains("corrupt"))

            try writeBytes(original, to: url)
            #expect(try await Self.runWithPassphrase(target, passphrase: "cli-exit-codes").stdout == "exit-code-token\n")
            chmod(url.path, 0o644)
            let open = try await Self.runWithPassphrase(target, passphrase: "cli-exit-codes")
            #expect(open.status == 7, "\(open.stderr)")
            #expect(open.stdout.isEmpty)
            #expect(open.stderr.contains("chmod 600"))
        }
    }

    @Test func probeReportsTheFileStoresCapabilities() async throws {
        let probe = try await TokenStoreBinary.run(["probe"], environment: Self.noBus)
        let lines = probe.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(probe.stdout)")
        #expect(lines.first == "backend: file")
        let canBind = EncryptedFileStore.machineID() != nil
        #expect(lines.contains("device binding: " + (canBind ? "available (machine id readable)" : "unavailable (no machine id)")))
        #expect(lines.contains("unlock prompt: not allowed (never prompts)"))
        #expect(lines.contains { $0.hasPrefix("presence check: ") })
    }

    @Test
    func fileBackendRoundTripAndWrongPassphrase() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("skcli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = ["--service", "s", "--account", "a", "--file", directory.appendingPathComponent("t.skt").path]
        let set = try await Self.runWithPassphrase(["set", "--backend", "file"] + target, passphrase: "correct-horse-7Q", stdin: "file-token\n")
        #expect(set.status == 0, "\(set.stderr)")
        let get = try await Self.runWithPassphrase(["get", "--backend", "file"] + target, passphrase: "correct-horse-7Q")
        #expect(get.stdout == "file-token\n")
        let auto = try await Self.runWithPassphrase(["get"] + target, passphrase: "correct-horse-7Q")  // no bus: auto → file
        #expect(auto.stdout == "file-token\n")
        let wrong = try await Self.runWithPassphrase(["get", "--backend", "file"] + target, passphrase: "incorrect-pony-3Z")
        #expect(wrong.status == 4)
        #expect(!wrong.stderr.contains("correct-horse-7Q") && !wrong.stderr.contains("incorrect-pony-3Z"))
        let missing = try await Self.runWithPassphrase(
            ["get", "--backend", "file", "--service", "s", "--account", "other", "--file", target.last!], passphrase: "correct-horse-7Q")
        #expect(missing.status == 1)
    }
}

import Foundation
import ShopKitAPI
import Testing

@testable import ShopKitCredentials

/// `token-store get` never prints a client-certificate private key by accident (issue 26, "client-certificate
/// keys"): an item holding a PEM private key (as `storeClientIdentity` stores it) is refused unless
/// `--export-private-key` is given and `yes` is typed on the controlling terminal.
@Suite(.timeLimit(.minutes(3))) struct TokenStoreKeyItemCLITests {
    static let passphrase = "key-item-passphrase-7R"
    /// A PEM private key's shape; its marker line must never reach standard output or error.
    static let marker = "MC4CAQAwBQYDK2VwBCIEIKeyItemMarkerLineNotAReal"
    static let pem = "-----BEGIN PRIVATE KEY-----\n\(marker)\n-----END PRIVATE KEY-----\n"

    /// A file store in `directory` with the key item s/key (and a token item s/token), written through the library.
    static func keyFile(in directory: TempDirectory) async throws -> String {
        let store = makeStore(directory.storeURL, passphrase: passphrase)
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: pem), policy: .afterFirstUnlock),
            for: CredentialKey(service: "s", account: "key"))
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: "plain-token"), policy: .afterFirstUnlock),
            for: CredentialKey(service: "s", account: "token"))
        return directory.storeURL.path
    }

    /// A client key item (its own kind): `get` does not see it under that name, `--export-private-key` prints it
    /// after `yes` on the terminal.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"))
    func aClientKeyItemIsPrintedOnlyWhenExported() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            try await makeStore(dir.storeURL, passphrase: Self.passphrase).write(
                StoredCredential(tokens: AuthTokens(accessToken: Self.pem), policy: .afterFirstUnlock),
                for: CredentialKey(service: "s", account: "client", kind: .clientKey))
            let file = dir.storeURL.path
            let get = try await TokenStoreCLITests.runWithPassphrase(
                ["get", "--file", file, "--service", "s", "--account", "client"], passphrase: Self.passphrase)
            #expect(get.status == 1, "\(get.stderr)")
            #expect(get.stdout.isEmpty && !get.stderr.contains(Self.marker))
            let command = "'\(binary.path)' get --file '\(file)' --service s --account client --export-private-key; "
                + "echo \"status=$?\""
            let session = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus,
                answers: [("Passphrase for the token file: ", Self.passphrase), ("Type yes to print it: ", "yes")])
            #expect(session.screen.contains("client key s/client holds a private key"), "\(session.screen)")
            #expect(session.screen.contains(Self.marker) && session.screen.contains("status=0"), "\(session.screen)")
        }
    }

    @Test(arguments: [[], ["--json"]])
    func getRefusesToPrintAPrivateKey(extra: [String]) async throws {
        try await withTempDirectory { dir in
            let file = try await Self.keyFile(in: dir)
            let get = try await TokenStoreCLITests.runWithPassphrase(
                ["get", "--file", file, "--service", "s", "--account", "key"] + extra, passphrase: Self.passphrase)
            #expect(get.status == 6, "\(get.stderr)")
            #expect(get.stdout.isEmpty)
            #expect(get.stderr.contains("--export-private-key"), "\(get.stderr)")
            #expect(!get.stderr.contains(Self.marker))
            // A token next to it is printed as before.
            let token = try await TokenStoreCLITests.runWithPassphrase(
                ["get", "--file", file, "--service", "s", "--account", "token"] + extra, passphrase: Self.passphrase)
            #expect(token.status == 0 && token.stdout.contains("plain-token"), "\(token.stderr)")
        }
    }

    /// `--export-private-key` without a terminal to confirm on: refused, nothing printed.
    @Test func exportWithoutATerminalIsRefused() async throws {
        try await withTempDirectory { dir in
            let file = try await Self.keyFile(in: dir)
            let get = try await TokenStoreCLITests.runWithPassphrase(
                ["get", "--file", file, "--service", "s", "--account", "key", "--export-private-key"],
                passphrase: Self.passphrase, withoutTerminal: true)
            #expect(get.status == 6, "\(get.stderr)")
            #expect(get.stdout.isEmpty)
            #expect(get.stderr.contains("terminal"), "\(get.stderr)")
            #expect(!get.stderr.contains(Self.marker))
        }
    }

    /// On a terminal (a pty made by util-linux `script`): `yes` prints the key, anything else refuses.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"),
        arguments: [("yes", true), ("no", false), ("y", false)])
    func exportAsksOnTheTerminal(answer: String, printed: Bool) async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            let file = try await Self.keyFile(in: dir)
            let command = "'\(binary.path)' get --file '\(file)' --service s --account key --export-private-key; "
                + "echo \"status=$?\""
            let session = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus,
                answers: [("Passphrase for the token file: ", Self.passphrase), ("Type yes to print it: ", answer)])
            #expect(session.screen.contains("s/key holds a private key"), "\(session.screen)")
            #expect(session.screen.contains(Self.marker) == printed, "\(session.screen)")
            #expect(session.screen.contains(printed ? "status=0" : "status=6"), "\(session.screen)")
        }
    }
}

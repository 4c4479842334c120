import Foundation
import ShopKitAPI
import Testing
import TestSupport

@testable import ShopKitCredentials

/// `token-store` with `user-presence` items, run as the built binary: the file backend asks the file passphrase
/// again on the controlling terminal and fails closed without one; the keyring backend has no presence check and
/// says so. The no-terminal cases run the binary under `setsid`, so it has no controlling terminal even when the
/// tests run from one.
@Suite(.timeLimit(.minutes(3))) struct TokenStorePresenceCLITests {
    static let passphrase = "presence-passphrase-4K"
    static let token = "presence-token-\(UUID().uuidString)"

    /// A file store in `directory` holding one `user-presence` item for s/a, written through the library.
    static func presenceFile(in directory: URL) async throws -> URL {
        let url = directory.appendingPathComponent("shopkit/tokens.skt")
        let store = makeStore(url, passphrase: passphrase)
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: token), policy: AccessPolicy(access: .userPresence(reuseSeconds: 0))),
            for: CredentialKey(service: "s", account: "a"))
        return url
    }

    /// Runs the binary with no controlling terminal, the passphrase on descriptor 3 and standard input `stdin`.
    static func runWithoutTerminal(_ arguments: [String], stdin: String = "") async throws -> TokenStoreBinary.Outcome {
        try await TokenStoreCLITests.runWithPassphrase(arguments, passphrase: passphrase, stdin: stdin, withoutTerminal: true)
    }

    @Test func fileSetWithoutATerminalIsRefusedAndWritesNothing() async throws {
        try await withTempDirectory { dir in
            let file = dir.storeURL.path
            let set = try await Self.runWithoutTerminal(
                ["set", "--backend", "file", "--file", file, "--service", "s", "--account", "a", "--policy", "user-presence:60"],
                stdin: Self.token + "\n")
            #expect(set.status == 6, "\(set.stderr)")
            #expect(set.stderr.contains("there is no terminal here"), "\(set.stderr)")
            #expect(!set.stderr.contains(Self.token) && !set.stderr.contains(Self.passphrase))
            #expect(!FileManager.default.fileExists(atPath: file))
        }
    }

    @Test func fileGetWithoutATerminalFailsClosed() async throws {
        try await withTempDirectory { dir in
            let file = try await Self.presenceFile(in: dir.url).path
            let get = try await Self.runWithoutTerminal(["get", "--backend", "file", "--file", file, "--service", "s", "--account", "a"])
            #expect(get.status == 6, "\(get.stderr)")
            #expect(get.stdout.isEmpty)
            #expect(get.stderr.contains("requires user presence") && get.stderr.contains("no terminal"), "\(get.stderr)")
            #expect(!get.stderr.contains(Self.token) && !get.stderr.contains(Self.passphrase))
        }
    }

    /// From a terminal (a pty made by util-linux `script`), `get` asks the file passphrase again before printing
    /// a `user-presence` token, and refuses after three wrong answers.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"))
    func fileGetFromATerminalAsksThePassphraseAgain() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            let file = try await Self.presenceFile(in: dir.url).path
            let passphraseFile = dir.url.appendingPathComponent("passphrase")
            _ = FileManager.default.createFile(
                atPath: passphraseFile.path, contents: Data((Self.passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
            let command = "'\(binary.path)' get --backend file --file '\(file)' --service s --account a --passphrase-fd 3 "
                + "3<'\(passphraseFile.path)'"
            let prompt = "Passphrase to confirm it is you: "

            let right = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus, answers: [(prompt, Self.passphrase)])
            #expect(right.status == 0, "\(right.screen)")
            #expect(right.screen.contains("ShopKit wants to read the credential s/a"))
            #expect(right.screen.contains(Self.token))
            #expect(!right.screen.contains(Self.passphrase))  // typed without echo

            let wrong = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus, answers: Array(repeating: (prompt, "not it"), count: 3))
            #expect(wrong.status == 6, "\(wrong.screen)")
            #expect(!wrong.screen.contains(Self.token))
            #expect(wrong.screen.contains("did not match after 3 tries"))
        }
    }

    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func keyringSetIsRefusedSayingWhy() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        let target = ["--service", key.service, "--account", key.account]
        let set = try await TokenStoreBinary.run(["set", "--policy", "user-presence"] + target, stdin: Self.token + "\n")
        #expect(set.status == 6, "\(set.stderr)")
        #expect(set.stderr.contains("no presence check for keyring items"), "\(set.stderr)")
        #expect(try await TokenStoreBinary.run(["get"] + target).status == 1)
    }

    /// An item a program stored with user-presence (through its own verifier) is not printed by token-store.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func keyringGetOfAPresenceItemFailsClosed() async throws {
        let key = KeyringTestEnvironment.uniqueKey()
        let store = KeyringStore(timeout: .seconds(60))
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: Self.token), policy: AccessPolicy(access: .userPresence(reuseSeconds: 30))),
            for: key)
        let get = try await TokenStoreBinary.run(["get", "--service", key.service, "--account", key.account])
        try await store.delete(key)
        #expect(get.status == 6, "\(get.stderr)")
        #expect(get.stdout.isEmpty)
        #expect(get.stderr.contains("no presence check for keyring items"), "\(get.stderr)")
        #expect(!get.stderr.contains(Self.token))
    }
}

/// A command run in a real pseudo-terminal by util-linux `script`, answering prompts as a person would.
enum TerminalSession {
    /// What to do once a step's marker shows: type a line (Enter after it), press keys (no Enter: a Ctrl-C
    /// followed by Enter would race the signal against the empty line it completes), or act (e.g. send a
    /// signal) given the screen so far.
    enum Action: Sendable {
        case type(String)
        case press(String)
        case act(@Sendable (_ screen: String) throws -> Void)
    }

    /// Runs `command` (a shell command line) with `environment` added to this process's; for each answer, waits
    /// until its marker has been shown once more, then types the line. Returns the exit status and everything the
    /// terminal showed.
    static func run(
        _ command: String, environment extra: [String: String] = [:], answers: [(marker: String, line: String)]
    ) async throws -> (status: Int32, screen: String) {
        try await run(command, environment: extra, steps: answers.map { ($0.marker, Action.type($0.line)) })
    }

    /// Runs `command` like ``run(_:environment:answers:)``; each step waits until its marker shows after the
    /// previous step's marker, then carries out its action.
    static func run(
        _ command: String, environment extra: [String: String] = [:], steps: [(marker: String, action: Action)]
    ) async throws -> (status: Int32, screen: String) {
        try await offPool("the token-store session under script(1) to end", timeout: TestDeadline.child) { () throws -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            process.arguments = ["-qec", command, "/dev/null"]
            var environment = ProcessInfo.processInfo.environment
            environment.merge(extra) { $1 }
            process.environment = environment
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // A safety net, not a wait: a command that never shows a marker (a regression) would otherwise keep
            // the test waiting forever. Killing `script` hangs up the terminal, which ends the command.
            let pid = process.processIdentifier
            let hangGuard = DispatchWorkItem { kill(pid, SIGKILL) }
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(120), execute: hangGuard)
            defer { hangGuard.cancel() }
            var screen: [UInt8] = []
            var searchFrom = 0
            var byte: UInt8 = 0
            let fd = output.fileHandleForReading.fileDescriptor
            do {
                stepping: for step in steps {
                    let marker = Array(step.marker.utf8)
                    while true {
                        if let found = Self.find(marker, in: screen, from: searchFrom) {
                            searchFrom = found + marker.count
                            break
                        }
                        // The command ended without showing the marker: nothing more to do.
                        guard read(fd, &byte, 1) == 1 else { break stepping }
                        screen.append(byte)
                    }
                    switch step.action {
                    case .type(let line): TerminalIO.writeAll(input.fileHandleForWriting.fileDescriptor, line + "\n")
                    case .press(let keys): TerminalIO.writeAll(input.fileHandleForWriting.fileDescriptor, keys)
                    case .act(let body): try body(String(decoding: screen, as: UTF8.self))
                    }
                }
            } catch {
                process.terminate()
                throw error
            }
            // Standard input stays open until the command has ended: an end of input typed into the terminal
            // (script passes it on) would race with what a step started, e.g. a signal.
            screen += output.fileHandleForReading.readDataToEndOfFile()
            try input.fileHandleForWriting.close()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: screen, as: UTF8.self))
        }
    }

    /// Where `needle` starts in `haystack` at or after `start`.
    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count - start >= needle.count else { return nil }
        // Only the tail can hold a new match: the screen grows one byte per read.
        let first = max(start, haystack.count - needle.count)
        return haystack[first...].starts(with: needle) ? first : nil
    }
}

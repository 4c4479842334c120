import Foundation
import ShopKitAPI
import Testing

@testable import ShopKitCredentials

/// A signal at a prompt with echo off (issue 16, item 5): the terminal is restored and the signal raised again,
/// as `readpassphrase(3)` does. Each test runs `token-store` at its passphrase prompt in a real pty (util-linux
/// `script`), under a bash with job control (`set -m`) that reports how the child ended and then prints the
/// terminal's echo setting (`stty`), and sends the child a real signal. The job starts with every signal at its
/// default disposition (`env --default-signal`): one ignored by whoever started the tests would stay ignored.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"), .timeLimit(.minutes(3)))
struct TerminalSignalTests {
    static let passphrase = "signal-test-passphrase"

    /// The shell script: runs the command (`$@`) as a job that prints its pid first, then reports.
    static let script = """
        trap 'true' INT QUIT TERM HUP
        set -m
        bash -c 'echo "pid=$$"; exec "$@"' child "$@"
        echo "status=$? ECHO=$(stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?echo') END"
        if jobs %1 >/dev/null 2>&1; then fg >/dev/null; echo "resumed=$?"; fi
        echo "ECHO=$(stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?echo') DONE"

        """

    /// A file store holding a token for s/a, and the command line that reads it, prompting for the passphrase.
    static func setUp(in directory: TempDirectory) async throws -> String {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await makeStore(directory.storeURL, passphrase: passphrase).write(
            StoredCredential(tokens: AuthTokens(accessToken: "signal-token"), policy: .afterFirstUnlock),
            for: CredentialKey(service: "s", account: "a"))
        let scriptURL = directory.url.appendingPathComponent("job.sh")
        try script.write(to: scriptURL, atomically: true, encoding: .utf8)
        return "env --default-signal bash '\(scriptURL.path)' '\(binary.path)' get --file '\(directory.storeURL.path)' --service s --account a"
    }

    static var environment: [String: String] {
        var environment = TokenStoreCLITests.noBus
        environment["SHELL"] = "/bin/bash"
        // The Swift runtime's backtracer catches SIGQUIT and, on a terminal, waits 30 s for a key: not under test.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return environment
    }

    static let prompt = "Passphrase for the token file: "

    @Test(arguments: [SIGINT, SIGTERM, SIGQUIT, SIGHUP])
    func aSignalAtThePromptRestoresEchoAndEndsTheProcess(signal: Int32) async throws {
        try await withTempDirectory { dir in
            let command = try await Self.setUp(in: dir)
            let session = try await TerminalSession.run(
                command, environment: Self.environment,
                steps: [(Self.prompt, .act({ screen in kill(try ChildPID.parse(screen), signal) }))])
            // The child died of the signal itself (raised again), and the terminal has echo on again.
            #expect(session.screen.contains("status=\(128 + signal) ECHO=echo END"), "\(session.screen)")
            #expect(!session.screen.contains("signal-token"))
        }
    }

    /// Ctrl-\ typed at the prompt with the Swift runtime's backtracer at its default (on, and interactive on a
    /// terminal): no backtrace and no offer of a debugger (issue 26, item 3). The terminal is restored and the
    /// process ends with 131 at once.
    @Test func quitTypedAtThePromptExits131WithoutTheBacktracer() async throws {
        try await withTempDirectory { dir in
            let command = "env -u SWIFT_BACKTRACE " + (try await Self.setUp(in: dir)).dropFirst("env ".count)
            var environment = TokenStoreCLITests.noBus
            environment["SHELL"] = "/bin/bash"
            let session = try await TerminalSession.run(
                command, environment: environment, steps: [(Self.prompt, .press("\u{1C}"))])
            #expect(session.screen.contains("status=131 ECHO=echo END"), "\(session.screen)")
            for backtracer in ["Program crashed", "Backtrace", "Press space", "interact"] {
                #expect(!session.screen.contains(backtracer), "\(session.screen)")
            }
            #expect(!session.screen.contains("signal-token"))
        }
    }

    /// Ctrl-Z: echo is back on while the job is stopped; after `fg` the prompt shows again with echo off, and the
    /// passphrase typed then works and is not shown.
    @Test func aStopAtThePromptRestoresEchoAndResumesSilently() async throws {
        try await withTempDirectory { dir in
            let command = try await Self.setUp(in: dir)
            let session = try await TerminalSession.run(
                command, environment: Self.environment,
                steps: [
                    (Self.prompt, .act({ screen in kill(try ChildPID.parse(screen), SIGTSTP) })),
                    ("END", .act({ _ in })),
                    (Self.prompt, .type(Self.passphrase)),
                ])
            #expect(session.screen.contains("status=\(128 + SIGTSTP) ECHO=echo END"), "\(session.screen)")
            #expect(session.screen.contains("signal-token"), "\(session.screen)")
            #expect(session.screen.contains("resumed=0"), "\(session.screen)")
            #expect(session.screen.contains("ECHO=echo DONE"), "\(session.screen)")
            #expect(!session.screen.contains(Self.passphrase))
        }
    }

    /// Ctrl-C typed at the `set` token prompt (standard input is the terminal): echo comes back.
    @Test func ctrlCAtTheTokenPromptRestoresEcho() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            let scriptURL = dir.url.appendingPathComponent("job.sh")
            try Self.script.write(to: scriptURL, atomically: true, encoding: .utf8)
            let command = "env --default-signal bash '\(scriptURL.path)' '\(binary.path)' set --file '\(dir.storeURL.path)' --service s --account a"
            let session = try await TerminalSession.run(
                command, environment: Self.environment, steps: [("Token: ", .press("\u{03}"))])
            #expect(session.screen.contains("status=\(128 + SIGINT) ECHO=echo END"), "\(session.screen)")
            #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
        }
    }
}

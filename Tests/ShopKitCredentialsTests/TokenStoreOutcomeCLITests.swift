import Foundation
import ShopKitCore
import Testing
import TestSupport

@testable import ShopKitCredentials

/// A keyring change cut off by its timeout after it started may or may not have been made: token-store says so
/// with an exit code of its own (11), not the 3 of "unavailable", which means nothing was done (issue 26, item 4).
@Suite(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason), .timeLimit(.minutes(3)))
struct TokenStoreOutcomeCLITests {
    /// token-store makes itself non-dumpable, so only root may read its `/proc/PID/task/*/syscall`.
    static let canWatchTheChild = geteuid() == 0

    /// `set` and `delete` against a private keyring that answers the probe and is frozen (SIGSTOP) before the
    /// change is sent: the D-Bus call starts, the 1 s timeout fires, and the outcome is unknown.
    @Test(
        .enabled(if: canWatchTheChild, "needs root to read a non-dumpable child's /proc/PID/task/*/syscall"),
        arguments: ["set", "delete"])
    func aChangeCutOffByItsTimeoutExits11(command: String) async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        let keyring = try await PrivateKeyring.start()
        let data = keyring.directory.appendingPathComponent("data").path
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = keyring.address
        environment["XDG_DATA_HOME"] = data
        environment["SHOPKIT_KEYRING_MARKER_DIR"] = data
        let childEnvironment = environment
        // The probe and the change share the timeout, and the probe must finish within it on a loaded machine
        // (1 s was seen to run out): 10 s. The frozen keyring never answers the change, so the timeout still ends
        // it (its subject here), and it fires well before D-Bus's own 25 s call timeout, which would end it first.
        let arguments = [command, "--backend", "keyring", "--timeout", "10", "--service", "s", "--account", "a"]
        let outcome: FrozenAfterProbe.Outcome
        do {
            outcome = try await offPool("token-store frozen after its probe to end", timeout: TestDeadline.child) {
                try FrozenAfterProbe.run(
                    binary, arguments, stdin: command == "set" ? "unknown-outcome-token\n" : "",
                    environment: childEnvironment, freeze: { keyring.pauseKeyring() })
            }
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
        #expect(outcome.status == 11, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("may or may not have been made"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("unknown-outcome-token"))
        #expect(outcome.stdout.isEmpty)
    }

    /// `--help` documents the code.
    @Test func helpListsTheUnknownOutcome() async throws {
        let help = try await TokenStoreBinary.run(["--help"], environment: TokenStoreCLITests.noBus)
        #expect(help.status == 0)
        #expect(help.stdout.contains("11 outcome unknown"), "\(help.stdout)")
    }

    /// `--version` prints the one version (ShopKitVersion.current), as pin-check does.
    @Test func versionPrintsTheOneVersion() async throws {
        let outcome = try await TokenStoreBinary.run(["--version"], environment: TokenStoreCLITests.noBus)
        #expect(outcome.status == 0)
        #expect(outcome.stdout == ShopKitVersion.current + "\n")
        #expect(outcome.stderr.isEmpty)
    }
}

/// Runs a command whose first line on standard error comes right after its keyring probe, and freezes the
/// keyring between the two: standard error is a pipe filled to the brim beforehand, so that line blocks until the
/// test has seen the child block on it (`/proc/PID/task/*/syscall`: `write` to descriptor 2), called `freeze`, and
/// drained the pipe.
enum FrozenAfterProbe {
    struct Outcome: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(
        _ binary: URL, _ arguments: [String], stdin: String, environment: [String: String], freeze: () -> Void
    ) throws -> Outcome {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw FixtureError(description: "pipe failed") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        let filled = fill(writeEnd)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = environment
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle(fileDescriptor: writeEnd, closeOnDealloc: false)
        do {
            try process.run()
        } catch {
            close(writeEnd)
            throw error
        }
        close(writeEnd)
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        // A spin, not a sleep: it ends as soon as the child blocks (or exits); the bound is only a safety net.
        let deadline = ContinuousClock.now + .seconds(120)
        while process.isRunning, !writesStandardError(process.processIdentifier), ContinuousClock.now < deadline {
            sched_yield()
        }
        freeze()
        let errors = FileHandle(fileDescriptor: readEnd, closeOnDealloc: false).readDataToEndOfFile()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: errors.dropFirst(filled), as: UTF8.self))
    }

    /// Writes to `fd` until the pipe is full; returns how many bytes that took.
    private static func fill(_ fd: Int32) -> Int {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        var total = 0
        var block = [UInt8](repeating: 0x2E, count: 4096)
        for size in [4096, 1] {
            while true {
                let written = write(fd, &block, size)
                guard written > 0 else { break }
                total += written
            }
        }
        return total
    }

    /// Whether a thread of `pid` is in `write(2, …)`.
    private static func writesStandardError(_ pid: Int32) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return false }
        return tasks.contains { task in
            let call = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8)) ?? ""
            return call.hasPrefix("\(writeCall) 0x2 ")
        }
    }

    /// The number of `write(2)` (Glibc does not import `SYS_write`).
    #if arch(arm64)
        private static let writeCall = 64
    #else
        private static let writeCall = 1
    #endif
}

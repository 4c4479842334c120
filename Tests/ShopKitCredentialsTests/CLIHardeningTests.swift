import NIOConcurrencyHelpers
import Foundation
import ShopKitAPI
import TestSupport
import Testing

@testable import ShopKitCredentials

/// The command-line tools while they hold secrets (issue 16, items 4 and 12): output failures are an exit code,
/// not a crash; no core dumps; the token on standard input is read in bounded blocks.
@Suite(.timeLimit(.minutes(3))) struct CLIHardeningTests {
    static let passphrase = "hardening-passphrase"

    /// A file store in `directory` holding a token for s/a, and a 0600 file with its passphrase.
    static func store(in directory: TempDirectory) async throws -> (file: String, passphraseFile: String) {
        let store = makeStore(directory.storeURL, passphrase: passphrase)
        try await store.write(
            StoredCredential(tokens: AuthTokens(accessToken: "hardening-token"), policy: .afterFirstUnlock),
            for: CredentialKey(service: "s", account: "a"))
        let passphraseFile = directory.url.appendingPathComponent("passphrase").path
        _ = FileManager.default.createFile(
            atPath: passphraseFile, contents: Data((passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return (directory.storeURL.path, passphraseFile)
    }

    /// Runs `script` with bash, `$1` being the token-store binary.
    static func bash(_ script: String, _ arguments: [String] = []) async throws -> TokenStoreBinary.Outcome {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        return try await TokenStoreBinary.run(
            ["-c", script, "bash", binary.path] + arguments, environment: TokenStoreCLITests.noBus,
            executable: URL(fileURLWithPath: "/bin/bash"))
    }

    /// `> /dev/full` used to trap (exit 132) while the process held the token and the passphrase.
    @Test func aFailingWriteIsExit10NotACrash() async throws {
        try await withTempDirectory { dir in
            let (file, passphraseFile) = try await Self.store(in: dir)
            let get = "exec 3<\"$2\"; \"$1\" get --file \"$3\" --service s --account a --passphrase-fd 3"
            let full = try await Self.bash(get + " >/dev/full", [passphraseFile, file])
            #expect(full.status == 10, "\(full.stderr)")
            #expect(full.stderr.contains("cannot write to standard output"), "\(full.stderr)")
            #expect(!full.stderr.contains("hardening-token"))

            // Standard error full: the backend line is lost, the token is not (issue 26, item 5; it was exit 10
            // with no token before). StandardStreamsCLITests has the closed cases.
            let errors = try await Self.bash(get + " 2>/dev/full", [passphraseFile, file])
            #expect(errors.status == 0)
            #expect(errors.stdout == "hardening-token\n")

            let probe = try await Self.bash("\"$1\" probe >/dev/full")
            #expect(probe.status == 10, "\(probe.stderr)")

            // A reader that went away: EPIPE, not a silent death by SIGPIPE.
            let closed = try await Self.bash(get + " | true; echo \"status=${PIPESTATUS[0]}\"", [passphraseFile, file])
            #expect(closed.stdout == "status=10\n" || closed.stdout == "status=0\n", "\(closed.stdout) \(closed.stderr)")
        }
    }

    /// 17 MiB on standard input: refused at the format's 16 MiB limit, without reading the rest (the writer gets
    /// EPIPE) and before the passphrase is asked.
    @Test func anOversizedTokenIsRefusedAtTheLimit() async throws {
        try await withTempDirectory { dir in
            let file = dir.storeURL.path
            let outcome = try await Self.bash(
                "head -c \(17 * 1024 * 1024) /dev/zero | tr '\\0' 'a' | \"$1\" set --file \"$2\" --service s --account a; "
                    + "echo \"status=${PIPESTATUS[2]} writer=${PIPESTATUS[1]}\"",
                [file])
            // The writer failed (SIGPIPE, or EPIPE where SIGPIPE is ignored): the rest was never read.
            #expect(outcome.stdout.hasPrefix("status=8 writer="), "\(outcome.stdout) \(outcome.stderr)")
            #expect(!outcome.stdout.hasSuffix("writer=0\n"), "\(outcome.stdout)")
            #expect(outcome.stderr.contains("larger than the token store's limit of 16 MiB"), "\(outcome.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file))

            // Just under the limit is read whole (and then refused by the store for its size, not the reader).
            let atLimit = try await Self.bash(
                "head -c \(TokenInput.maximumSize) /dev/zero | tr '\\0' 'a' | \"$1\" set --file \"$2\" --service s "
                    + "--account a --passphrase-fd 3 3<<<'hardening-passphrase'; echo \"status=${PIPESTATUS[2]}\"",
                [file])
            #expect(atLimit.stdout == "status=8\n")
            #expect(atLimit.stderr.contains("the token file would be"), "\(atLimit.stderr)")
        }
    }

    /// token-store at a passphrase prompt (so certainly past its start-up), run with an unlimited core size:
    /// its core limit is 0 and a crash leaves no core file.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"))
    func tokenStoreDumpsNoCore() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            let (file, _) = try await Self.store(in: dir)
            let cwd = dir.url.appendingPathComponent("cwd")
            try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
            let limits = Box<String>("")
            let command = "cd '\(cwd.path)' && ulimit -c unlimited && env --default-signal bash -c 'echo pid=$$; exec \"$0\" \"$@\"' "
                + "'\(binary.path)' get --file '\(file)' --service s --account a"
            var environment = TokenStoreCLITests.noBus
            environment["SHELL"] = "/bin/bash"
            environment["SWIFT_BACKTRACE"] = "enable=no"  // the runtime's backtracer would catch SIGQUIT first
            let session = try await TerminalSession.run(
                command, environment: environment,
                steps: [("Passphrase for the token file: ", .act({ screen in
                    let pid = try ChildPID.parse(screen)
                    limits.set(try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8))
                    kill(pid, SIGQUIT)  // core by default (the Swift runtime catches SIGSEGV for its backtracer)
                }))])
            #expect(session.status == 128 + SIGQUIT, "\(session.screen)")
            #expect(ChildPID.coreLimit(limits.value) == "0 0", "\(limits.value)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cwd.path).filter { $0.hasPrefix("core") } == [])
        }
    }

    /// pin-check the same way, caught once it has connected to a local listener (so past its start-up) and waits
    /// for a TLS answer that never comes.
    @Test func pinCheckDumpsNoCore() async throws {
        guard let binary = BuiltBinary(named: "pin-check") else { throw FixtureError(description: "pin-check not built") }
        try await withTempDirectory { dir in
            let cwd = dir.url.appendingPathComponent("cwd")
            try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
            let (limits, status) = try await offPool("pin-check to report its limits and exit") { () throws -> (String, Int32) in
                let (listener, port) = try SilentListener.open()
                defer { close(listener) }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/bash")
                process.arguments = [
                    "-c", "ulimit -c unlimited && exec env --default-signal \"$0\" 127.0.0.1:\(port) --timeout 60",
                    binary.url.path,
                ]
                process.currentDirectoryURL = cwd
                var environment = ProcessInfo.processInfo.environment
                environment["SWIFT_BACKTRACE"] = "enable=no"  // the runtime's backtracer would catch SIGQUIT first
                process.environment = environment
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                // If pin-check ended without connecting, connect here so the accept below returns.
                let watchdog = Thread {
                    process.waitUntilExit()
                    SilentListener.poke(port)
                }
                watchdog.start()
                let connection = accept(listener, nil, nil)  // returns once pin-check has connected
                defer { if connection >= 0 { close(connection) } }
                let limits = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
                kill(process.processIdentifier, SIGQUIT)
                process.waitUntilExit()
                return (limits, process.terminationStatus)
            }
            #expect(status == SIGQUIT)
            #expect(ChildPID.coreLimit(limits) == "0 0", "\(limits)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cwd.path).filter { $0.hasPrefix("core") } == [])
        }
    }

    /// pin-check sent QUIT with the Swift runtime's backtracer at its default (on): it dies of the signal at once,
    /// without a crash report or a backtrace (the backtracer reads the process's memory through a helper
    /// process) (issue 26, item 3).
    @Test func pinCheckRunsWithoutTheBacktracer() async throws {
        guard let binary = BuiltBinary(named: "pin-check") else { throw FixtureError(description: "pin-check not built") }
        let (reason, status, errors) = try await offPool("pin-check to end on SIGQUIT") { () throws -> (Process.TerminationReason, Int32, String) in
            let (listener, port) = try SilentListener.open()
            defer { close(listener) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["--default-signal", binary.url.path, "127.0.0.1:\(port)", "--timeout", "60"]
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "SWIFT_BACKTRACE")
            process.environment = environment
            let errors = Pipe()
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
            let watchdog = Thread {
                process.waitUntilExit()
                SilentListener.poke(port)
            }
            watchdog.start()
            let connection = accept(listener, nil, nil)  // returns once pin-check has connected
            defer { if connection >= 0 { close(connection) } }
            kill(process.processIdentifier, SIGQUIT)
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationReason, process.terminationStatus, text)
        }
        #expect(reason == .uncaughtSignal && status == SIGQUIT, "\(errors)")
        for backtracer in ["crashed", "Backtrace", "Thread 0"] {
            #expect(!errors.contains(backtracer), "\(errors)")
        }
    }
}

/// A TCP listener on 127.0.0.1 that accepts but never answers.
enum SilentListener {
    static func open() throws -> (Int32, Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(listener, generic, length) == 0 && listen(listener, 4) == 0
                    && getsockname(listener, generic, &length) == 0
            }
        }
        guard listener >= 0, bound else { throw FixtureError(description: "cannot listen on 127.0.0.1") }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Connects to `port` and hangs up, to wake an `accept`.
    static func poke(_ port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        close(fd)
    }
}

/// Reads a child's pid from a `pid=N` line on a terminal screen, and the core line of /proc/PID/limits.
enum ChildPID {
    static func parse(_ screen: String) throws -> pid_t {
        guard let range = screen.range(of: "pid="),
            let pid = pid_t(screen[range.upperBound...].prefix { $0.isNumber })
        else { throw FixtureError(description: "no pid= line on the screen: \(screen)") }
        return pid
    }

    /// `soft hard` of "Max core file size", e.g. `0 0`.
    static func coreLimit(_ limits: String) -> String? {
        guard let line = limits.split(separator: "\n").first(where: { $0.hasPrefix("Max core file size") }) else {
            return nil
        }
        let fields = line.dropFirst("Max core file size".count).split(separator: " ")
        return fields.count >= 2 ? "\(fields[0]) \(fields[1])" : nil
    }
}

/// A value a `@Sendable` closure sets and the test reads afterwards.
final class Box<T: Sendable>: Sendable {
    private let stored: NIOLockedValueBox<T>

    init(_ value: T) { stored = NIOLockedValueBox(value) }
    func set(_ value: T) { stored.withLockedValue { $0 = value } }
    var value: T { stored.withLockedValue { $0 } }
}

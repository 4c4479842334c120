import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// One of the package's built executables (`pin-check`, `token-store`, …), run as a real child process.
package struct BuiltBinary: Sendable {
    /// What a run ended in.
    package struct Outcome: Sendable {
        /// The exit status.
        package var status: Int32
        /// Everything written to standard output.
        package var stdout: String
        /// Everything written to standard error.
        package var stderr: String
    }

    /// The executable's location.
    package let url: URL

    /// Any executable, e.g. a system tool run with the same plumbing.
    package init(url: URL) {
        self.url = url
    }

    /// The executable `name` in `.build/<config>/`, beside the test bundle; nil if it was not built.
    package init?(named name: String) {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug"),
        ]
        guard
            let url = candidates.map({ $0.appendingPathComponent(name).standardizedFileURL })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
        else { return nil }
        self.url = url
    }

    /// Runs the executable with `arguments`, `stdin` written to its standard input (then closed) and the
    /// test's environment plus `overrides`, and waits for it on a thread of its own, never on the
    /// cooperative pool.
    ///
    /// The wait has a deadline: a child still running after `timeout`, or when the test is cancelled, is killed
    /// (`SIGKILL`) and the run throws ``WaitEnded`` naming the command.
    package func run(
        _ arguments: [String], stdin: String = "", environment overrides: [String: String] = [:],
        timeout: Duration = TestDeadline.child
    ) async throws -> Outcome {
        let url = self.url
        // The child's pid while it may still run; cleared (under the lock) before it is reaped, so a kill below
        // never reaches a reused pid.
        let running = NIOLockedValueBox<pid_t?>(nil)
        let command = ([url.lastPathComponent] + arguments).joined(separator: " ")
        do {
            return try await offPool("`\(command)` to exit", timeout: timeout) {
                // The child inherits this thread's signal mask, and the test runner's threads block most signals
                // (SIGCHLD among them: a shell's `wait` would then never return). This thread is ours alone.
                var empty = sigset_t()
                sigemptyset(&empty)
                pthread_sigmask(SIG_SETMASK, &empty, nil)
                let process = Process()
                // Through setpriv, the child gets SIGKILL if the test process dies (a crash): it would otherwise
                // live on holding `swift test`'s output open. Its parent is this thread, which waits for it.
                process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                process.arguments = ["--pdeathsig", "KILL", "--", url.path] + arguments
                var environment = ProcessInfo.processInfo.environment
                for (name, value) in overrides { environment[name] = value }
                process.environment = environment
                let input = Pipe(), output = Pipe(), errors = Pipe()
                process.standardInput = input
                process.standardOutput = output
                process.standardError = errors
                try process.run()
                running.withLockedValue { $0 = process.processIdentifier }
                // Standard input and standard error on threads of their own, so that no pipe can fill up and
                // stall the child while this thread reads another.
                let writing = input.fileHandleForWriting
                let stdinData = Data(stdin.utf8)
                Thread {
                    try? writing.write(contentsOf: stdinData)
                    try? writing.close()
                }.start()
                let errorData = PipeCollector(errors.fileHandleForReading)
                let out = output.fileHandleForReading.readDataToEndOfFile()
                let err = errorData.wait()
                running.withLockedValue { $0 = nil }
                process.waitUntilExit()
                return Outcome(
                    status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
                    stderr: String(decoding: err, as: UTF8.self))
            }
        } catch let error as WaitEnded {
            running.withLockedValue { pid in
                if let pid { kill(pid, SIGKILL) }
            }
            throw error
        }
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class PipeCollector: Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once by the reading thread before `done` is signalled, read only after `wait()` returns: the
    // semaphore orders the two accesses, so there is no concurrent access.
    nonisolated(unsafe) private var data = Data()

    init(_ handle: FileHandle) {
        Thread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }.start()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}

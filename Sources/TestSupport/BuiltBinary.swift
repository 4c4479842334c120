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
                var environment = ProcessInfo.processInfo.environment
                for (name, value) in overrides { environment[name] = value }
                // Through setpriv, the child gets SIGKILL if the test process dies (a crash): it would otherwise
                // live on holding `swift test`'s output open. Its parent is this thread, which waits for it.
                let child = try Self.spawn(
                    "/usr/bin/setpriv", ["--pdeathsig", "KILL", "--", url.path] + arguments, environment: environment)
                running.withLockedValue { $0 = child.pid }
                // Standard input and standard error on threads of their own, so that no pipe can fill up and
                // stall the child while this thread reads another.
                let stdinBytes = Array(stdin.utf8)
                Thread {
                    // A child that exits without reading: the write fails with EPIPE, and the SIGPIPE it raises
                    // stays blocked on this thread, which ends.
                    var pipeSignal = sigset_t()
                    sigemptyset(&pipeSignal)
                    sigaddset(&pipeSignal, SIGPIPE)
                    pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
                    stdinBytes.withUnsafeBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let written = write(child.stdin, bytes.baseAddress! + offset, bytes.count - offset)
                            if written < 0 && errno == EINTR { continue }
                            guard written > 0 else { break }
                            offset += written
                        }
                    }
                    close(child.stdin)
                }.start()
                let errorData = PipeCollector(child.stderr)
                let out = PipeCollector.readToEnd(child.stdout)
                let err = errorData.wait()
                running.withLockedValue { $0 = nil }
                var status: Int32 = 0
                while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
                // An exit's status, or 128 + the signal that ended the child, as a shell reports it.
                let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                return Outcome(
                    status: exit, stdout: String(decoding: out, as: UTF8.self),
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

extension BuiltBinary {
    /// A spawned child and the parent's ends of its standard input, output and error.
    private struct Spawned {
        let pid: pid_t
        let stdin: Int32, stdout: Int32, stderr: Int32
    }

    /// Spawns `path` with `arguments` and exactly `environment` (``TiedChild/spawn(_:argv:environment:newProcessGroup:fileActions:)``).
    /// posix_spawn, not Foundation's `Process`: that one reads past a buffer while it closes the descriptors it
    /// does not pass on (an AddressSanitizer report inside swift-corelibs-foundation).
    private static func spawn(_ path: String, _ arguments: [String], environment: [String: String]) throws -> Spawned {
        // Pipes, not sockets: a program may open `/dev/stdin` (`sign-pins --key /dev/stdin`).
        let input = try TiedChild.pipe(), output = try TiedChild.pipe(), errors = try TiedChild.pipe()
        let spawned = TiedChild.spawn(
            path, argv: [path] + arguments, environment: environment, newProcessGroup: false
        ) { actions in
            posix_spawn_file_actions_adddup2(&actions, input.read, 0)
            posix_spawn_file_actions_adddup2(&actions, output.write, 1)
            posix_spawn_file_actions_adddup2(&actions, errors.write, 2)
        }
        // The child's ends are the child's alone now (all were close-on-exec, so only the dup2 copies crossed).
        [input.read, output.write, errors.write].forEach { close($0) }
        let pid: pid_t
        switch spawned {
        case .success(let spawnedPID): pid = spawnedPID
        case .failure(let error):
            [input.write, output.read, errors.read].forEach { close($0) }
            throw TiedChild.SpawnError(description: "posix_spawn \(path) failed: \(error)")
        }
        return Spawned(pid: pid, stdin: input.write, stdout: output.read, stderr: errors.read)
    }
}

/// Reads a descriptor to its end, on a thread of its own, then closes it.
private final class PipeCollector: Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once by the reading thread before `done` is signalled, read only after `wait()` returns: the
    // semaphore orders the two accesses, so there is no concurrent access.
    nonisolated(unsafe) private var data: [UInt8] = []

    init(_ descriptor: Int32) {
        Thread { [self] in
            data = Self.readToEnd(descriptor)
            done.signal()
        }.start()
    }

    func wait() -> [UInt8] {
        done.wait()
        return data
    }

    /// Everything `descriptor` gives until its end; it is closed afterwards.
    static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        defer { close(descriptor) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return data }
            data += chunk[..<count]
        }
    }
}

import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension TiedChild {
    /// Spawns `path` under a watcher (see ``TiedChild``) with its standard output and error on one pipe that an
    /// ``OutputReader`` reads, and returns once the output satisfies `ready` (a server's "listening" line): the
    /// start of `openssl s_server` and tinyproxy, with no readiness polling and no sleeps.
    ///
    /// - Throws: ``SpawnError`` when the child cannot be spawned, or when its output ends (it exited) before `ready`
    ///   holds, with that output; ``WaitEnded``, with the output, past the reader's deadline or on cancellation. The
    ///   child is stopped in each case.
    package static func startUntilReady(
        _ path: String, arguments: [String], stopSignal: String = "KILL", what: String,
        ready: @escaping @Sendable (String) -> Bool
    ) async throws -> (TiedChild, OutputReader) {
        // Close-on-exec from the start, so that no other child spawned meanwhile keeps the write end (and the
        // reader) alive; the child gets the write end as its stdout and stderr.
        let (readEnd, writeEnd) = try socketPair()
        let child: TiedChild
        do {
            defer { close(writeEnd) }
            child = try TiedChild(
                path, arguments: arguments, environment: ProcessInfo.processInfo.environment, stopSignal: stopSignal
            ) { actions in
                posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
                posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
            }
        } catch {
            close(readEnd)
            throw error
        }
        let output = OutputReader(fd: readEnd)
        do {
            try await output.wait(until: ready, for: what)
        } catch {
            child.stop()
            throw error
        }
        guard ready(output.text) else {
            child.stop()  // reaps a child that exited on its own
            throw SpawnError(description: "\(path) exited while waiting for \(what): \(output.text)")
        }
        return (child, output)
    }
}

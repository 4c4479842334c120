import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `TiedChild` runs the servers the tests start (nginx, tinyproxy): closing its tie, which the kernel also does
/// when the test process dies, must end the child; and one child's tie must not leak into another's watcher.
@Suite(.timeLimit(.minutes(3)))
struct TiedChildTests {
    /// A child that prints its pid, then sleeps far longer than any test: only the tie ends it.
    private func startSleeper() async throws -> (TiedChild, pid_t) {
        let fds = try TiedChild.socketPair()
        let child = try TiedChild(
            "/bin/sh", arguments: ["-c", "echo $$; exec sleep 600"], environment: ProcessInfo.processInfo.environment,
            stopGrace: .seconds(600)  // only the tie may end it here, never the escalation
        ) { actions in
            posix_spawn_file_actions_adddup2(&actions, fds.1, 1)
        }
        close(fds.1)
        let output = OutputReader(fd: fds.0)
        try await output.wait(until: { $0.contains("\n") }, for: "the sleeper's pid")
        let line = output.text.split(separator: "\n").first.map(String.init) ?? ""
        let pid = try #require(pid_t(line))
        return (child, pid)
    }

    /// Stops `child` and returns whether it ended: a tie that never closes (leaked into another process) would
    /// leave the watcher waiting in `read` (the sleepers' stop grace is far longer than this wait's deadline).
    private static func stopped(_ child: TiedChild) async -> Bool {
        child.stop()
        do {
            try await child.waitUntilStopped()
            return true
        } catch {
            return false
        }
    }

    private static func isRunning(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    @Test func closingTheTieEndsTheChild() async throws {
        let (child, pid) = try await startSleeper()
        #expect(Self.isRunning(pid))
        #expect(await Self.stopped(child))
        // The watcher waited for the child before it exited, and `stop()` waited for the watcher.
        #expect(!Self.isRunning(pid))
    }

    @Test func oneChildsTieDoesNotLeakIntoAnotherChild() async throws {
        let (first, firstPID) = try await startSleeper()
        let (second, secondPID) = try await startSleeper()
        #expect(await Self.stopped(first))
        #expect(!Self.isRunning(firstPID))
        #expect(Self.isRunning(secondPID))
        #expect(await Self.stopped(second))
        #expect(!Self.isRunning(secondPID))
    }

    @Test func stoppingTwiceClosesNothingElse() async throws {
        let (child, _) = try await startSleeper()
        #expect(await Self.stopped(child))
        // New descriptors take the lowest free numbers: 128 of them fill every gap, the tie's old number included.
        var opened: [Int32] = []
        defer { opened.forEach { close($0) } }
        for _ in 0..<64 {
            let pair = try TiedChild.socketPair()
            opened += [pair.0, pair.1]
        }
        child.stop()
        #expect(opened.allSatisfy { fcntl($0, F_GETFD) != -1 })
    }

    @Test func aChildThatExitedOnItsOwnIsStoppedAndReaped() async throws {
        // tinyproxy that cannot listen exits at once; its start then stops the watcher, which must not hang.
        let child = try TiedChild("/bin/false", arguments: [], environment: ProcessInfo.processInfo.environment)
        #expect(await Self.stopped(child))
    }

    @Test func aTinyproxyThatExitsAtOnceFailsItsStart() async throws {
        await #expect(throws: TinyproxyServer.StartError.self) {
            _ = try await TinyproxyServer.start(path: "/bin/false")
        }
    }
}

import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// A child process (nginx, tinyproxy) that ends with the process that started it, however that process ends.
///
/// The child runs under a small `/bin/sh` watcher whose standard input is one end of a socket pair; only this
/// process holds the other end (close-on-exec, so no other child inherits it). ``stop()`` closes it, and so
/// does the kernel when this process dies (a crash, a sanitizer's abort, `SIGKILL` from a time limit): the
/// watcher's `read` returns, it sends the child `stopSignal` and waits for it. So a test binary that dies
/// leaves no server behind on the machine.
///
/// ``stop()`` never blocks its caller (tests call it from `defer` on the cooperative pool, which has one thread a
/// core): a thread of its own reaps the watcher, and a child that has not ended ``TestDeadline/stopGrace`` after
/// its stop signal is killed with its watcher (the watcher leads a process group of its own). A test that must
/// know the child is gone awaits ``waitUntilStopped(timeout:)``.
package final class TiedChild: Sendable {
    /// The watcher's pid (the child is the watcher's own child), which is also the pair's process group.
    package let watcherPID: pid_t
    /// This process's end of the tie, until ``stop()`` closes it (once: a second close could hit a reused fd).
    private let tie: NIOLockedValueBox<Int32?>
    /// Whether the watcher has exited (it is then a zombie until the reaper thread reaps it just after).
    private let exited = WaitableState(false)
    /// How long after ``stop()`` the pair is killed if it has not ended.
    private let stopGrace: Duration

    /// Why the child could not be started.
    package struct SpawnError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The watcher: runs the child in the background (its stdin is then `/dev/null`), lets go of the child's
    /// stdout and stderr (so that a reader of those sees their end when the child exits), waits for the tie to
    /// close, then stops the child and waits for it. A child that exited on its own stays a zombie until then,
    /// so its pid cannot have been reused when the watcher signals it.
    private static func script(stopSignal: String) -> String {
        #""$@" & child=$!; exec >/dev/null 2>&1; read -r _; kill -\#(stopSignal) "$child"; wait "$child""#
    }

    /// Spawns `path` with `arguments` and `environment` under a watcher. `fileActions` sets up the child's file
    /// descriptors other than stdin (which the watcher takes; the child gets `/dev/null`); they pass through the
    /// watcher unchanged. The child starts with an empty signal mask and default signal handling.
    package init(
        _ path: String, arguments: [String], environment: [String: String], stopSignal: String = "TERM",
        stopGrace: Duration = TestDeadline.stopGrace,
        fileActions: (inout posix_spawn_file_actions_t) -> Void = { _ in }
    ) throws {
        let fds = try Self.socketPair()
        let shell = "/bin/sh"
        // A process group of its own, so that a child that ignores its stop signal is killed with its watcher.
        let spawned = Self.spawn(
            shell, argv: [shell, "-c", Self.script(stopSignal: stopSignal), "watcher", path] + arguments,
            environment: environment, newProcessGroup: true
        ) { actions in
            fileActions(&actions)
            posix_spawn_file_actions_adddup2(&actions, fds.0, 0)
        }
        close(fds.0)
        let pid: pid_t
        switch spawned {
        case .success(let spawnedPID): pid = spawnedPID
        case .failure(let error):
            close(fds.1)
            throw SpawnError(description: "posix_spawn \(path) failed: \(error)")
        }
        watcherPID = pid
        tie = NIOLockedValueBox(fds.1)
        self.stopGrace = stopGrace
    }

    /// Spawns `path` with `argv` (the program's name first) and exactly `environment`, with an empty signal mask
    /// and default signal dispositions (a test thread may block signals, SIGCHLD among them: a shell's `wait` would
    /// then never return), in a process group of its own when `newProcessGroup`; `fileActions` sets up its
    /// descriptors. The child's pid, or posix_spawn's error number.
    package static func spawn(
        _ path: String, argv: [String], environment: [String: String], newProcessGroup: Bool,
        fileActions: (inout posix_spawn_file_actions_t) -> Void
    ) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        fileActions(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, cArguments, cEnvironment)
        return result == 0 ? .success(pid) : .failure(SpawnError(description: "error \(result)"))
    }

    /// A connected pair of Unix stream sockets, both close-on-exec from the start: no child spawned meanwhile by
    /// another thread can inherit them (the window that `pipe` followed by `fcntl` leaves). Used as a pipe;
    /// Glibc's module does not export `pipe2`.
    package static func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw SpawnError(description: "socketpair() failed: errno \(errno)")
        }
        return (fds[0], fds[1])
    }

    /// A pipe whose two ends are close-on-exec from the start (`pipe2(O_CLOEXEC)`, looked up at run time: Glibc's
    /// module does not export it), for a child's standard streams where a socket will not do: a program that opens
    /// `/dev/stdin` cannot open a socket. Returns the read end, then the write end.
    package static func pipe() throws -> (read: Int32, write: Int32) {
        typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else {
            throw SpawnError(description: "pipe2 is not in the C library")
        }
        var fds: [Int32] = [0, 0]
        guard unsafeBitCast(symbol, to: Pipe2.self)(&fds, O_CLOEXEC) == 0 else {
            throw SpawnError(description: "pipe2() failed: errno \(errno)")
        }
        return (fds[0], fds[1])
    }

    /// Stops the child: closes the tie (the watcher sends the child `stopSignal`) and returns at once. A thread of
    /// its own reaps the watcher; if the pair has not ended `stopGrace` (``TestDeadline/stopGrace``) later, the whole process
    /// group gets `SIGKILL`. Calls after the first do nothing.
    package func stop() {
        guard let fd = tie.withLockedValue({ fd in defer { fd = nil }; return fd }) else { return }
        close(fd)
        let pid = watcherPID
        let exited = self.exited
        Thread {
            // Wait for the exit without reaping (WNOWAIT): the pid stays reserved while `exited` is set, so the
            // escalation below, which reads `exited` under the same lock, can never signal a reused pid.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
            exited.withLockedValue { $0 = true }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }.start()
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(stopGrace.components.seconds))) {
            exited.withLockedValue { done in
                if !done { kill(-pid, SIGKILL) }
            }
        }
    }

    /// Returns once the watcher, and so the child, has exited after ``stop()``; throws ``WaitEnded`` when that
    /// takes longer than `timeout` (the escalation to `SIGKILL` comes first) or the task is cancelled.
    package func waitUntilStopped(timeout: Duration = TestDeadline.wait) async throws {
        try await exited.wait(until: { $0 }, for: "the watcher of pid group \(watcherPID) to exit", timeout: timeout)
    }
}

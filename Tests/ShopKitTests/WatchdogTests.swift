import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `scripts/watchdog`, which runs every test pass of `scripts/test`: a pass's status comes through, a pass that
/// outlives its limit is reported (the tests that never ended, a backtrace of each test process) and killed, and
/// nothing a pass started outlives it, whether it passes, fails, times out or the watchdog itself is killed.
///
/// Each pass here starts an "orphan": a detached process (its own session) that ignores TERM, HUP and INT and
/// holds the pass's standard output open. The output reaching its end therefore proves, without polling, that
/// every process holding it (the orphan included) is gone.
@Suite(.timeLimit(.minutes(3))) struct WatchdogTests {
    static let watchdog = READMESnippets.root.appendingPathComponent("scripts/watchdog").path

    /// A shell line that starts the orphan, says so, and then runs `then`.
    static func orphanThen(_ then: String) -> String {
        "setsid sh -c 'trap \"\" TERM HUP INT; echo orphan-ready; exec sleep 600' & " + then
    }

    /// Without root there is no PID namespace, and a process that leaves the pass's process group can outlive it
    /// (the README's testing section says so).
    static let isolates = getuid() == 0

    @Test(.enabled(if: isolates, "as root only: elsewhere a detached process can outlive the pass"))
    func aPassThatFailsKeepsItsStatusAndLeavesNothingRunning() async throws {
        let run = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run(
            [Self.watchdog, "60", "-", "--", "sh", "-c", Self.orphanThen("sleep 0.2; exit 3")])
        // `run` returned: its output ended, so the orphan that held it is gone.
        #expect(run.status == 3, "\(run.stderr)")
        #expect(run.stdout.contains("orphan-ready"))
        #expect(!run.stderr.contains("did not end"))
    }

    @Test(.enabled(if: isolates, "as root only: elsewhere a detached process can outlive the pass"))
    func aPassPastItsLimitIsReportedWithItsUnfinishedTestsAndABacktraceThenKilled() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-watchdog-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The event stream of a run whose one test never ends, and a "test process" that never ends either (a copy
        // of sleep named as SwiftPM names the test bundle, so the watchdog takes its backtrace).
        let events = directory.appendingPathComponent("events.jsonl")
        try """
            {"kind":"event","payload":{"kind":"testStarted","testID":"Demo.Suite"},"version":0}
            {"kind":"event","payload":{"kind":"testStarted","testID":"Demo.Suite\\/hangs()\\/Demo.swift:3:6"},"version":0}
            {"kind":"event","payload":{"kind":"testStarted","testID":"Demo.Suite\\/ends()\\/Demo.swift:9:6"},"version":0}
            {"kind":"event","payload":{"kind":"testEnded","testID":"Demo.Suite\\/ends()\\/Demo.swift:9:6"},"version":0}

            """.write(to: events, atomically: true, encoding: .utf8)
        let bundle = directory.appendingPathComponent("Demo.xctest").path
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: bundle)
        // The limit is the subject, and nothing races it: the pass never ends by itself.
        let run = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run(
            [Self.watchdog, "2", events.path, "--", "sh", "-c", Self.orphanThen("exec '\(bundle)' 600")],
            environment: ["SHOPKIT_WATCHDOG_SCALE": "1"])  // load mode's scale would make it 6 s
        #expect(run.status == 124)
        #expect(run.stderr.contains("did not end within 2 s"))
        let unfinished = run.stderr.components(separatedBy: "== Tests that started and never ended ==").last ?? ""
        #expect(unfinished.contains("Demo.Suite/hangs()/Demo.swift:3:6"))
        #expect(!unfinished.contains("ends()"))
        #expect(run.stderr.contains("== Backtrace of every thread of "), "\(run.stderr)")
        #expect(run.stderr.contains("#0 "), "no backtrace: \(run.stderr)")
        #expect(run.stderr.contains("the pass was killed"))
    }

    @Test(.enabled(if: isolates, "as root only: elsewhere a detached process can outlive the pass"))
    func killingTheWatchdogEndsEverythingThePassStarted() async throws {
        let fds = try TiedChild.socketPair()
        let writeEnd = fds.1
        let watchdog: TiedChild
        do {
            defer { close(writeEnd) }
            watchdog = try TiedChild(
                "/bin/bash", arguments: [Self.watchdog, "600", "-", "--", "sh", "-c", Self.orphanThen("exec sleep 600")],
                environment: ProcessInfo.processInfo.environment, stopSignal: "KILL"
            ) { actions in
                posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
                posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
            }
        }
        let output = OutputReader(fd: fds.0)
        try await output.wait(until: { $0.contains("orphan-ready") }, for: "the orphan to start")
        #expect(!output.ended)
        // SIGKILL: the watchdog cannot clean up; its death signal and the PID namespace must.
        watchdog.stop()
        _ = try await output.waitForEnd("every process of the pass to end after the watchdog was killed")
    }

    /// The pids of the processes whose environment holds `entry` (those this process may read).
    static func processes(withEnvironment entry: String) -> [String] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
        return pids.filter { pid in
            guard let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return environ.split(separator: 0).contains { String(decoding: $0, as: UTF8.self) == entry }
        }
    }

    /// `scripts/with-keyring` ends the bus and keyring daemons its command leaves running (as a test that dies
    /// before stopping its private keyring does; gnome-keyring-daemon detaches and blocks most signals), without
    /// a PID namespace, and keeps the command's status.
    @Test func withKeyringLeavesNoDaemonRunning() async throws {
        let script = READMESnippets.root.appendingPathComponent("scripts/with-keyring").path
        // A bus of the command's own, forked into the background, and a keyring daemon on it, left behind.
        let leaveDaemons = #"""
            echo "$SHOPKIT_TEST_RUN"
            address=$(dbus-daemon --session --fork --print-address=1)
            DBUS_SESSION_BUS_ADDRESS=$address gnome-keyring-daemon --start --components=secrets >/dev/null
            for e in /proc/[0-9]*/environ; do tr '\0' '\n' <"$e" 2>/dev/null | grep -qxF "SHOPKIT_TEST_RUN=$SHOPKIT_TEST_RUN" && echo marked; done | wc -l
            exit 5
            """#
        let run = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run([script, "bash", "-c", leaveDaemons])
        #expect(run.status == 5, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let mark = try #require(lines.first, "no run mark printed: \(run.stderr)")
        // While the command ran, its shell and the daemons carried the mark (so this test can fail); none is left.
        #expect((lines.dropFirst().first.flatMap { Int($0) } ?? 0) >= 4, "\(run.stdout)")
        #expect(Self.processes(withEnvironment: "SHOPKIT_TEST_RUN=\(mark)") == [])
    }
}

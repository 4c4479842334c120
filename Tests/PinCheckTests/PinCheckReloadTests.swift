import Foundation
import ShopKitTLS
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `pin-check --hosts-file … --pins-file FILE`: SIGHUP re-reads FILE, for the checks that start afterwards. The
/// built binary as a child process, one check at a time, its first checks held in flight by a relay in front of
/// the server until the test has sent its signals and seen them answered on standard error.
@Suite("PinCheck pins reload", .timeLimit(.minutes(3)))
struct PinCheckReloadTests {
    static let matching = ["leaf-localhost-ecdsa", "backup-intermediate"].map(TestCertificates.pin)
    static let mismatching = ["other-root", "other-intermediate"].map(TestCertificates.pin)
    /// pin-check's per-host timeout: the relay holds a check's handshake while the test signals and waits, which
    /// a loaded machine can make last far longer than the default 10 s.
    static let timeout = "150"

    /// A hosts' pins file giving every port of 127.0.0.1 `pins`.
    static func pinsFile(_ pins: [String]) -> String {
        "# every port of 127.0.0.1\n[127.0.0.1]\n" + pins.joined(separator: "\n") + "\n"
    }

    /// Replaces `url`'s contents at once (a rename), so a reload never reads half a file.
    static func rewrite(_ url: URL, _ contents: String) throws {
        let next = url.appendingPathExtension("next")
        try contents.write(to: next, atomically: false, encoding: .utf8)
        guard rename(next.path, url.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    @Test func sighupReloadsThePinsFileForTheChecksThatStartAfterIt() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        // Hosts 1 and 2 reach the server through the relay, which holds each one's answer until released.
        let relay = try await HoldingRelay.start(to: server.port, holding: [1, 2])
        let hostsURL = try PinCheckBinary.temporaryFile(
            ["127.0.0.1:\(relay.port)", "127.0.0.1:\(relay.port)", "127.0.0.1:\(server.port)"].joined(separator: "\n"),
            suffix: ".hosts")
        let pinsURL = try PinCheckBinary.temporaryFile(Self.pinsFile(Self.matching.map(\.description)), suffix: ".pins")
        let caURL = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { for url in [hostsURL, pinsURL, caURL] { try? FileManager.default.removeItem(at: url) } }

        let child = try await StreamingChild.start(
            PinCheckBinary.binary().url,
            ["--hosts-file", hostsURL.path, "--pins-file", pinsURL.path, "--ca-file", caURL.path, "--concurrency", "1",
             "--json", "--timeout", Self.timeout])
        defer { child.kill() }

        // Host 1 is in flight (the SIGHUP source was installed before it started). A file that does not parse
        // is refused, and the pins stay.
        try await relay.waitUntilHolding(1)
        try Self.rewrite(pinsURL, "[127.0.0.1]\n\(Self.mismatching[0])\nnot-a-pin\n")
        child.signal(SIGHUP)
        try await child.waitForStandardError("pin-check to refuse the broken pins file") { $0.contains("pins not reloaded") }
        relay.release(1)

        // Host 2 started after the refused reload: with the first pins. It is in flight while a good file is
        // loaded.
        try await relay.waitUntilHolding(2)
        try Self.rewrite(pinsURL, Self.pinsFile(Self.mismatching.map(\.description)))
        child.signal(SIGHUP)
        try await child.waitForStandardError("pin-check to reload the pins") { $0.contains("reloaded pins from") }
        relay.release(2)

        let outcome = try await child.waitForExit()
        await relay.stop()
        try await server.shutdown()

        let reports = outcome.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(reports.count == 3, "stdout: \(outcome.stdout)")
        guard reports.count == 3 else { return }
        // In completion order, which one check at a time makes the file's.
        #expect(reports.map { $0["port"] as? Int } == [relay.port, relay.port, server.port])
        #expect(reports.map { $0["verdict"] as? String } == ["ok", "ok", "pin-mismatch"])
        #expect(reports[0]["configuredPins"] as? [String] == Self.matching.map(\.description))
        #expect(reports[1]["configuredPins"] as? [String] == Self.matching.map(\.description))
        #expect(reports[2]["configuredPins"] as? [String] == Self.mismatching.map(\.description))
        #expect(outcome.status == 1, "stderr: \(outcome.stderr)")
        let lines = outcome.stderr.split(separator: "\n")
        #expect(lines.count == 2, "stderr: \(outcome.stderr)")
        #expect(lines.first?.hasPrefix("pin-check: pins not reloaded, the previous ones stay: \(pinsURL.path): line 3") == true)
        #expect(lines.last == "pin-check: reloaded pins from \(pinsURL.path) (1 section)")
    }

    /// Without --pins-file there is nothing to reload: SIGHUP keeps its default action and ends the run.
    @Test func withoutAPinsFileSighupEndsTheRun() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let relay = try await HoldingRelay.start(to: server.port)
        let hostsURL = try PinCheckBinary.temporaryFile("127.0.0.1:\(relay.port)", suffix: ".hosts")
        let caURL = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { for url in [hostsURL, caURL] { try? FileManager.default.removeItem(at: url) } }

        let child = try await StreamingChild.start(
            PinCheckBinary.binary().url, ["--hosts-file", hostsURL.path, "--ca-file", caURL.path, "--json", "--timeout", Self.timeout])
        defer { child.kill() }
        try await relay.waitUntilHolding(1)
        child.signal(SIGHUP)
        let outcome = try await child.waitForExit()
        await relay.stop()
        try await server.shutdown()

        #expect(outcome.endedBySignal && outcome.status == SIGHUP, "status \(outcome.status), stderr: \(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
    }
}

/// A child process whose standard error the test reads as it comes, and can signal.
///
/// The child is started, waited for and let go on a thread of its own, as `BuiltBinary` does: never on the
/// cooperative pool, and without leaving Foundation's bookkeeping for the child on one of its threads.
private final class StreamingChild: Sendable {
    struct Outcome: Sendable {
        /// The exit status, or the signal that ended the child.
        var status: Int32
        var endedBySignal: Bool
        var stdout: String
        var stderr: String
    }

    /// Standard error so far, and whether it ended.
    private struct Errors: Sendable {
        var text = ""
        var ended = false
    }

    /// The child's pid once it runs (nil until then, and after it was reaped), or why it could not start.
    private enum Launch: Sendable {
        case starting
        case running(pid_t)
        case failed(String)
        case reaped
    }

    private struct LaunchError: Error, CustomStringConvertible {
        let description: String
    }

    private let launch = WaitableState(Launch.starting)
    private let errors = WaitableState(Errors())
    private let outcome = WaitableState<Outcome?>(nil)

    private init() {}

    static func start(_ url: URL, _ arguments: [String]) async throws -> StreamingChild {
        let child = StreamingChild()
        let launch = child.launch, errors = child.errors, outcome = child.outcome
        Thread {
            let process = Process()
            // Dies with the test process (setpriv's parent-death signal): a crash would otherwise leave it holding
            // `swift test`'s output open.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--pdeathsig", "KILL", "--", url.path] + arguments
            let out = Pipe(), err = Pipe()
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = out
            process.standardError = err
            do {
                try process.run()
            } catch {
                launch.withLockedValue { $0 = .failed("\(error)") }
                return
            }
            launch.withLockedValue { $0 = .running(process.processIdentifier) }
            Thread {
                while true {
                    let data = err.fileHandleForReading.availableData
                    if data.isEmpty { break }
                    errors.withLockedValue { $0.text += String(decoding: data, as: UTF8.self) }
                }
                errors.withLockedValue { $0.ended = true }
            }.start()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let status = process.terminationStatus, bySignal = process.terminationReason == .uncaughtSignal
            launch.withLockedValue { $0 = .reaped }
            outcome.withLockedValue {
                $0 = Outcome(status: status, endedBySignal: bySignal, stdout: String(decoding: data, as: UTF8.self), stderr: "")
            }
        }.start()
        try await launch.wait(until: { if case .starting = $0 { false } else { true } }, for: "pin-check to start")
        if case .failed(let reason) = launch.withLockedValue({ $0 }) { throw LaunchError(description: reason) }
        return child
    }

    /// Sends `signal` to the child while it runs (a reaped child's pid may be someone else's by now).
    func signal(_ signal: Int32) {
        launch.withLockedValue { if case .running(let pid) = $0 { _ = Glibc.kill(pid, signal) } }
    }

    /// Returns once standard error so far satisfies `predicate`; throws ``WaitEnded``, with what it saw, past the
    /// deadline or when the test's time limit cancels the wait.
    func waitForStandardError(_ what: String, _ predicate: @escaping @Sendable (String) -> Bool) async throws {
        try await errors.wait(until: { predicate($0.text) }, for: what, describe: { $0.text })
    }

    /// The exit status and everything written, once the child ended.
    func waitForExit() async throws -> Outcome {
        try await outcome.wait(until: { $0 != nil }, for: "pin-check to exit", timeout: TestDeadline.child)
        try await errors.wait(until: { $0.ended }, for: "pin-check's standard error to end")
        var result = outcome.withLockedValue { $0! }
        result.stderr = errors.withLockedValue { $0.text }
        return result
    }

    /// Ends the child if it still runs.
    func kill() {
        signal(SIGTERM)
    }
}

import NIOConcurrencyHelpers
import Dispatch
import Foundation
import ShopKitAPI
import Testing
import TestSupport
@testable import ShopKitCredentials

/// Real child processes against one store file: this test binary re-runs itself with a filter and a role.
///
/// The child roles below are skipped unless `SHOPKIT_FILESTORE_CHILD` names them, so a normal run skips them;
/// the parent tests spawn `/proc/self/exe --testing-library swift-testing --filter <role test>`.
enum ChildProcess {
    static let roleVariable = "SHOPKIT_FILESTORE_CHILD"
    static let pathVariable = "SHOPKIT_FILESTORE_PATH"
    static let prefixVariable = "SHOPKIT_FILESTORE_PREFIX"
    static let marker = "SHOPKIT-GEN "
    static let passphrase = "child process passphrase"
    static let key = CredentialKey(service: "crash", account: "writer")

    static var role: String? { ProcessInfo.processInfo.environment[roleVariable] }

    /// The tokens written for generation `n`: both fields carry `n` and a length derived from it, so a torn
    /// or mixed state is detectable.
    static func tokens(_ n: Int) -> AuthTokens {
        let value = "gen-\(n)-" + String(repeating: "x", count: (n * 797) % 20_000)
        return AuthTokens(accessToken: value, refreshToken: value)
    }

    /// The generation a token set was written for, after checking it is internally consistent.
    static func generation(of tokens: AuthTokens) -> Int? {
        let parts = tokens.accessToken.split(separator: "-", maxSplits: 2)
        guard parts.count == 3, let n = Int(parts[1]), tokens == Self.tokens(n) else { return nil }
        return n
    }

    struct Outcome: Sendable {
        var markers: [Int]
        var status: Int32
        var killed: Bool
        var output: String
    }

    /// Runs the child role `test` and, when `killAfter` is set, SIGKILLs it right after that many markers; the
    /// outcome holds every marker the child printed before it died. Blocking work (spawn, pipe reads, wait) runs
    /// on a thread of its own; a child still running at the deadline is killed and the run throws.
    static func run(test: String, environment extra: [String: String], killAfter: Int?) async throws -> Outcome {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        // The child's pid while it runs, so that a child past the deadline is killed (cleared before it is reaped).
        let running = NIOLockedValueBox<pid_t?>(nil)
        do {
            return try await offPool("the child role \(test) to end", timeout: TestDeadline.child) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = ["--testing-library", "swift-testing", "--filter", "FileStoreChildRoles/\(test)"]
                process.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                try process.run()
                running.withLockedValue { $0 = process.processIdentifier }
                var output = "", markers: [Int] = [], killed = false
                let handle = pipe.fileHandleForReading
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    output += String(decoding: data, as: UTF8.self)
                    markers = output.split(separator: "\n").compactMap { line in
                        line.hasPrefix(marker) ? Int(line.dropFirst(marker.count)) : nil
                    }
                    if let killAfter, !killed, markers.count >= killAfter {
                        kill(process.processIdentifier, SIGKILL)
                        killed = true
                        // Keep reading to the end: the child may have completed and reported more writes
                        // between the marker seen here and the kill, and those markers are still in the pipe.
                    }
                }
                running.withLockedValue { $0 = nil }
                process.waitUntilExit()
                return Outcome(markers: markers, status: process.terminationStatus, killed: killed, output: output)
            }
        } catch {
            running.withLockedValue { pid in
                if let pid { kill(pid, SIGKILL) }
            }
            throw error
        }
    }
}

/// The child roles; each runs only in a child process that names it.
@Suite(.timeLimit(.minutes(3))) struct FileStoreChildRoles {
    /// Loops forever writing generation n+1, n+2, … and printing a marker after each completed write.
    @Test(.enabled(if: ChildProcess.role == "writer"))
    func writerLoop() async throws {
        let url = URL(fileURLWithPath: ProcessInfo.processInfo.environment[ChildProcess.pathVariable]!)
        let store = makeStore(url, passphrase: ChildProcess.passphrase)
        var n = try await store.read(ChildProcess.key).flatMap { ChildProcess.generation(of: $0.tokens) } ?? 0
        while true {
            n += 1
            try await store.write(StoredCredential(tokens: ChildProcess.tokens(n), policy: .afterFirstUnlock), for: ChildProcess.key)
            let line = Array("\(ChildProcess.marker)\(n)\n".utf8)
            _ = write(STDOUT_FILENO, line, line.count)
        }
    }

    /// Adds 25 items named `<prefix>-0` … `<prefix>-24`, each a separate read-modify-write.
    @Test(.enabled(if: ChildProcess.role == "adder"))
    func adder() async throws {
        let environment = ProcessInfo.processInfo.environment
        let store = makeStore(URL(fileURLWithPath: environment[ChildProcess.pathVariable]!), passphrase: ChildProcess.passphrase)
        let prefix = environment[ChildProcess.prefixVariable]!
        for index in 0..<25 {
            try await store.write(
                StoredCredential(tokens: AuthTokens(accessToken: "\(prefix)\(index)"), policy: .afterFirstUnlock),
                for: CredentialKey(service: "concurrent", account: "\(prefix)-\(index)"))
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct FileStoreProcessTests {
    /// A writer killed with SIGKILL at varying points, 30 times: the file always opens, to the last completed
    /// generation or the one in flight, never a torn or empty state.
    @Test func sigkillMidWriteLeavesTheOldOrTheNewFile() async throws {
        try await withTempDirectory { dir in
            let url = dir.storeURL
            var completed = 0
            for round in 0..<30 {
                let outcome = try await ChildProcess.run(
                    test: "writerLoop", environment: ["SHOPKIT_FILESTORE_CHILD": "writer", "SHOPKIT_FILESTORE_PATH": url.path],
                    killAfter: 1 + round % 4)
                try #require(outcome.killed, "the writer stopped on its own: \(outcome.output.suffix(2000))")
                completed = outcome.markers.last ?? completed
                let store = makeStore(url, passphrase: ChildProcess.passphrase)
                let stored = try #require(try await store.read(ChildProcess.key))
                let n = try #require(ChildProcess.generation(of: stored.tokens), "torn token set in round \(round)")
                // The markers are every write the child finished and reported before the kill; at most one more
                // write can have finished (renamed) without its marker.
                #expect(n == completed || n == completed + 1, "round \(round): file has \(n), child reported \(completed)")
                #expect(try await store.generation() == UInt64(n))
                completed = n
            }
            // The next write removes the temp files killed writers left behind.
            let store = makeStore(url, passphrase: ChildProcess.passphrase)
            try await store.write(StoredCredential(tokens: ChildProcess.tokens(completed + 1), policy: .afterFirstUnlock), for: ChildProcess.key)
            let names = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            #expect(names.sorted() == ["tokens.skt", "tokens.skt.lock"])
        }
    }

    /// Two processes each adding 25 items at the same time: the lock serialises the read-modify-writes, so all
    /// 50 items are present and the generation counts every write.
    @Test func concurrentWritersLoseNoUpdate() async throws {
        try await withTempDirectory { dir in
            let url = dir.storeURL
            func adder(_ prefix: String) async throws -> ChildProcess.Outcome {
                try await ChildProcess.run(
                    test: "adder",
                    environment: ["SHOPKIT_FILESTORE_CHILD": "adder", "SHOPKIT_FILESTORE_PATH": url.path,
                                  "SHOPKIT_FILESTORE_PREFIX": prefix],
                    killAfter: nil)
            }
            async let first = adder("A")
            async let second = adder("B")
            for outcome in try await [first, second] {
                #expect(outcome.status == 0, "child failed: \(outcome.output.suffix(2000))")
                #expect(outcome.output.contains("1 test"), "the child role did not run: \(outcome.output.suffix(2000))")
            }
            let store = makeStore(url, passphrase: ChildProcess.passphrase)
            let keys = try await store.keys()
            #expect(keys.count == 50)
            #expect(Set(keys.map(\.account)) == Set((0..<25).flatMap { ["A-\($0)", "B-\($0)"] }))
            #expect(try await store.generation() == 50)
        }
    }
}

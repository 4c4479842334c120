import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// A real tinyproxy (Debian's package) on 127.0.0.1, for the proxy tests: `CONNECT` tunnels, Basic
/// authentication and refusals, as a corporate proxy does them.
///
/// tinyproxy cannot adopt an inherited socket as nginx does, so a free port is reserved (bound, then released)
/// and written to its config; it runs in the foreground (`-d`) logging to a pipe, and ``start(_:)`` returns when
/// it logs that its main loop accepts connections: no readiness polling, no sleeps.
package final class TinyproxyServer: Sendable {
    /// What tinyproxy allows.
    package struct Configuration: Sendable {
        /// `BasicAuth` user and password: when set, `CONNECT` without them gets 407.
        package var basicAuth: (user: String, password: String)?
        /// When false, `ConnectPort 0` disables `CONNECT` altogether: every tunnel is refused with 403.
        package var allowsConnect: Bool

        package init(basicAuth: (user: String, password: String)? = nil, allowsConnect: Bool = true) {
            self.basicAuth = basicAuth
            self.allowsConnect = allowsConnect
        }
    }

    /// Why tinyproxy could not be started.
    package struct StartError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The port tinyproxy listens on, on 127.0.0.1.
    package let port: Int
    /// The folder holding tinyproxy's config.
    package let directory: URL
    private let process: Process
    private let output: NIOLockedValueBox<Output>

    /// tinyproxy's output so far, and who waits for something in it.
    private struct Output {
        var text = ""
        var waiters: [(predicate: @Sendable (String) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []

        /// Appends `more` and returns the waiters now satisfied (removed).
        mutating func append(_ more: String) -> [CheckedContinuation<Void, Never>] {
            text += more
            let text = self.text
            let ready = waiters.filter { $0.predicate(text) }.map(\.continuation)
            waiters.removeAll { $0.predicate(text) }
            return ready
        }
    }

    /// The proxy URL, `http://127.0.0.1:PORT`.
    package var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Everything tinyproxy logged so far (its `CONNECT` lines name each tunnel's target).
    package var log: String { output.withLockedValue { $0.text } }

    /// The `host:port` targets of the `CONNECT` requests tinyproxy logged so far, in order.
    package var connectTargets: [String] { Self.connectTargets(in: log) }

    /// Returns once tinyproxy has logged at least `count` `CONNECT` requests (it logs each as it reads it).
    package func waitForConnects(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = output.withLockedValue { output -> Bool in
                if Self.connectTargets(in: output.text).count >= count { return true }
                output.waiters.append(({ Self.connectTargets(in: $0).count >= count }, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private static func connectTargets(in log: String) -> [String] {
        log.split(separator: "\n").compactMap { line in
            guard line.contains("Request ("), let range = line.range(of: "CONNECT ", options: .backwards) else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
    }

    private init(port: Int, directory: URL, process: Process, output: NIOLockedValueBox<Output>) {
        self.port = port
        self.directory = directory
        self.process = process
        self.output = output
    }

    /// Starts tinyproxy with `configuration`; `path` defaults to Debian's `/usr/bin/tinyproxy`.
    package static func start(
        _ configuration: Configuration = Configuration(), path: String = "/usr/bin/tinyproxy"
    ) async throws -> TinyproxyServer {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw StartError(description: "tinyproxy not found at \(path): run scripts/bootstrap")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("shopkit-tinyproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try reservePort()
        var lines = [
            "Port \(port)", "Listen 127.0.0.1", "Timeout 30", "LogLevel Info", "MaxClients 64",
            "PidFile \"\(directory.path)/tinyproxy.pid\"",
        ]
        if let auth = configuration.basicAuth { lines.append("BasicAuth \(auth.user) \(auth.password)") }
        if !configuration.allowsConnect { lines.append("ConnectPort 0") }
        let configPath = directory.appendingPathComponent("tinyproxy.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: configPath, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-d", "-c", configPath.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        let output = NIOLockedValueBox(Output())
        let ready = NIOLockedValueBox<CheckedContinuation<Void, any Error>?>(nil)
        // Resumes the start once: on the ready line, or when tinyproxy exits (its output ends) first.
        let resume: @Sendable ((any Error)?) -> Void = { error in
            let waiting = ready.withLockedValue { value in
                defer { value = nil }
                return value
            }
            if let error { waiting?.resume(throwing: error) } else { waiting?.resume() }
        }

        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            ready.withLockedValue { $0 = continuation }
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                guard !data.isEmpty else {
                    handle.readabilityHandler = nil
                    return resume(StartError(description: "tinyproxy exited: \(output.withLockedValue { $0.text })"))
                }
                let (satisfied, started) = output.withLockedValue { output in
                    (output.append(String(decoding: data, as: UTF8.self)), output.text.contains("Accepting connections"))
                }
                satisfied.forEach { $0.resume() }
                if started { resume(nil) }
            }
            do {
                try process.run()
            } catch {
                pipe.fileHandleForReading.readabilityHandler = nil
                resume(StartError(description: "could not run tinyproxy: \(error)"))
            }
        }
        return TinyproxyServer(port: port, directory: directory, process: process, output: output)
    }

    /// Stops tinyproxy and removes its folder.
    package func stop() {
        if process.isRunning {
            // SIGKILL, not SIGTERM: a child spawned from a test thread inherits its blocked signals, and tinyproxy
            // has nothing to flush.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A free loopback port: bound to port 0, read back and released for tinyproxy to bind.
    private static func reservePort() throws -> Int {
        let reserved = try BoundClosedPort()
        defer { reserved.release() }
        return reserved.port
    }
}

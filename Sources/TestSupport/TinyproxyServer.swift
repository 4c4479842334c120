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
    /// tinyproxy, under a watcher that stops it if this process dies without calling ``stop()``.
    private let process: TiedChild
    /// tinyproxy's output so far, which tests wait on.
    private let output: OutputReader

    /// The proxy URL, `http://127.0.0.1:PORT`.
    package var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Everything tinyproxy logged so far (its `CONNECT` lines name each tunnel's target).
    package var log: String { output.text }

    /// The `host:port` targets of the `CONNECT` requests tinyproxy logged so far, in order.
    package var connectTargets: [String] { Self.connectTargets(in: log) }

    /// Returns once tinyproxy has logged at least `count` `CONNECT` requests (it logs each as it reads it); throws
    /// ``WaitEnded``, with the log, past `timeout` or when the waiting task is cancelled (a test's time limit).
    package func waitForConnects(_ count: Int, timeout: Duration = TestDeadline.wait) async throws {
        try await output.wait(
            until: { Self.connectTargets(in: $0).count >= count }, for: "tinyproxy to log \(count) CONNECT requests",
            timeout: timeout)
    }

    private static func connectTargets(in log: String) -> [String] {
        log.split(separator: "\n").compactMap { line in
            guard line.contains("Request ("), let range = line.range(of: "CONNECT ", options: .backwards) else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
    }

    private init(port: Int, directory: URL, process: TiedChild, output: OutputReader) {
        self.port = port
        self.directory = directory
        self.process = process
        self.output = output
    }

    /// Starts tinyproxy with `configuration`; `path` defaults to Debian's `/usr/bin/tinyproxy`.
    ///
    /// The port is reserved, released and then bound by tinyproxy, so another process can take it in between;
    /// when tinyproxy says it could not listen, it is started again on another port (a few times at most).
    package static func start(
        _ configuration: Configuration = Configuration(), path: String = "/usr/bin/tinyproxy"
    ) async throws -> TinyproxyServer {
        var attempt = 1
        while true {
            do {
                return try await startOnce(configuration, path: path)
            } catch let error as StartError where error.description.contains("Could not create listening sockets") {
                guard attempt < 5 else { throw error }
                attempt += 1
            }
        }
    }

    private static func startOnce(_ configuration: Configuration, path: String) async throws -> TinyproxyServer {
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

        let process: TiedChild
        let output: OutputReader
        do {
            // Stopped with SIGKILL: it has nothing to flush, and its shutdown waits for open tunnels.
            (process, output) = try await TiedChild.startUntilReady(
                path, arguments: ["-d", "-c", configPath.path], stopSignal: "KILL", what: "tinyproxy to accept connections"
            ) { $0.contains("Accepting connections") }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw StartError(description: "\(error)")
        }
        return TinyproxyServer(port: port, directory: directory, process: process, output: output)
    }

    /// Stops tinyproxy and removes its folder.
    package func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A free loopback port: bound to port 0, read back and released for tinyproxy to bind.
    private static func reservePort() throws -> Int {
        let reserved = try BoundClosedPort()
        defer { reserved.release() }
        return reserved.port
    }
}

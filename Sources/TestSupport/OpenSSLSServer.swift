import Foundation

/// Debian's `openssl s_server` as a child process on 127.0.0.1, serving a set number of connections (`-naccept`,
/// so its output ends when it exits; `-www`, so it does not read its empty stdin): a real, independent TLS peer whose
/// log says what it received (a `verify return` line for each client certificate it verified).
///
/// The server certificate is a TestCerts leaf; `-cert_chain` carries its intermediates, since s_server sends only
/// the `-cert` file's first certificate. Every wait has a deadline (``TiedChild/startUntilReady(_:arguments:stopSignal:what:ready:)``).
package final class OpenSSLSServer: Sendable {
    /// The port s_server listens on (its `ACCEPT` line).
    package let port: Int
    private let process: TiedChild
    private let reader: OutputReader
    private let chainFile: URL

    /// Everything s_server has written so far (stdout and stderr).
    package var log: String { reader.text }

    private init(port: Int, process: TiedChild, reader: OutputReader, chainFile: URL) {
        self.port = port
        self.process = process
        self.reader = reader
        self.chainFile = chainFile
    }

    /// Starts s_server with the TestCerts `leaf` (and its key), sending `intermediates` after it, plus `arguments`
    /// (a version flag, `-Verify 1 -CAfile …`, `-cipher …`), for `connections` connections, and waits for its
    /// `ACCEPT` line.
    ///
    /// `leafFiles` replaces the TestCerts leaf with a certificate and key made by the test (paths to PEM files).
    package static func start(
        leaf: String = "leaf-localhost-ecdsa", leafFiles: (certificate: String, key: String)? = nil,
        intermediates: [String] = ["intermediate-2", "intermediate-1"], connections: Int = 1, _ arguments: [String]
    ) async throws -> OpenSSLSServer {
        let certs = TestCertificates.directory
        let leafCertificate = leafFiles?.certificate ?? certs.appendingPathComponent("\(leaf).pem").path
        let leafKey = leafFiles?.key ?? certs.appendingPathComponent("\(leaf).key").path
        let chainFile = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-s_server-\(UUID()).pem")
        try TestCertificates.chain(intermediates).write(to: chainFile, atomically: true, encoding: .utf8)
        let process: TiedChild
        let reader: OutputReader
        do {
            (process, reader) = try await TiedChild.startUntilReady(
                "/usr/bin/openssl",
                arguments: [
                    "s_server", "-www", "-accept", "0", "-naccept", "\(connections)",
                    "-cert", leafCertificate, "-key", leafKey,
                ] + (intermediates.isEmpty ? [] : ["-cert_chain", chainFile.path]) + arguments,
                what: "s_server's ACCEPT line"
            ) { $0.contains("ACCEPT") && $0.hasSuffix("\n") }
        } catch {
            try? FileManager.default.removeItem(at: chainFile)
            throw error
        }
        let text = reader.text
        guard
            let port = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") })?
                .split(separator: ":").last.flatMap({ Int($0) })
        else {
            process.stop()
            try? FileManager.default.removeItem(at: chainFile)
            throw TiedChild.SpawnError(description: "no ACCEPT line from s_server: \(text)")
        }
        return OpenSSLSServer(port: port, process: process, reader: reader, chainFile: chainFile)
    }

    /// s_server's whole log once it exited after its connections; throws ``WaitEnded`` past the deadline.
    package func waitForExit(_ what: String = "s_server to exit after its connections") async throws -> String {
        try await reader.waitForEnd(what)
    }

    /// Stops s_server (if it still runs) and removes its chain file; never blocks.
    package func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: chainFile)
    }
}

import ArgumentParser
import ShopKit
import TestSupport

extension PinCheck {
    /// Three checks against an in-process server from `TestCerts`: a pass on the leaf pin, a pass on the
    /// backup intermediate pin, and a pin mismatch with its message. Trust: the test root only.
    func runDemo() async throws {
        let root = TestCertificates.certificate("root")
        let main = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let backup = try await LoopbackTLSServer.start(
            chain: ["leaf-backup-localhost", "backup-intermediate"], key: "leaf-backup-localhost")
        let checks: [(title: String, port: Int, pins: [String], expected: ServerReport.Verdict)] = [
            ("1. Pinned to the leaf key and the backup intermediate; the server shows the leaf.", main.port,
             ["leaf-localhost-ecdsa", "backup-intermediate"], .ok),
            ("2. Same pins; the server was moved to a certificate under the backup intermediate.", backup.port,
             ["leaf-localhost-ecdsa", "backup-intermediate"], .ok),
            ("3. Pinned to keys of an unrelated hierarchy: the check fails and says what to pin.", main.port,
             ["other-leaf-localhost", "other-intermediate"], .pinMismatch),
        ]
        var allAsExpected = true
        for check in checks {
            print("== \(check.title)")
            let inspector = ServerInspector(
                address: ServerAddress(host: "127.0.0.1", port: check.port), serverName: "localhost",
                pins: check.pins.map(TestCertificates.pin), trustAnchorsPEM: root)
            let report = try await inspector.inspect()
            print(report.text())
            print("")
            allAsExpected = allAsExpected && report.verdict == check.expected
        }
        try? await main.shutdown()
        try? await backup.shutdown()
        print(allAsExpected ? "pin-check demo: all three checks behaved as expected" : "pin-check demo: UNEXPECTED result")
        if !allAsExpected { throw ExitCode.failure }
    }
}

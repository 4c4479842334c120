import ShopKitPinning
import ShopKitInspector
import ShopKitTLS

/// `pin-check --demo`: checks against two in-process servers from `TestCerts/`, trusting the test root only — a
/// pass on the leaf pin, a pass on the backup intermediate pin, and a pin mismatch with its message.
package enum PinCheckDemo {
    /// One check: which server, which pins (fixture names), and the verdict it must end in.
    package struct Check: Sendable {
        /// The server checked.
        package enum Server: Sendable {
            /// `leaf-localhost-ecdsa` under intermediate-2 and intermediate-1.
            case main
            /// `leaf-backup-localhost` under the backup intermediate.
            case backup
        }

        /// The heading printed before the report.
        package let title: String
        /// The server checked.
        package let server: Server
        /// Fixture names from `pins.txt`.
        package let pins: [String]
        /// The verdict the check must end in.
        package let expected: ServerReport.Verdict

        /// A check.
        package init(title: String, server: Server, pins: [String], expected: ServerReport.Verdict) {
            self.title = title
            self.server = server
            self.pins = pins
            self.expected = expected
        }
    }

    /// The three checks the demo shows.
    package static let checks: [Check] = [
        Check(
            title: "1. Pinned to the leaf key and the backup intermediate; the server shows the leaf.", server: .main,
            pins: ["leaf-localhost-ecdsa", "backup-intermediate"], expected: .ok),
        Check(
            title: "2. Same pins; the server was moved to a certificate under the backup intermediate.",
            server: .backup, pins: ["leaf-localhost-ecdsa", "backup-intermediate"], expected: .ok),
        Check(
            title: "3. Pinned to keys of an unrelated hierarchy: the check fails and says what to pin.", server: .main,
            pins: ["other-leaf-localhost", "other-intermediate"], expected: .pinMismatch),
    ]

    /// A check that ended in another verdict than expected.
    package struct Unexpected: Sendable, Equatable {
        /// The check's title.
        package let title: String
        /// The verdict it should have ended in.
        package let expected: ServerReport.Verdict
        /// The verdict it ended in.
        package let actual: ServerReport.Verdict
    }

    /// Starts the servers, runs `checks`, hands each title and report text to `write`, and returns the checks
    /// that did not end as expected (empty when the demo behaved).
    ///
    /// - Throws: ``DemoCertificatesError`` for a missing fixture, or the error of a server that cannot start
    ///   or of an inspector that cannot be set up.
    package static func run(
        _ checks: [Check] = checks, certificates: DemoCertificates, write: (String) -> Void
    ) async throws -> [Unexpected] {
        let root = try certificates.certificate("root")
        let main = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa",
            certificates: certificates)
        let backup: LoopbackTLSServer
        do {
            backup = try await LoopbackTLSServer.start(
                chain: ["leaf-backup-localhost", "backup-intermediate"], key: "leaf-backup-localhost",
                certificates: certificates)
        } catch {
            try? await main.shutdown()
            throw error
        }
        var unexpected: [Unexpected] = []
        do {
            for check in checks {
                var pins: [SPKIPin] = []
                for name in check.pins { pins.append(try certificates.pin(name)) }
                let port = check.server == .main ? main.port : backup.port
                let report = try await ServerInspector(
                    address: ServerAddress(host: "127.0.0.1", port: port), serverName: "localhost", pins: pins,
                    trustAnchorsPEM: root
                ).inspect()
                write("== \(check.title)\n\(report.text())\n")
                if report.verdict != check.expected {
                    unexpected.append(Unexpected(title: check.title, expected: check.expected, actual: report.verdict))
                }
            }
        } catch {
            try? await main.shutdown()
            try? await backup.shutdown()
            throw error
        }
        try? await main.shutdown()
        try? await backup.shutdown()
        return unexpected
    }
}

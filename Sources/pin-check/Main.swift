import ArgumentParser
import CLIHardening
import Foundation
import ShopKitCore

/// Runs the command: a verdict's exit status, or one line on standard error with its documented status.
///
/// Closed standard descriptors are reopened on `/dev/null`, and core dumps and the Swift runtime's crash
/// backtracer are off, before anything else (``ProcessHardening``), like token-store's.
@main
enum Main {
    static func main() async {
        do throws(ProcessHardening.Failure) {
            try ProcessHardening.reopenClosedStandardDescriptors()
            try ProcessHardening.disableCoreDumps()
        } catch {
            fail(.unavailable, "\(error)")
        }
        ProcessHardening.disableBacktracer()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "backup-key" { runBackupKey(Array(arguments.dropFirst())) }
        let command: PinCheck
        do {
            var parsed = try PinCheck.parseAsRoot()
            guard let check = parsed as? PinCheck else {
                // The built-in help command.
                try parsed.run()
                Foundation.exit(0)
            }
            command = check
        } catch {
            if PinCheck.exitCode(for: error) == .success {
                // --help
                print(PinCheck.fullMessage(for: error))
                Foundation.exit(0)
            }
            let message = PinCheck.message(for: error).split(whereSeparator: \.isNewline).joined(separator: "; ")
            fail(.usage, "\(message.isEmpty ? "invalid usage" : message) (see pin-check --help)")
        }
        do throws(Failure) {
            Foundation.exit(try await command.execute())
        } catch {
            fail(error.status, error.message)
        }
    }

    /// `pin-check backup-key …`: its own options, help and exit statuses.
    private static func runBackupKey(_ arguments: [String]) -> Never {
        let command: BackupKeyCommand
        do { command = try BackupKeyCommand.parse(arguments) } catch {
            if BackupKeyCommand.exitCode(for: error) == .success {
                print(BackupKeyCommand.fullMessage(for: error))
                Foundation.exit(0)
            }
            let message = BackupKeyCommand.message(for: error).split(whereSeparator: \.isNewline).joined(separator: "; ")
            fail(.usage, "backup-key: \(message.isEmpty ? "invalid usage" : message) (see pin-check backup-key --help)")
        }
        do throws(Failure) {
            Foundation.exit(try command.execute())
        } catch {
            fail(error.status, "backup-key: " + error.message)
        }
    }

    private static func fail(_ status: ExitStatus, _ message: String) -> Never {
        let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        FileHandle.standardError.write(Data("pin-check: \(line)\n".utf8))
        Foundation.exit(status.rawValue)
    }
}

/// `pin-check`'s exit statuses besides the verdicts' 0–4 (`ServerReport.Verdict.exitCode`), as sysexits.h has them.
enum ExitStatus: Int32 {
    /// A usage error: malformed HOST:PORT or pin, an unreadable or malformed file, options that do not go together.
    case usage = 64
    /// The check cannot run on this machine: OpenSSL or the system trust store cannot be set up, or `--demo`
    /// cannot find the source tree's `TestCerts/`.
    case unavailable = 69
    /// `--demo`: a check did not end in the verdict it shows (a ShopKit bug).
    case demoUnexpected = 70
    /// `backup-key`: a file cannot be created (it exists: nothing is overwritten; or the directory is not writable).
    case cannotCreate = 73
}

/// A failure with its exit status; the message is printed as one line.
struct Failure: Error {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}

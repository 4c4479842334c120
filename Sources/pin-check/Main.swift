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
        switch arguments.first {
        case "sign-pins": run(SignPinsCommand.self, arguments) { (command) throws(Failure) in try command.execute() }
        case "verify-pins": run(VerifyPinsCommand.self, arguments) { (command) throws(Failure) in try command.execute() }
        case "log-list": run(LogListCommand.self, arguments) { (command) throws(Failure) in try command.execute() }
        case "log-list-document":
            run(LogListDocumentCommand.self, arguments) { (command) throws(Failure) in try command.execute() }
        case "sign-log-list": run(SignLogListCommand.self, arguments) { (command) throws(Failure) in try command.execute() }
        case "verify-log-list":
            run(VerifyLogListCommand.self, arguments) { (command) throws(Failure) in try command.execute() }
        case "pins-document":
            let command = parse(PinsDocumentCommand.self, arguments)
            do throws(Failure) { Foundation.exit(try await command.execute()) } catch {
                fail(error.status, "pins-document: " + error.message)
            }
        default: break
        }
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

    /// Parses `arguments` (the subcommand's name first) as `Command`: its own help and usage errors (exit 64).
    private static func parse<Command: ParsableCommand>(_ type: Command.Type, _ arguments: [String]) -> Command {
        let name = arguments[0]
        do { return try Command.parse(Array(arguments.dropFirst())) } catch {
            if Command.exitCode(for: error) == .success {
                print(Command.fullMessage(for: error))
                Foundation.exit(0)
            }
            let message = Command.message(for: error).split(whereSeparator: \.isNewline).joined(separator: "; ")
            fail(.usage, "\(name): \(message.isEmpty ? "invalid usage" : message) (see pin-check \(name) --help)")
        }
    }

    /// Runs a synchronous subcommand: its exit status, or its failure's.
    private static func run<Command: ParsableCommand>(
        _ type: Command.Type, _ arguments: [String], _ execute: (Command) throws(Failure) -> Int32
    ) -> Never {
        let command = parse(type, arguments)
        do throws(Failure) { Foundation.exit(try execute(command)) } catch {
            fail(error.status, "\(arguments[0]): " + error.message)
        }
    }

    private static func fail(_ status: ExitStatus, _ message: String) -> Never {
        let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        FileHandle.standardError.write(Data("pin-check: \(line)\n".utf8))
        Foundation.exit(status.rawValue)
    }
}

/// `pin-check`'s exit statuses besides the verdicts' 0–5 (`ServerReport.Verdict.exitCode`), as sysexits.h has them.
enum ExitStatus: Int32 {
    /// A usage error: malformed HOST:PORT or pin, an unreadable or malformed file, options that do not go together.
    case usage = 64
    /// `sign-pins`, `verify-pins`, `pins-document`, `--pins-document`, and the log-list commands: the document or
    /// list (or a host it is made from) is refused.
    case refused = 65
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

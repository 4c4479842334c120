import ArgumentParser
import CLIHardening
import Foundation
import ShopKitCredentials
import ShopKitCore

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the command, printing failures as one line on standard error with their documented exit code.
///
/// Before anything else: closed standard descriptors reopened on `/dev/null` (so no file token-store opens can
/// take their place), no core dumps and no crash backtracer (the process holds tokens and passphrases), and
/// SIGPIPE ignored so a closed output pipe is a write error with its own exit code (``Exit/Code/output``), not a
/// silent death.
@main
enum Main {
    static func main() async {
        do throws(ProcessHardening.Failure) {
            try ProcessHardening.reopenClosedStandardDescriptors()
            try ProcessHardening.disableCoreDumps()
        } catch {
            fail(error.description, code: Exit.Code.io.rawValue)
        }
        ProcessHardening.disableBacktracer()
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try TokenStoreCommand.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let exit as Exit {
            fail(exit.message, code: exit.code.rawValue)
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch {
            let code = TokenStoreCommand.exitCode(for: error)
            if code == .success {
                // --help and friends.
                do throws(Exit) {
                    try Output.standardOutput(TokenStoreCommand.fullMessage(for: error) + "\n")
                } catch {
                    fail(error.message, code: error.code.rawValue)
                }
                Foundation.exit(0)
            }
            let message = TokenStoreCommand.message(for: error)
                .split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? "invalid usage"
            fail("\(message) (see token-store --help)", code: Exit.Code.usage.rawValue)
        }
    }

    /// Reports `message` on standard error and exits with `code`; when standard error cannot be written either,
    /// the exit code alone carries the failure.
    private static func fail(_ message: String, code: Int32) -> Never {
        try? Output.standardError("token-store: \(message)\n")
        Foundation.exit(code)
    }
}

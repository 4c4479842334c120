import ArgumentParser
import Foundation

/// Runs the command, printing failures as one line on standard error with their documented exit code.
@main
enum Main {
    static func main() async {
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
                print(TokenStoreCommand.fullMessage(for: error))
                Foundation.exit(0)
            }
            let message = TokenStoreCommand.message(for: error)
                .split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? "invalid usage"
            fail("\(message) (see token-store --help)", code: Exit.Code.usage.rawValue)
        }
    }

    private static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("token-store: \(message)\n".utf8))
        Foundation.exit(code)
    }
}

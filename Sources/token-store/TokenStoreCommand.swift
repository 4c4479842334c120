import ArgumentParser
import ShopKitAuth

/// Gets, sets and deletes a token in the keyring or the encrypted file from the shell.
@main
struct TokenStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-store",
        abstract: "Get, set or delete a token in the keyring or the encrypted token file.")

    func run() async throws {
        throw ValidationError("not implemented yet")
    }
}

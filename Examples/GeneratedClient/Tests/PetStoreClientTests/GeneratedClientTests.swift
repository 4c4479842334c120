import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKit
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
        let refresher = CountingRefresher { old in
            #expect(old == AuthTokens(accessToken: "stale", refreshToken: "r1"))
            return AuthTokens(accessToken: "fresh", refreshToken: "r2")
        }
        let client = makePetStoreClient(serverURL: store.url, https: https, store: tokens, refresher: refresher)

        #expect(try await signIn(client, username: "ada", password: "wrong", store: tokens) == false)
        #expect(try await signIn(client, username: "ada", password: "secret", store: tokens))
        #expect(await petName(client, id: "1") == "Rex")
        #expect(await petName(client, id: "2") == "No such pet.")

        #expect(await refresher.count == 1)
        #expect(await tokens.tokens == AuthTokens(accessToken: "fresh", refreshToken: "r2"))
        #expect(try await store.seen(through: https) == [
            Seen(method: "POST", path: "/login", authorization: nil),
            Seen(method: "POST", path: "/login", authorization: nil),
            Seen(method: "GET", path: "/pets/1", authorization: "Bearer stale"),  // 401
            Seen(method: "GET", path: "/pets/1", authorization: "Bearer fresh"),  // the one replay
            Seen(method: "GET", path: "/pets/2", authorization: "Bearer fresh"),
        ])
        await https.shutdown()
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
        let sleeper = RecordingSleeper()
        let tokens = InMemoryTokenStore(AuthTokens(accessToken: "fresh"))
        let configuration = ShopKitConfiguration(
            auth: .init(
                tokenStore: tokens, tokenRefresher: CountingRefresher { _ in AuthTokens(accessToken: "unused") },
                requirement: .publicOperations(["login"])),
            sleeper: sleeper)
        let client = Client(
            serverURL: store.url, transport: https, middlewares: ShopKitFactory.makeMiddlewares(configuration))

        do {
            _ = try await client.getPet(path: .init(id: "1"))
            Issue.record("a pin mismatch must fail")
        } catch let error as ClientError {
            guard case .pinMismatch(let report)? = error.underlyingError as? TLSError else {
                Issue.record("expected a pin mismatch, got \(error.underlyingError)")
                return
            }
            #expect(report.host == "127.0.0.1")
        }
        #expect(await sleeper.durations.isEmpty)  // the retry middleware saw the TLS error through ClientError

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

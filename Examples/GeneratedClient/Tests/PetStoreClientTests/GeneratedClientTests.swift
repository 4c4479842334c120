import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOHTTP1
import OpenAPIRuntime
import ShopKit
import Testing
import TestSupport

/// The README's generated-client example, run for real: a client generated from `openapi.yaml` over the pinned
/// `HTTPSTransport` and ShopKit's middlewares, against an in-process TLS server on 127.0.0.1.
@Suite(.timeLimit(.minutes(1))) struct GeneratedClientTests {
    /// What the server saw: method, path and `Authorization` of each request.
    struct Seen: Sendable, Equatable {
        let method: String
        let path: String
        let authorization: String?
    }

    /// A pet store: `login` answers tokens for ada/secret (and 400 to a request that carries a token), `/pets/1`
    /// is Rex for `Bearer fresh`, `/pets/2` is 404, and any other token gets 401.
    final class PetStore: Sendable {
        let seen = NIOLockedValueBox<[Seen]>([])
        let server: LoopbackTLSServer

        init() async throws {
            let seen = self.seen
            server = try await LoopbackTLSServer.start(
                chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa"
            ) { head, body in
                let authorization = head.headers.first(name: "authorization")
                seen.withLockedValue { $0.append(Seen(method: head.method.rawValue, path: head.uri, authorization: authorization)) }
                return Self.respond(head, body: body, authorization: authorization)
            }
        }

        static func respond(_ head: HTTPRequestHead, body: [UInt8], authorization: String?) -> LoopbackTLSServer.Response {
            let json = [("content-type", "application/json")]
            switch (head.method, head.uri) {
            case (.POST, "/login"):
                guard authorization == nil else { return .init(status: .badRequest, body: []) }
                let credentials = try? JSONDecoder().decode([String: String].self, from: Data(body))
                guard credentials == ["username": "ada", "password": "secret"] else {
                    return .init(status: .unauthorized, body: [])
                }
                return .init(headers: json, body: Array(#"{"accessToken":"stale","refreshToken":"r1"}"#.utf8))
            case (.GET, let path) where path.hasPrefix("/pets/"):
                guard authorization == "Bearer fresh" else { return .init(status: .unauthorized, body: []) }
                guard path == "/pets/1" else { return .init(status: .notFound, body: []) }
                return .init(headers: json, body: Array(#"{"id":"1","name":"Rex"}"#.utf8))
            default:
                return .init(status: .notFound, body: [])
            }
        }

        var url: URL { URL(string: "https://127.0.0.1:\(server.port)")! }
    }

    /// The pinned transport: trusts only the test root, and pins 127.0.0.1 to `pins`.
    static func https(pins: [String] = ["leaf-localhost-ecdsa", "backup-intermediate"]) throws -> HTTPSTransport {
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [
                try PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins.map(TestCertificates.pin))
            ]))
        return try HTTPSTransport(configuration: .init(tls: tls))
    }

    @Test func readmeShowsThisExample() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PetStoreExample.swift")
        let example = try #require(try READMESnippets.example(inFile: file.path))
        #expect(example.count > 500)
        #expect(try READMESnippets.readmeShows(example), "README.md's generated-client example differs from PetStoreExample.swift")
    }

    @Test func publicLoginThenAuthenticatedCallWithOneRefreshAndReplay() async throws {
        let store = try await PetStore()
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
        #expect(store.seen.withLockedValue { $0 } == [
            Seen(method: "POST", path: "/login", authorization: nil),
            Seen(method: "POST", path: "/login", authorization: nil),
            Seen(method: "GET", path: "/pets/1", authorization: "Bearer stale"),  // 401
            Seen(method: "GET", path: "/pets/1", authorization: "Bearer fresh"),  // the one replay
            Seen(method: "GET", path: "/pets/2", authorization: "Bearer fresh"),
        ])
        await https.shutdown()
        try await store.server.shutdown()
    }

    @Test func signedOutCallArrivesAsClientErrorWithAPIError() async throws {
        let store = try await PetStore()
        let https = try Self.https()
        let client = makePetStoreClient(
            serverURL: store.url, https: https, store: InMemoryTokenStore(),
            refresher: CountingRefresher(returning: AuthTokens(accessToken: "unused")))

        #expect(await petName(client, id: "1") == "Please sign in again.")
        do {
            _ = try await client.getPet(path: .init(id: "1"))
            Issue.record("a signed-out call must fail")
        } catch let error as ClientError {
            #expect(error.underlyingError as? APIError == .unauthorized)
            #expect(error.operationID == "getPet")
        }
        #expect(store.seen.withLockedValue { $0 }.isEmpty)  // refused before anything was sent
        await https.shutdown()
        try await store.server.shutdown()
    }

    @Test func pinMismatchArrivesAsClientErrorWithTLSErrorAndIsNotRetried() async throws {
        let store = try await PetStore()
        let https = try Self.https(pins: ["backup-intermediate", "other-leaf-localhost"])
        let sleeper = RecordingSleeper()
        let tokens = InMemoryTokenStore(AuthTokens(accessToken: "fresh"))
        let configuration = ShopKitConfiguration(
            auth: .init(
                tokenStore: tokens, tokenRefresher: CountingRefresher(returning: AuthTokens(accessToken: "unused")),
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
        #expect(store.seen.withLockedValue { $0 }.isEmpty)  // no request byte went to an unpinned server

        let readmeClient = makePetStoreClient(
            serverURL: store.url, https: https, store: tokens,
            refresher: CountingRefresher(returning: AuthTokens(accessToken: "unused")))
        #expect(await petName(readmeClient, id: "1") == "This is not the pet store's server.")
        await https.shutdown()
        try await store.server.shutdown()
    }
}

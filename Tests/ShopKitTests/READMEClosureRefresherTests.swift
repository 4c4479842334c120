// README-BEGIN (this block is the README's closure refresher example, verbatim; a test checks they match)
import Foundation
import ShopKit

struct Refresh: APIRequest {
    struct Tokens: Decodable, Sendable { let accessToken: String; let refreshToken: String }
    typealias Response = Tokens
    let refreshToken: String
    var method: HTTPRequest.Method { .post }
    var path: String { "/oauth/refresh" }
    var body: Data? { try? JSONEncoder().encode(["refreshToken": refreshToken]) }
    var requiresAuth: Bool { false }
}

/// `tokenEndpoint`: a client without the auth middleware (ShopKitFactory.makeAPIClient with no `auth`).
func makeRefresher(tokenEndpoint: APIClient) -> ClosureTokenRefresher {
    ClosureTokenRefresher { refreshToken in
        let fresh = try await tokenEndpoint.send(Refresh(refreshToken: refreshToken))
        return AuthTokens(accessToken: fresh.accessToken, refreshToken: fresh.refreshToken)
    }
}
// README-END

import Testing
import TestSupport

@Suite(.timeLimit(.minutes(3))) struct READMEClosureRefresherTests {
    @Test func exampleIsTheREADMEsExample() throws {
        let example = try #require(try READMESnippets.example(inFile: #filePath))
        #expect(try READMESnippets.readmeShows(example), "README.md's closure refresher example differs from this file")
    }

    /// The example's refresher, over a stub token endpoint: a 200 refreshes, a 503 keeps the session.
    @Test func exampleRefreshes() async throws {
        let stub = StubTransport { request in
            #expect(request.request.method == .post && request.request.path == "/oauth/refresh")
            return .json(#"{"accessToken":"a2","refreshToken":"r2"}"#)
        }
        let endpoint = ShopKitFactory.makeAPIClient(baseURL: URL(string: "https://shop.example")!, transport: stub)
        let fresh = try await makeRefresher(tokenEndpoint: endpoint).refresh(AuthTokens(accessToken: "a1", refreshToken: "r1"))
        #expect(fresh == AuthTokens(accessToken: "a2", refreshToken: "r2"))
    }
}

// README-BEGIN (this block is the README's "API client" example, verbatim; a test checks they match)
import Foundation
import ShopKit

struct Product: Decodable, Sendable {
    let id: String
    let name: String
}

struct GetProduct: APIRequest {
    typealias Response = Product
    let id: String
    var path: String { "/products/\(id)" }
}

/// Loads a product through retry → auth → dedup → `transport` (in an app: the pinned HTTPS transport).
func productTitle(id: String, transport: any ClientTransport, store: any TokenStore, refresher: any TokenRefresher)
    async -> String
{
    let configuration = ShopKitConfiguration(
        auth: .init(
            tokenStore: store,
            tokenRefresher: refresher,
            signOutObserver: SignOutHandler { reason in print("Signed out: \(reason)") }))
    let client = ShopKitFactory.makeAPIClient(
        baseURL: URL(string: "https://shop.example/api")!, configuration: configuration, transport: transport)
    do throws(APIError) {
        let product = try await client.send(GetProduct(id: id))
        return product.name
    } catch {
        switch error {
        case .unauthorized: return "Please sign in again."
        case .notFound: return "No such product."
        case .rateLimited, .server, .transport: return "The shop is unavailable; try again later."
        case .forbidden, .decoding, .cancelled: return "Something went wrong: \(error)"
        }
    }
}
// README-END

import ShopKitCore
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(3))) struct READMEExampleTests {
    static let apiClientArticle = "Sources/ShopKitAPI/ShopKitAPI.docc/UsingTheAPIClient.md"
    static let generatedClientsArticle = "Sources/ShopKitAPI/ShopKitAPI.docc/GeneratedClients.md"

    @Test func exampleIsTheREADMEsExample() throws {
        let example = try #require(try READMESnippets.example(inFile: #filePath))
        #expect(example.count > 500)
        #expect(
            try READMESnippets.documentShows(example, in: Self.apiClientArticle),
            "\(Self.apiClientArticle)'s API client example differs from this file")
    }

    /// The version lives in ShopKitVersion; the README documents it and it is CHANGELOG.md's newest release.
    @Test func readmeAndChangelogNameTheVersion() throws {
        let version = ShopKitVersion.current
        #expect(try READMESnippets.readme().contains("This README documents ShopKit \(version)"))
        let changelog = try String(contentsOf: READMESnippets.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = changelog.split(separator: "\n").filter { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        #expect(releases.first?.hasPrefix("## [\(version)] - ") == true, "CHANGELOG.md's newest release is not \(version)")
        #expect(try READMESnippets.readme().contains(#"from: "\#(version)""#), "the install line names another version")
    }

    /// The hand-built middleware array is compiled and compared with ShopKitFactory's by the example package.
    @Test func handBuiltMiddlewaresAreTheREADMEsExample() throws {
        let file = READMESnippets.root.appendingPathComponent(
            "Examples/GeneratedClient/Sources/PetStoreClient/HandBuiltMiddlewares.swift")
        let example = try #require(try READMESnippets.example(inFile: file.path))
        #expect(
            try READMESnippets.documentShows(example, in: Self.generatedClientsArticle),
            "the article's hand-built middlewares differ from \(file.path)")
    }

    /// The generated-client example is compiled and run by its own package (Examples/GeneratedClient, which
    /// scripts/test tests); the README shows it verbatim.
    @Test func generatedClientExampleIsTheREADMEsExample() throws {
        let file = READMESnippets.root.appendingPathComponent(
            "Examples/GeneratedClient/Sources/PetStoreClient/PetStoreExample.swift")
        let example = try #require(try READMESnippets.example(inFile: file.path))
        #expect(example.count > 500)
        #expect(
            try READMESnippets.documentShows(example, in: Self.generatedClientsArticle),
            "the article's generated-client example differs from \(file.path)")
    }

    @Test func exampleRunsThroughRefreshAndReplay() async {
        let stub = StubTransport { request in
            request.authorization == "Bearer fresh" ? .json(#"{"id":"42","name":"Trail shoe"}"#) : .status(401)
        }
        let store = InMemoryTokenStore(AuthTokens(accessToken: "stale", refreshToken: "r"))
        let refresher = CountingRefresher(returning: AuthTokens(accessToken: "fresh", refreshToken: "r2"))
        #expect(await productTitle(id: "42", transport: stub, store: store, refresher: refresher) == "Trail shoe")
        #expect(await refresher.count == 1)
    }

    @Test func exampleMapsErrors() async {
        let store = InMemoryTokenStore(AuthTokens(accessToken: "a"))
        let refresher = CountingRefresher(returning: AuthTokens(accessToken: "b"))
        let missing = StubTransport(replies: [.status(404)])
        #expect(await productTitle(id: "1", transport: missing, store: store, refresher: refresher) == "No such product.")
        let signedOut = InMemoryTokenStore(nil)
        #expect(
            await productTitle(id: "1", transport: missing, store: signedOut, refresher: refresher)
                == "Please sign in again.")
    }
}

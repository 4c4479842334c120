// README-BEGIN (this block is the README's "A pinned request" example, verbatim; a test checks they match)
import Foundation
import Logging
import ShopKit

/// One pinned client: "this host, these pins" (at least two: the key in use and a backup key).
func pinnedProductName() async throws -> String {
    let (client, transport) = try ShopKitFactory.makeAPIClient(
        baseURL: URL(string: "https://api.example.com")!,
        configuration: ShopKitConfiguration(logger: Logger(label: "shop")),  // optional: no output by default
        pinning: ["api.example.com": [
            "sha256/r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=",  // current key
            "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg=",  // backup key, not deployed yet
        ]])
    let product = try await client.send(GetProduct(id: "42"))  // an APIRequest: "Using the API client"
    await transport.shutdown()  // in an app: one client per backend, shut down when the app is done with it
    return product.name
}
// README-END

import Testing
import TestSupport

@Suite(.timeLimit(.minutes(3))) struct READMEShortPinningTests {
    @Test func exampleIsTheREADMEsExample() throws {
        let example = try #require(try READMESnippets.example(inFile: #filePath))
        #expect(try READMESnippets.readmeShows(example), "README.md's short pinning example differs from this file")
    }

    /// The transport alone, as the README's sentence under the example shows it.
    @Test func theTransportAloneIsOneCall() async throws {
        let transport = try HTTPSTransport(pinning: [
            "api.example.com": ["sha256/r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=", "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],
        ])
        #expect(transport.pinning.pinSets.map(\.hostPattern.description) == ["api.example.com"])
        await transport.shutdown()
    }
}

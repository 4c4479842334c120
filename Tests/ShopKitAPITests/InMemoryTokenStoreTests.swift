import Testing

@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct InMemoryTokenStoreTests {
    @Test func savesLoadsAndClears() async throws {
        let store = InMemoryTokenStore()
        #expect(try await store.loadTokens() == nil)
        try await store.saveTokens(AuthTokens(accessToken: "a", refreshToken: "r"))
        #expect(try await store.loadTokens() == AuthTokens(accessToken: "a", refreshToken: "r"))
        try await store.clearTokens()
        #expect(try await store.loadTokens() == nil)
        #expect(await InMemoryTokenStore(AuthTokens(accessToken: "b")).tokens?.accessToken == "b")
    }
}

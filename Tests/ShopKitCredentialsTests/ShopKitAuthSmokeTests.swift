import Testing
@testable import ShopKitCredentials

@Suite(.timeLimit(.minutes(3))) struct ShopKitCredentialsSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

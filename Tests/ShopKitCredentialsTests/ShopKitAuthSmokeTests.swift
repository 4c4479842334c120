import Testing
@testable import ShopKitCredentials

@Suite struct ShopKitCredentialsSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

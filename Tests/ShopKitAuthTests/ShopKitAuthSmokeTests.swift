import Testing
@testable import ShopKitAuth

@Suite struct ShopKitAuthSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

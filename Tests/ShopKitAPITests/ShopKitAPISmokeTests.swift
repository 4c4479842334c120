import Testing
@testable import ShopKitAPI

@Suite struct ShopKitAPISmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

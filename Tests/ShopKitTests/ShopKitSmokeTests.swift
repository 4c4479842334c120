import Testing
@testable import ShopKit

@Suite struct ShopKitSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

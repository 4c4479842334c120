import Testing
@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct ShopKitAPISmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

import Testing
@testable import ShopKit

@Suite(.timeLimit(.minutes(3))) struct ShopKitSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

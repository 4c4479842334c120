import Testing
@testable import ShopKitTLS

@Suite struct ShopKitTLSSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

import Testing
@testable import ShopKitOpenSSL

@Suite struct ShopKitOpenSSLSmokeTests {
    @Test func moduleLoads() {
        #expect(Bool(true))
    }
}

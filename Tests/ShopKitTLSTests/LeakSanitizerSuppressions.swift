/// LeakSanitizer's built-in suppression list for the test binary (all test targets link into one).
///
/// XCTest's harness leaks two of its own objects (an `XCTestSuiteRun` and XCTMain's bookkeeping, 144 bytes)
/// even when it runs no test; every ShopKit test is Swift Testing. Only frames inside libXCTest are
/// suppressed, so a leak in ShopKit or OpenSSL is still reported.
@_cdecl("__lsan_default_suppressions")
func lsanDefaultSuppressions() -> UnsafePointer<CChar> {
    let suppressions: StaticString = "leak:libXCTest.so\n"
    return UnsafeRawPointer(suppressions.utf8Start).assumingMemoryBound(to: CChar.self)
}

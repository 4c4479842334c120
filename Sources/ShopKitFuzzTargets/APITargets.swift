import Foundation
import ShopKitAPI

/// The typed client's parser of server input: the `Retry-After` header.
enum APITargets {
    /// A fixed "now", so a run is reproducible.
    private static let now = Date(timeIntervalSince1970: 1_767_225_600)

    /// Input: a header value. A delay, when there is one, is never negative.
    static func retryAfter(_ bytes: [UInt8]) {
        guard let delay = RetryAfter.delay(from: String(fuzzInput: bytes), now: now) else { return }
        FuzzCheck.require(delay >= .zero, "negative Retry-After delay \(delay)")
    }
}

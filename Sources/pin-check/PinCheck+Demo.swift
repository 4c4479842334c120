import Foundation
import ShopKitDemoSupport

extension PinCheck {
    /// `--demo`: ``PinCheckDemo``'s three checks against in-process servers from the source tree's `TestCerts/`.
    /// Exit 0 when each check ended as it should, 70 when one did not, 69 when `TestCerts/` cannot be found.
    func runDemo() async throws(Failure) -> Int32 {
        let certificates: DemoCertificates
        do { certificates = try DemoCertificates.locate() } catch { throw Failure(.unavailable, "--demo: \(error)") }
        let unexpected: [PinCheckDemo.Unexpected]
        do {
            unexpected = try await PinCheckDemo.run(certificates: certificates) { print($0) }
        } catch {
            throw Failure(.unavailable, "--demo could not run its local servers: \(error)")
        }
        guard let first = unexpected.first else {
            print("pin-check demo: all three checks behaved as expected")
            return 0
        }
        throw Failure(
            .demoUnexpected,
            "--demo: UNEXPECTED result: check \"\(first.title)\" ended in \(first.actual.rawValue), expected "
                + "\(first.expected.rawValue)")
    }
}

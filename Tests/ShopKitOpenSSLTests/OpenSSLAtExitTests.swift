#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ShopKitOpenSSL
import Testing
import TestSupport

/// OpenSSL's global state outlives `exit`, so that an event-loop thread still inside OpenSSL while the process
/// exits (a connection closing after `main` is done) does not run on freed state and crash the process.
///
/// The test runs this test binary again as a child, which stands for that thread: an `atexit` handler registered
/// before ShopKit's first OpenSSL call runs after any handler OpenSSL registers, and uses OpenSSL there.
@Suite(.timeLimit(.minutes(3))) struct OpenSSLAtExitTests {
    static let childVariable = "SHOPKIT_OPENSSL_AT_EXIT_CHILD"
    static let usable = "openssl usable at exit"

    @Test func openSSLIsStillUsableWhileTheProcessExits() async throws {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let outcome = try await BuiltBinary(url: testBinary).run(
            ["--testing-library", "swift-testing", "--filter", "OpenSSLAtExitTests/childUsesOpenSSLWhileItExits"],
            environment: [Self.childVariable: "1"])
        #expect(outcome.status == 0, "stderr: \(outcome.stderr.suffix(2_000))")
        #expect(outcome.stdout.contains(Self.usable), "stdout: \(outcome.stdout.suffix(2_000))")
    }

    /// The child: only runs when the test above starts it.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[childVariable] == "1"))
    func childUsesOpenSSLWhileItExits() throws {
        atexit {
            // After OpenSSL's own exit handler, if it registered one: a digest needs its algorithm tables.
            let digest = try? SHA256Checksum.digest(Array("abc".utf8))
            if digest?.first == 0xba {
                let line = Array("\(OpenSSLAtExitTests.usable)\n".utf8)
                _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            }
        }
        // ShopKit's first OpenSSL call in this process.
        #expect(try SHA256Checksum.digest(Array("abc".utf8)).first == 0xba)
        exit(0)
    }
}

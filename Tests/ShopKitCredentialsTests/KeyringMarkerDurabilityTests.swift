import Foundation
import Testing

@testable import ShopKitCredentials

/// The user's keyring marker survives a crash right after the first keyring use (issue 26, item 2): the built
/// `token-store` is run under `strace`, which shows that the marker file is `fsync`ed before it is closed, and so
/// is the directory that holds its name.
@Suite(.enabled(
    if: KeyringTestEnvironment.isPrivate && FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"),
    "needs scripts/with-keyring and strace"), .timeLimit(.minutes(3)))
struct KeyringMarkerDurabilityTests {
    @Test func theMarkerAndItsDirectoryAreSynced() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            let markers = dir.url.appendingPathComponent("user").path
            let trace = dir.url.appendingPathComponent("trace").path
            let environment = [
                "XDG_DATA_HOME": dir.url.appendingPathComponent("data").path,
                TokenStoreFallbackCLITests.markerVariable: markers,
            ]
            let key = KeyringTestEnvironment.uniqueKey()
            let target = ["--service", key.service, "--account", key.account]
            let set = try await TokenStoreBinary.run(
                ["-ff", "-qq", "-o", trace, "-e", "trace=openat,fsync,close", binary.path, "set"] + target,
                stdin: "marker-token\n", environment: environment, executable: URL(fileURLWithPath: "/usr/bin/strace"))
            #expect(set.status == 0, "\(set.stderr)")
            _ = try await TokenStoreBinary.run(["delete"] + target, environment: environment)

            // One file per thread (`-ff`), so that no call is split across lines by another thread's.
            let threads = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
                .filter { $0.hasPrefix("trace.") }
                .map { try String(contentsOfFile: dir.url.appendingPathComponent($0).path, encoding: .utf8) }
                .map { $0.split(separator: "\n").map(String.init) }
            let marker = try #require(
                try? FileManager.default.contentsOfDirectory(atPath: markers).first, "no marker in \(markers)")
            #expect(threads.contains { Self.syncedBeforeClose($0, path: markers + "/" + marker) }, "marker file")
            #expect(threads.contains { Self.syncedBeforeClose($0, path: markers) }, "marker directory")
        }
    }

    /// Whether `path` was opened and the descriptor `openat` returned was `fsync`ed before it was closed.
    static func syncedBeforeClose(_ calls: [String], path: String) -> Bool {
        for (index, call) in calls.enumerated() where call.contains("openat(AT_FDCWD, \"\(path)\",") {
            guard let equals = call.range(of: " = ", options: .backwards),
                let fd = Int(call[equals.upperBound...].prefix { $0.isNumber })
            else { continue }
            for later in calls[(index + 1)...] {
                if later.contains("fsync(\(fd))") && later.hasSuffix("= 0") { return true }
                if later.contains("close(\(fd))") { break }
            }
        }
        return false
    }
}

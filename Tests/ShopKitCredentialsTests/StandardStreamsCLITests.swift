import Foundation
import Testing

@testable import ShopKitCredentials

/// token-store with standard streams that are closed or cannot be written (issue 26, item 5): a diagnostic line
/// never holds back the result, and a closed descriptor 0, 1 or 2 is reopened on `/dev/null` before anything
/// else can be opened in its place (an internal descriptor there would receive what is meant for the stream).
@Suite(.timeLimit(.minutes(3))) struct StandardStreamsCLITests {
    static let get = "exec 3<\"$2\"; \"$1\" get --file \"$3\" --service s --account a --passphrase-fd 3"

    /// The backend line on standard error cannot be written: the token is printed all the same.
    @Test(arguments: ["2>/dev/full", "2>&-"])
    func aLostDiagnosticDoesNotHoldBackTheToken(redirect: String) async throws {
        try await withTempDirectory { dir in
            let (file, passphraseFile) = try await CLIHardeningTests.store(in: dir)
            let outcome = try await CLIHardeningTests.bash(Self.get + " " + redirect, [passphraseFile, file])
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(outcome.stdout == "hardening-token\n")
        }
    }

    /// Standard output closed: the token goes to `/dev/null`, never into a file token-store opened (the token
    /// file, its lock file) that took descriptor 1.
    @Test func aClosedStandardOutputReceivesNothingElse() async throws {
        try await withTempDirectory { dir in
            let (file, passphraseFile) = try await CLIHardeningTests.store(in: dir)
            let outcome = try await CLIHardeningTests.bash(Self.get + " 1>&-", [passphraseFile, file])
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let directory = dir.storeURL.deletingLastPathComponent()
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
                #expect(bytes.range(of: Data("hardening-token".utf8)) == nil, "\(name) holds the token")
            }
            let again = try await CLIHardeningTests.bash(Self.get, [passphraseFile, file])
            #expect(again.stdout == "hardening-token\n", "\(again.stderr)")
        }
    }

    /// Standard input closed: `set` finds it empty (a usage error), not a read error on some other descriptor.
    @Test func aClosedStandardInputIsEmpty() async throws {
        try await withTempDirectory { dir in
            let (file, passphraseFile) = try await CLIHardeningTests.store(in: dir)
            let set = "exec 3<\"$2\"; \"$1\" set --file \"$3\" --service s --account b --passphrase-fd 3 <&-"
            let outcome = try await CLIHardeningTests.bash(set, [passphraseFile, file])
            #expect(outcome.status == 64, "\(outcome.stderr)")
            #expect(outcome.stderr.contains("standard input holds no token"), "\(outcome.stderr)")
        }
    }
}

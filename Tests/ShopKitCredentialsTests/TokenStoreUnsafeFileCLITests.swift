import Foundation
import Testing
import TestSupport

@testable import ShopKitCredentials

/// Issue 39, item 6: a token file that is a symbolic link or has a second name (a hard link) is a security
/// refusal with an exit code of its own (12), not the 8 of an ordinary I/O error; the library's error is
/// `CredentialError.unsafeFile` for both.
@Suite(.timeLimit(.minutes(3))) struct TokenStoreUnsafeFileCLITests {
    static func target(_ command: String, _ url: URL) -> [String] {
        [command, "--backend", "file", "--file", url.path, "--service", "s", "--account", "a"]
    }

    /// Makes a store at `dir.storeURL` holding one token, then lets `link` give it a second path or name.
    static func run(_ link: (TempDirectory) throws -> Void) async throws -> TokenStoreBinary.Outcome {
        try await withTempDirectory { dir in
            let set = try await TokenStoreCLITests.runWithPassphrase(
                target("set", dir.storeURL), passphrase: "unsafe-file-exit", stdin: "unsafe-file-token\n")
            #expect(set.status == 0, "\(set.stderr)")
            try link(dir)
            return try await TokenStoreCLITests.runWithPassphrase(target("get", dir.storeURL), passphrase: "unsafe-file-exit")
        }
    }

    @Test func aSymlinkedStoreExits12() async throws {
        let outcome = try await Self.run { dir in
            let real = dir.url.appendingPathComponent("real.skt")
            try FileManager.default.moveItem(at: dir.storeURL, to: real)
            try FileManager.default.createSymbolicLink(at: dir.storeURL, withDestinationURL: real)
        }
        #expect(outcome.status == 12, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("symbolic link"), "\(outcome.stderr)")
        #expect(!outcome.stdout.contains("unsafe-file-token") && !outcome.stderr.contains("unsafe-file-token"))
    }

    @Test func aHardLinkedStoreExits12() async throws {
        let outcome = try await Self.run { dir in
            try FileManager.default.linkItem(at: dir.storeURL, to: dir.url.appendingPathComponent("second-name.skt"))
        }
        #expect(outcome.status == 12, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("hard links"), "\(outcome.stderr)")
        #expect(!outcome.stdout.contains("unsafe-file-token"))
    }

    @Test func helpListsTheCode() async throws {
        let help = try await TokenStoreBinary.run(["--help"], environment: TokenStoreCLITests.noBus)
        #expect(help.status == 0)
        #expect(help.stdout.contains("12 unsafe token file"), "\(help.stdout)")
    }
}

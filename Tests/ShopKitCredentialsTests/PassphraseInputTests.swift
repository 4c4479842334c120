import Foundation
import ShopKitAPI
import Testing

@testable import ShopKitCredentials

/// Passphrases (issue 16, item 2): never cut, never empty or short for a new file, asked twice on a terminal.
@Suite(.timeLimit(.minutes(3))) struct PassphraseInputTests {
    /// Writes `bytes` into a pipe, closes its write end and returns the read end.
    static func pipe(holding bytes: [UInt8]) throws -> Int32 {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { throw FixtureError(description: "pipe failed") }
        let written = write(fds[1], bytes, bytes.count)
        close(fds[1])
        guard written == bytes.count else { throw FixtureError(description: "short write into the pipe") }
        return fds[0]
    }

    static func read(_ bytes: [UInt8]) async -> Result<[UInt8], CredentialError> {
        guard let fd = try? pipe(holding: bytes) else { return .failure(.io("pipe")) }
        defer { close(fd) }
        do throws(CredentialError) {
            return .success(try await Passphrase.read(fromFileDescriptor: fd).withBytes { Array($0) })
        } catch {
            return .failure(error)
        }
    }

    @Test func aNewFileRefusesAnEmptyOrShortPassphrase() async throws {
        try await withTempDirectory { dir in
            for text in ["", "1234567"] {
                let error = await caughtError { () throws(CredentialError) in
                    try await makeStore(dir.storeURL, passphrase: text)
                        .write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
                }
                guard let why = failureReason(of: error, ifIs: .passphraseRejected) else {
                    Issue.record("\(text.count) bytes: expected passphraseRejected, got \(String(describing: error))")
                    continue
                }
                #expect(why.contains("at least 8 bytes"))
                #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
            }
            try await makeStore(dir.storeURL, passphrase: "12345678")
                .write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(try await makeStore(dir.storeURL, passphrase: "12345678").read(aliceKey)?.tokens == aliceTokens)
            // Opening is not creating: a wrong (even empty) passphrase is just wrong.
            #expect(await caughtError { () throws(CredentialError) in
                try await makeStore(dir.storeURL, passphrase: "").read(aliceKey)
            } == .wrongPassphrase)
        }
    }

    /// A key file is used whole: newlines, NULs and high bytes inside it count; one trailing newline is dropped.
    @Test func aDescriptorIsReadWholeWithOneTrailingNewlineDropped() async throws {
        let binary: [UInt8] = [0x6B, 0x0A, 0x00, 0xFF, 0x0D, 0x0A, 0x41]
        #expect(try await Self.read(binary + [0x0A]).get() == binary)
        #expect(try await Self.read(binary + [0x0A, 0x0A]).get() == binary + [0x0A])
        #expect(try await Self.read(Array("crlf secret\r\n".utf8)).get() == Array("crlf secret".utf8))
        #expect(try await Self.read(Array("no newline".utf8)).get() == Array("no newline".utf8))
        #expect(try await Self.read([0x0A]).get() == [])
        guard case .failure(let error) = await Self.read([]), error.code == .io else { Issue.record("end of input must be .io"); return }
    }

    /// Longer than 4096 bytes is refused, not cut to 4096 (which let `AAAA…totally-different` open a file made
    /// with `AAAA…SECRET-TAIL-1`).
    @Test func anOverLongPassphraseIsRefusedNotCut() async throws {
        let prefix = [UInt8](repeating: 0x41, count: 4096)
        guard case .failure(let error) = await Self.read(prefix + Array("SECRET-TAIL-1".utf8)),
            let why = failureReason(of: error, ifIs: .passphraseRejected)
        else {
            Issue.record("an over-long passphrase must be refused")
            return
        }
        #expect(why.contains("4096"))
        #expect(try await Self.read(prefix + [0x0A]).get() == prefix)
        guard case .failure(let error) = await Self.read(prefix + [0x41, 0x0A]), error.code == .passphraseRejected else {
            Issue.record("4097 bytes must be refused")
            return
        }
    }

    @Test func theCLIRefusesEmptyShortAndOverLongPassphrasesForANewFile() async throws {
        try await withTempDirectory { dir in
            let file = dir.storeURL.path
            let target = ["set", "--file", file, "--service", "s", "--account", "a"]
            let long = String(repeating: "A", count: 4096) + "SECRET-TAIL-1"
            for passphrase in ["", "short", long] {
                let set = try await TokenStoreCLITests.runWithPassphrase(target, passphrase: passphrase, stdin: "t\n")
                #expect(set.status == 9, "\(passphrase.count) bytes: \(set.stderr)")
                #expect(set.stderr.contains("passphrase refused"), "\(set.stderr)")
                #expect(!set.stderr.contains("SECRET-TAIL"))
                #expect(!FileManager.default.fileExists(atPath: file))
            }
        }
    }

    /// A binary key file given on --passphrase-fd counts whole, not up to its first newline.
    @Test func theCLIUsesAKeyFileWhole() async throws {
        try await withTempDirectory { dir in
            let arguments = ["--file", dir.storeURL.path, "--service", "s", "--account", "a"]
            let set = try await TokenStoreCLITests.runWithPassphrase(
                ["set"] + arguments, passphrase: "keyfile-part-1\npart-2", stdin: "key-file-token\n")
            #expect(set.status == 0, "\(set.stderr)")
            let other = try await TokenStoreCLITests.runWithPassphrase(
                ["get"] + arguments, passphrase: "keyfile-part-1\nsomething-else")
            #expect(other.status == 4, "\(other.stderr)")
            #expect(other.stdout.isEmpty)
            let right = try await TokenStoreCLITests.runWithPassphrase(["get"] + arguments, passphrase: "keyfile-part-1\npart-2")
            #expect(right.stdout == "key-file-token\n", "\(right.stderr)")
        }
    }

    /// On a terminal a new file's passphrase is asked twice; answers that differ, or one that is too short,
    /// create nothing.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script"))
    func aNewFilesPassphraseIsAskedTwiceOnATerminal() async throws {
        guard let binary = TokenStoreBinary.binary else { throw FixtureError(description: "token-store binary not found") }
        try await withTempDirectory { dir in
            let file = dir.storeURL.path
            let command = "'\(binary.path)' set --file '\(file)' --service s --account a"
            let first = "Passphrase for the new token file: ", again = "Repeat the passphrase: "

            let differ = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus,
                answers: [("Token: ", "tty-token"), (first, "first-passphrase"), (again, "second-passphrase")])
            #expect(differ.status == 9, "\(differ.screen)")
            #expect(differ.screen.contains("the two passphrases differ"))
            #expect(!FileManager.default.fileExists(atPath: file))

            let short = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus, answers: [("Token: ", "tty-token"), (first, "short")])
            #expect(short.status == 9, "\(short.screen)")
            #expect(!short.screen.contains(again))
            #expect(!FileManager.default.fileExists(atPath: file))

            let same = try await TerminalSession.run(
                command, environment: TokenStoreCLITests.noBus,
                answers: [("Token: ", "tty-token"), (first, "same-passphrase"), (again, "same-passphrase")])
            #expect(same.status == 0, "\(same.screen)")
            #expect(!same.screen.contains("same-passphrase"))
            let get = try await TokenStoreCLITests.runWithPassphrase(
                ["get", "--file", file, "--service", "s", "--account", "a"], passphrase: "same-passphrase")
            #expect(get.stdout == "tty-token\n", "\(get.stderr)")
        }
    }
}

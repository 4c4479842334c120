import Dispatch
import Foundation
import Testing
import TestSupport
@testable import ShopKitCredentials

/// A real pseudo-terminal: the verifier reads the slave side, the test types on the master side.
private final class PseudoTerminal {
    let master: Int32
    let slavePath: String
    /// Held open so the master never sees a hang-up between the verifier's opens (reads would then fail early).
    private var slave: Int32 = -1

    init() throws {
        // posix_openpt/ptsname are not visible to Swift's Glibc module; this is what they do on Linux.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        let tiocsptlck: UInt = 0x4004_5431, tiocgptn: UInt = 0x8004_5430
        guard master >= 0, ioctl(master, tiocsptlck, &unlock) == 0, ioctl(master, tiocgptn, &number) == 0 else {
            throw CredentialError.io("cannot open a pseudo-terminal")
        }
        slavePath = "/dev/pts/\(number)"
        slave = open(slavePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
    }

    deinit {
        close(slave)
        close(master)
    }

    /// Waits (blocking, on a thread of its own, with a deadline) until the terminal has shown `marker`, then types
    /// `line`; returns everything the terminal showed up to and including the marker.
    func answer(after marker: String, with line: String) async throws -> String {
        let master = self.master
        return try await offPool("the terminal to show \"\(marker)\"") {
            var shown = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 256)
            while !String(decoding: shown, as: UTF8.self).contains(marker) {
                let count = read(master, &chunk, chunk.count)
                if count <= 0 { break }
                shown += chunk[0..<count]
            }
            let bytes = Array(line.utf8)
            _ = write(master, bytes, bytes.count)
            return String(decoding: shown, as: UTF8.self)
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct TerminalPassphraseVerifierTests {
    @Test func cannotVerifyWithoutATerminal() {
        #expect(!TerminalPassphraseVerifier(check: .passphrase(passphrase("x")), terminalPath: "/nonexistent/tty").canVerify)
        #expect(!TerminalPassphraseVerifier(check: .passphrase(passphrase("x")), terminalPath: "/dev/null").canVerify)
    }

    @Test func correctPassphraseIsAcceptedWithoutEcho() async throws {
        let terminal = try PseudoTerminal()
        let verifier = TerminalPassphraseVerifier(check: .passphrase(passphrase("open sesame")), terminalPath: terminal.slavePath)
        #expect(verifier.canVerify)
        async let verdict: CredentialError? = caughtError { () async throws(CredentialError) in
            try await verifier.verifyPresence(reason: "read the credential shop/alice")
        }
        let shown = try await terminal.answer(after: "confirm it is you: ", with: "open sesame\n")
        #expect(await verdict == nil)
        #expect(shown.contains("ShopKit wants to read the credential shop/alice."))
        // Whatever the terminal printed after the answer must not contain the passphrase (echo was off).
        var rest = [UInt8](repeating: 0, count: 256)
        let flags = fcntl(terminal.master, F_GETFL)
        _ = fcntl(terminal.master, F_SETFL, flags | O_NONBLOCK)
        let count = read(terminal.master, &rest, rest.count)
        #expect(!String(decoding: rest[0..<max(count, 0)], as: UTF8.self).contains("sesame"))
    }

    @Test func wrongPassphraseIsDenied() async throws {
        let terminal = try PseudoTerminal()
        let verifier = TerminalPassphraseVerifier(
            check: .passphrase(passphrase("open sesame")), terminalPath: terminal.slavePath, attempts: 1)
        async let verdict: CredentialError? = caughtError { () async throws(CredentialError) in
            try await verifier.verifyPresence(reason: "read x")
        }
        _ = try await terminal.answer(after: "confirm it is you: ", with: "guess\n")
        #expect(await verdict == .accessDenied("the passphrase did not match after 1 tries"))
    }

    @Test func hashCheckAcceptsOnlyTheHashedPassphrase() async throws {
        let hash = try await PassphraseHash.make(passphrase("presence"), parameters: fastKDF)
        let parsed = try PassphraseHash(encoded: hash.encoded)
        #expect(parsed == hash)
        #expect(hash.encoded.hasPrefix("scrypt$10$8$1$"))
        #expect(!"\(hash)".contains(Data(hash.hash).base64EncodedString()))
        #expect(try parsed.matchesBlocking(passphrase("presence")))
        #expect(try parsed.matchesBlocking(passphrase("Presence")) == false)
        #expect(throws: CredentialError.self) { try PassphraseHash(encoded: "scrypt$30$8$1$AAAAAAAAAAAAAAAAAAAAAA==$" + hash.encoded.split(separator: "$").last!) }
        #expect(throws: CredentialError.self) { try PassphraseHash(encoded: "bcrypt$whatever") }

        let terminal = try PseudoTerminal()
        let verifier = TerminalPassphraseVerifier(check: .hash(parsed), terminalPath: terminal.slavePath, attempts: 2)
        async let verdict: CredentialError? = caughtError { () async throws(CredentialError) in
            try await verifier.verifyPresence(reason: "read y")
        }
        let first = try await terminal.answer(after: "confirm it is you: ", with: "nope\n")
        #expect(first.contains("Passphrase"))
        _ = try await terminal.answer(after: "confirm it is you: ", with: "presence\n")
        #expect(await verdict == nil)
    }

    @Test func passphraseFromAFileDescriptor() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let input = Array("pipe secret\r\nnext line\n".utf8)
        _ = write(fds[1], input, input.count)
        close(fds[1])
        // The whole input is the passphrase (issue 16: a key file is not cut at its first newline); only one
        // trailing line ending is dropped.
        let read = try await Passphrase.read(fromFileDescriptor: fds[0])
        #expect(read.withBytes { Array($0) } == Array("pipe secret\r\nnext line".utf8))
        await #expect(throws: CredentialError.self) { try await Passphrase.read(fromFileDescriptor: fds[0]) }
        close(fds[0])
    }

    @Test func passphrasePromptReadsTheTerminalWithoutEcho() async throws {
        let terminal = try PseudoTerminal()
        let path = terminal.slavePath
        async let typed = Passphrase.prompt("Token file passphrase: ", terminalPath: path)
        let shown = try await terminal.answer(after: "passphrase: ", with: "typed secret\n")
        #expect(try await typed.withBytes { Array($0) } == Array("typed secret".utf8))
        #expect(!shown.contains("typed secret"))
        await #expect(throws: CredentialError.self) { try await Passphrase.prompt("x", terminalPath: "/dev/null") }
    }
}

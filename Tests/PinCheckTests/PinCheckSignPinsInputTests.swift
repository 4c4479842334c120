import Foundation
import ShopKitPinning
import TestSupport
import Testing

/// Issue 38, review rounds F8 and F9 through the built `pin-check`: where sign-pins may read its key from, and
/// what verify-pins says it did not check.
extension PinCheckSignPinsRulesTests {
    /// `--key /dev/stdin` (a pipe) was read as an empty key: its size is 0 until it is read. A pipe is read to
    /// its end (`gpg -d key.gpg | pin-check sign-pins --key /dev/stdin`); a pipe that brings nothing is said to be
    /// empty.
    @Test func signPinsReadsItsKeyFromAPipe() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = try String(contentsOfFile: "\(dir)/a.key", encoding: .utf8)
        let signed = try await PinCheckBinary.binary().run(
            ["sign-pins", "--key", "/dev/stdin", "--kid", "a", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"], stdin: key)
        #expect(signed.status == 0, "\(signed.stderr)")
        let verified = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.shop", "\(dir)/pins.jws"])
        #expect(verified.status == 0, "\(verified.stderr)")

        let empty = try await PinCheckBinary.binary().run(
            ["sign-pins", "--key", "/dev/stdin", "--kid", "a", "--in", "\(dir)/pins.json", "--out", "\(dir)/empty.jws"], stdin: "")
        #expect(empty.status == 64)
        #expect(empty.stderr.contains("--key /dev/stdin: empty: the pipe closed before a key came"), "\(empty.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/empty.jws"))
    }

    /// The mode was checked with `stat` on the path, then the path opened again: a device or a directory got
    /// chmod advice, and the file checked need not be the file read. Now the open file is checked.
    @Test func signPinsReadsOnlyAFileOrAPipeOnlyTheUserCanRead() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (path, kind) in [("/dev/null", "a character device"), (dir, "a directory")] {
            let refused = try await PinCheckBinary.run(["sign-pins", "--key", path, "--kid", "a", "--in", "\(dir)/pins.json", "--out", "\(dir)/x.jws"])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("--key \(path): \(kind), not a file or a pipe"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("chmod"), "\(refused.stderr)")
        }
        // A named pipe others may open is refused before anything is read from it.
        #expect(mkfifo("\(dir)/fifo", 0o600) == 0)
        #expect(chmod("\(dir)/fifo", 0o644) == 0)
        let fifo = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/fifo", "--kid", "a", "--in", "\(dir)/pins.json", "--out", "\(dir)/x.jws"])
        #expect(fifo.status == 64)
        #expect(fifo.stderr.contains("chmod 600 \(dir)/fifo"), "\(fifo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/x.jws"))
    }

    /// `--key /dev/stdin` without `--kid` signed under the kid "stdin", which no app knows; the help says to give
    /// `--kid` then. A key from standard input or a pipe needs `--kid`: exit 64, nothing written.
    @Test func aKeyFromStandardInputNeedsAKeyID() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = try String(contentsOfFile: "\(dir)/a.key", encoding: .utf8)
        let piped = try await PinCheckBinary.binary().run(
            ["sign-pins", "--key", "/dev/stdin", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"], stdin: key)
        #expect(piped.status == 64, "\(piped.stdout) \(piped.stderr)")
        #expect(piped.stderr.contains("give --kid"), "\(piped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/pins.jws"))
        // A named pipe is no key file with a name either.
        #expect(mkfifo("\(dir)/fifo", 0o600) == 0)
        let fifo = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/fifo", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"])
        #expect(fifo.status == 64, "\(fifo.stderr)")
        #expect(fifo.stderr.contains("give --kid"), "\(fifo.stderr)")
    }

    /// A 0644 key file redirected to standard input was told to `chmod 600 /dev/stdin`, which changes nothing that
    /// matters: the advice names the file redirected into it, or a pipe from the decrypting command.
    @Test func aReadableFileRedirectedToStandardInputGetsAdviceThatFits() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(chmod("\(dir)/a.key", 0o644) == 0)
        let binary = try PinCheckBinary.binary().url.path
        let shell = BuiltBinary(url: URL(fileURLWithPath: "/bin/sh"))
        let outcome = try await shell.run([
            "-c", #""$0" sign-pins --key /dev/stdin --kid a --in "$1/pins.json" --out "$1/x.jws" < "$1/a.key""#, binary, dir,
        ])
        #expect(outcome.status == 64, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("the file redirected to it has mode"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("chmod 600 /dev/stdin"), "\(outcome.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/x.jws"))
    }

    /// A host pattern with U+212A KELVIN SIGN was read as `k` and signed. It is refused as non-ASCII, escaped.
    @Test func signPinsRefusesANonASCIIHostPatternThatLowercasesToASCII() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let json = try String(contentsOfFile: "\(dir)/pins.json", encoding: .utf8)
            .replacingOccurrences(of: "\"api.example.com\"", with: "\"API.EXAMPLE.CO\u{212A}\"")
        try json.write(toFile: "\(dir)/kelvin.json", atomically: true, encoding: .utf8)
        let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/kelvin.json", "--out", "\(dir)/k.jws"])
        #expect(signed.status == 65, "\(signed.stdout) \(signed.stderr)")
        #expect(signed.stderr.contains(#""API.EXAMPLE.CO\u{212A}" is not ASCII"#), "\(signed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/k.jws"))
    }

    /// verify-pins checked documents against an empty baseline without a word: the rule that keeps the app's own
    /// hosts pinned was never applied. It says so, on every valid document.
    @Test func verifyPinsSaysTheBaselineRuleWasNotChecked() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"])
        #expect(signed.status == 0, "\(signed.stderr)")
        let verified = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.shop", "\(dir)/pins.jws"])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("  baseline: not checked"), "\(verified.stdout)")
        let help = try await PinCheckBinary.run(["verify-pins", "--help"])
        #expect(help.stdout.contains("baseline"), "\(help.stdout)")
    }
}

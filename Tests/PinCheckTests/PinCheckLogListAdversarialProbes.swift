import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Security review of pin-check's log-list commands (branch ct-attack2), through the built binary: what
/// `sign-log-list` signs against what the app's `PinSetVerifier.verifyLogList` takes, key files, output files,
/// odd lists and terminal output.
///
/// Run on demand: `SHOPKIT_ADVERSARIAL=1 swift test --filter PinCheckLogListAdversarialProbes`.
@Suite(
    .enabled(if: ProcessInfo.processInfo.environment["SHOPKIT_ADVERSARIAL"] != nil, "set SHOPKIT_ADVERSARIAL=1"),
    .timeLimit(.minutes(5)))
struct PinCheckLogListAdversarialProbes {
    static let audience = "com.example.shop"
    static let listText = try! String(contentsOfFile: PinCheckLogListTests.testList, encoding: .utf8)

    static func ts(_ date: Date) -> String { PinSetDocument.timestamp(date) }

    /// The app's verifier for the workspace's keys a and b.
    static func verifier(_ dir: String) throws -> PinSetVerifier {
        try PinSetVerifier(
            publicKeys: [
                "a": try String(contentsOfFile: "\(dir)/a.pub", encoding: .utf8),
                "b": try String(contentsOfFile: "\(dir)/b.pub", encoding: .utf8),
            ], audience: audience)
    }

    /// The Ed25519 key in the PEM file at `path`.
    static func privateKey(_ path: String) throws -> OpenSSLKey {
        let pem = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let bytes = SecureBytes(count: pem.count) { buffer in buffer.copyBytes(from: pem) }
        return try OpenSSLKey.privateKey(pem: bytes)
    }

    /// A document's JSON written by hand: `version`, `issued`, `expires` and `audience` as JSON text.
    static func document(
        version: String = "2", issued: String? = nil, expires: String? = nil, audience: String = #""com.example.shop""#,
        list: String = listText, extra: String = ""
    ) -> String {
        let now = Date()
        return #"{"version": \#(version), "issuedAt": "\#(issued ?? ts(now - 3600))", "expiresAt": "\#(expires ?? ts(now + 10 * 86_400))", "audience": \#(audience), "logList": \#(list)\#(extra)}"#
    }

    /// Any printable line: no C0/C1 control character but tab, no Unicode line or paragraph separator.
    static func controlCharacters(_ text: String) -> [Unicode.Scalar] {
        text.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n" && $0 != "\t") || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028
                || $0.value == 0x2029
        }
    }

    // MARK: What sign-log-list signs is what the app takes, and the reverse

    /// Hand-written documents with JSON and date tricks: sign-log-list signs exactly those the app's verifier takes
    /// (now), and what it takes is the document signed.
    @Test func signLogListAndTheAppAgreeOnOddDocuments() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let verifier = try Self.verifier(dir)
        let signingKey = try Self.privateKey("\(dir)/a.key")
        let now = Date()
        let list = Self.listText
        let cases: [(String, Data)] = [
            ("plain", Self.document()),
            ("version 1e2", Self.document(version: "1e2")),
            ("version 7.0", Self.document(version: "7.0")),
            ("version \"7\"", Self.document(version: #""7""#)),
            ("version 2^53+1", Self.document(version: "9007199254740993")),
            ("version -0", Self.document(version: "-0")),
            ("BOM", "\u{FEFF}" + Self.document()),
            ("trailing garbage", Self.document() + "x"),
            ("trailing whitespace", Self.document() + " \n\t\r\n"),
            ("trailing NUL", Self.document() + "\u{0}"),
            ("duplicate version", Self.document(extra: #", "version": 3"#)),
            ("escaped duplicate version", Self.document(extra: #", "\u0076ersion": 3"#)),
            ("escaped member names", Self.document().replacingOccurrences(of: #""audience""#, with: #""\u0061udience""#)),
            ("duplicate logList", Self.document(extra: #", "logList": {"log_list_timestamp": "2020-01-01T00:00:00Z", "operators": []}"#)),
            ("duplicate in nested log", Self.document(list: list.replacingOccurrences(of: #""mmd": 86400,"#, with: #""mmd": 86400, "mmd": 1,"#))),
            ("escaped duplicate in nested state", Self.document(list: list.replacingOccurrences(
                of: #""timestamp": "2025-01-01T00:00:00Z""#, with: #""timestamp": "2025-01-01T00:00:00Z", "\u0074imestamp": "2030-01-01T00:00:00Z""#))),
            ("mmd 1e2 in the list", Self.document(list: list.replacingOccurrences(of: #""mmd": 86400"#, with: #""mmd": 1e2"#))),
            ("empty audience", Self.document(audience: #""""#)),
            ("null audience", Self.document(audience: "null")),
            ("no audience", Self.document().replacingOccurrences(of: #""audience": "com.example.shop", "#, with: "")),
            ("audience with escape", Self.document(audience: #""com.example.shop\u001b[2J""#)),
            ("issued February 30", Self.document(issued: "2026-02-30T00:00:00Z")),
            ("issued with fraction", Self.document(issued: Self.ts(now - 3600).replacingOccurrences(of: "Z", with: ".5Z"))),
            ("issued 24:00", Self.document(issued: String(Self.ts(now - 86_400 * 2).prefix(11)) + "24:00:00Z")),
            ("issued in 4 minutes", Self.document(issued: Self.ts(now + 240))),
            ("issued in 6 minutes", Self.document(issued: Self.ts(now + 360))),
            ("valid 180 days", Self.document(issued: Self.ts(now - 3600), expires: Self.ts(now - 3600 + 180 * 86_400))),
            ("valid 180 days + 1 s", Self.document(issued: Self.ts(now - 3600), expires: Self.ts(now - 3600 + 180 * 86_400 + 1))),
            ("expired", Self.document(issued: Self.ts(now - 7200), expires: Self.ts(now - 1))),
            ("expires before issued", Self.document(issued: Self.ts(now - 60), expires: Self.ts(now - 120))),
            ("list 4 minutes after the document", Self.document(
                issued: Self.ts(now - 3600), list: list.replacingOccurrences(of: "2026-11-01T00:00:00Z", with: Self.ts(now - 3600 + 240)))),
            ("list 6 minutes after the document", Self.document(
                issued: Self.ts(now - 3600), list: list.replacingOccurrences(of: "2026-11-01T00:00:00Z", with: Self.ts(now - 3600 + 360)))),
            ("list dated 10000", Self.document(list: list.replacingOccurrences(of: "2026-11-01T00:00:00Z", with: "10000-01-01T00:00:00Z"))),
            ("pinSets beside logList", Self.document(extra: #", "pinSets": []"#)),
        ].map { ($0.0, Data($0.1.utf8)) } + [
            ("not UTF-8", Data(Self.document(extra: #", "x": "XX""#).utf8).replacing(Data("XX".utf8), with: Data([0xFF, 0xFE]))),
            ("UTF-16", Self.document().data(using: .utf16)!),
        ]
        var disagreements: [String] = []
        for (index, (label, bytes)) in cases.enumerated() {
            let input = "\(dir)/doc-\(index).json", output = "\(dir)/doc-\(index).jws"
            try bytes.write(to: URL(fileURLWithPath: input))
            let signed = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", input, "--out", output])
            #expect(Self.controlCharacters(signed.stdout + signed.stderr).isEmpty, "\(label): \(signed.stderr.debugDescription)")
            #expect([0, 65].contains(signed.status), "\(label): exit \(signed.status) \(signed.stderr)")
            // What the app makes of the same payload, signed by the same key under the log-list typ.
            let jws = try CompactJWS.serialize(payload: [UInt8](bytes), keyID: "a", kind: .ctLogList) { try signingKey.signEd25519($0) }
            // An app whose identifier is the document's odd audience, if PinSetVerifier takes one.
            let appVerifier = label == "audience with escape"
                ? try PinSetVerifier(
                    publicKeys: ["a": String(contentsOfFile: "\(dir)/a.pub", encoding: .utf8), "b": String(contentsOfFile: "\(dir)/b.pub", encoding: .utf8)],
                    audience: "com.example.shop\u{1B}[2J")
                : verifier
            let app = Result { try appVerifier.verifyLogList(jws, currentVersion: 1, now: Date()) }
            let signedIt = FileManager.default.fileExists(atPath: output)
            #expect(signedIt == (signed.status == 0), "\(label)")
            var appTakes = false
            if case .success = app { appTakes = true }
            print("PROBE \(label): sign-log-list \(signed.status) \(signed.stderr.split(separator: "\n").first ?? ""); app \(app.map { "takes version \($0.version)" })")
            if signedIt != appTakes { disagreements.append("\(label): sign-log-list \(signedIt ? "signs" : "refuses"), the app \(appTakes ? "takes" : "refuses")") }
            if signedIt {
                // The signed file is what the app takes: the tool's own JWS through the app's verifier.
                let text = try String(contentsOfFile: output, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                let taken = Result { try appVerifier.verifyLogList(text, currentVersion: 1, now: Date()) }
                if case .failure(let error) = taken { disagreements.append("\(label): signed, the app refuses the signed file: \(error)") }
                if case .success(let document) = taken, case .success(let direct) = app {
                    #expect(document.version == direct.version && document.logList == direct.logList && document.audience == direct.audience, "\(label)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
    }

    /// Lists `log-list` takes go through log-list-document, sign-log-list and the app's verifier, the list as given.
    @Test func everyListLogListTakesBecomesADocumentTheAppTakes() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let verifier = try Self.verifier(dir)
        let list = Self.listText
        // A depth-16 unknown member: the deepest a list may nest (log at depth 5, 11 more levels).
        let deep = String(repeating: #"{"a":"#, count: 10) + "{}" + String(repeating: "}", count: 10)
        let cases: [(String, String)] = [
            ("mmd 1e2", list.replacingOccurrences(of: #""mmd": 86400"#, with: #""mmd": 1e2"#)),
            ("mmd 2^53+1", list.replacingOccurrences(of: #""mmd": 86400"#, with: #""mmd": 9007199254740993"#)),
            ("control characters in a description", list.replacingOccurrences(of: #""ShopKit Test Log A""#, with: #""Log \u0000\u001b[31m\n A""#)),
            ("escaped member name", list.replacingOccurrences(of: #""log_list_timestamp""#, with: #""\u006cog_list_timestamp""#)),
            ("unknown member nested to depth 16", list.replacingOccurrences(of: #""mmd": 86400,"#, with: #""mmd": 86400, "x": \#(deep),"#)),
            ("previous operators with a fraction", list.replacingOccurrences(
                of: #""mmd": 86400,"#, with: #""mmd": 86400, "previous_operators": [{"name": "ShopKit Test Operator Two", "end_time": "2026-06-01T00:00:00.25Z"}],"#)),
        ]
        var broken: [String] = []
        for (index, (label, text)) in cases.enumerated() {
            let path = "\(dir)/list-\(index).json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let checked = try await PinCheckBinary.run(["log-list", path])
            guard checked.status == 0 else {
                print("PROBE list \(label): log-list refuses (\(checked.stderr))")
                continue
            }
            let made = try await PinCheckBinary.run([
                "log-list-document", "--list", path, "--version", "2", "--audience", Self.audience, "--out", "\(dir)/list-\(index).doc",
            ])
            let signed = made.status == 0
                ? try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/list-\(index).doc", "--out", "\(dir)/list-\(index).jws"])
                : made
            print("PROBE list \(label): log-list 0, log-list-document \(made.status), sign-log-list \(signed.status) \(signed.stderr)")
            guard made.status == 0, signed.status == 0 else {
                broken.append("\(label): pin-check log-list takes it, yet no signed document can carry it (\(signed.stderr.prefix(160)))")
                continue
            }
            let jws = try String(contentsOfFile: "\(dir)/list-\(index).jws", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let document = try verifier.verifyLogList(jws, currentVersion: 1, now: Date())
            #expect(document.logList == (try CTLogList(json: Data(text.utf8))), "\(label): the app's list is not the list given")
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    // MARK: Key files

    /// Key files sign-pins' rules refuse, and odd ones: never signed with a key others may read, never a hang,
    /// never the key printed.
    @Test func oddKeyFiles() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(Self.document().utf8).write(to: URL(fileURLWithPath: "\(dir)/doc.json"))
        let key = try String(contentsOfFile: "\(dir)/a.key", encoding: .utf8)
        let body = key.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let fm = FileManager.default
        func file(_ name: String, _ contents: String, mode: Int = 0o600) throws -> String {
            let path = "\(dir)/\(name)"
            try contents.write(toFile: path, atomically: true, encoding: .utf8)
            try fm.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
        // (label, --key, extra arguments, must it be refused?)
        var cases: [(String, String, [String], Bool)] = [
            ("group-readable", try file("g.key", key, mode: 0o640), [], true),
            ("world-readable", try file("o.key", key, mode: 0o604), [], true),
            ("owner write-only", try file("w.key", key, mode: 0o200), [], false),
            ("empty", try file("e.key", ""), [], true),
            ("the public key", try file("p.key", String(contentsOfFile: "\(dir)/a.pub", encoding: .utf8)), [], true),
            ("a directory", dir, ["--kid", "a"], true),
            ("/dev/zero", "/dev/zero", ["--kid", "a"], true),
            ("/dev/urandom", "/dev/urandom", ["--kid", "a"], true),
        ]
        try fm.createSymbolicLink(atPath: "\(dir)/link-to-g.key", withDestinationPath: "\(dir)/g.key")
        cases.append(("a symlink to a group-readable key", "\(dir)/link-to-g.key", [], true))
        try fm.createSymbolicLink(atPath: "\(dir)/zero.key", withDestinationPath: "/dev/zero")
        cases.append(("a symlink to /dev/zero", "\(dir)/zero.key", ["--kid", "a"], true))
        try fm.createSymbolicLink(atPath: "\(dir)/link.key", withDestinationPath: "\(dir)/a.key")
        cases.append(("a symlink to the 0600 key", "\(dir)/link.key", [], false))
        cases.append(("two keys in one file", try file("two.key", key + String(contentsOfFile: "\(dir)/b.key", encoding: .utf8)), [], false))
        cases.append(("the key then garbage", try file("tail.key", key + "garbage\n"), [], false))
        cases.append(("a 1 MB key file", try file("big.key", key + String(repeating: "A", count: 1 << 20)), [], true))

        for (label, path, extra, refused) in cases {
            try? fm.removeItem(atPath: "\(dir)/out.jws")
            let clock = ContinuousClock()
            let start = clock.now
            let run = try await PinCheckBinary.run(["sign-log-list", "--key", path] + extra + ["--in", "\(dir)/doc.json", "--out", "\(dir)/out.jws"])
            let elapsed = clock.now - start
            print("PROBE key \(label): exit \(run.status) in \(elapsed): \(run.stdout)\(run.stderr)")
            #expect(elapsed < .seconds(20), "\(label)")
            #expect(!run.stdout.contains(body.prefix(20)) && !run.stderr.contains(body.prefix(20)), "\(label): the key printed")
            #expect(!run.stderr.contains("PRIVATE KEY"), "\(label)")
            if refused {
                #expect(run.status == 64, "\(label): \(run.stderr)")
                #expect(!fm.fileExists(atPath: "\(dir)/out.jws"), "\(label): signed")
            }
            if label == "a symlink to /dev/zero" {
                // It is a character device, as /dev/zero itself is said to be; not "standard input or a pipe".
                #expect(!run.stderr.contains("standard input or a pipe"), "\(label): \(run.stderr)")
            }
        }
        // A key from a pipe that never ends (a FIFO fed by a writer that never stops): refused at its size, no hang.
        let endless = String(repeating: "A", count: 4 << 20)
        let piped = try await PinCheckBinary.binary().run(
            ["sign-log-list", "--key", "/dev/stdin", "--kid", "a", "--in", "\(dir)/doc.json", "--out", "\(dir)/out.jws"], stdin: endless)
        #expect(piped.status == 64, "\(piped.stderr)")
    }

    // MARK: Output files

    /// `--out` naming an input, the signing key, a FIFO or a device: a slip must not destroy the signing key, the
    /// document or the list, and an output that cannot be written is exit 73 (the help), never "signed".
    @Test func outputFilesThatAreInputsOrNotFiles() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fm = FileManager.default
        try Data(Self.document().utf8).write(to: URL(fileURLWithPath: "\(dir)/doc.json"))
        let key = try String(contentsOfFile: "\(dir)/a.key", encoding: .utf8)

        // --out the signing key.
        let overKey = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/doc.json", "--out", "\(dir)/a.key"])
        print("PROBE --out the key: exit \(overKey.status) \(overKey.stdout)\(overKey.stderr)")
        #expect(try String(contentsOfFile: "\(dir)/a.key", encoding: .utf8) == key, "sign-log-list --out KEY overwrote the signing key")
        try key.write(toFile: "\(dir)/a.key", atomically: true, encoding: .utf8)
        try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: "\(dir)/a.key")

        // --out the input document.
        let document = try String(contentsOfFile: "\(dir)/doc.json", encoding: .utf8)
        let overIn = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/doc.json", "--out", "\(dir)/doc.json"])
        print("PROBE --out the input: exit \(overIn.status) \(overIn.stdout)\(overIn.stderr)")
        #expect(try String(contentsOfFile: "\(dir)/doc.json", encoding: .utf8) == document, "sign-log-list --out IN overwrote the document")
        try document.write(toFile: "\(dir)/doc.json", atomically: true, encoding: .utf8)

        // log-list-document --out the list.
        try Self.listText.write(toFile: "\(dir)/list.json", atomically: true, encoding: .utf8)
        let overList = try await PinCheckBinary.run([
            "log-list-document", "--list", "\(dir)/list.json", "--version", "1", "--audience", Self.audience, "--out", "\(dir)/list.json",
        ])
        print("PROBE log-list-document --out the list: exit \(overList.status) \(overList.stderr)")
        #expect(try String(contentsOfFile: "\(dir)/list.json", encoding: .utf8) == Self.listText, "log-list-document --out LIST overwrote the list")

        // --out a FIFO: written into (a reader gets the JWS) or refused; never replaced by a regular file.
        #expect(mkfifo("\(dir)/fifo", 0o600) == 0)
        let reader = open("\(dir)/fifo", O_RDONLY | O_NONBLOCK)  // a reader, so that a writer's open never blocks
        defer { close(reader) }
        let fifo = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/doc.json", "--out", "\(dir)/fifo"])
        let fifoType = try fm.attributesOfItem(atPath: "\(dir)/fifo")[.type] as? FileAttributeType
        print("PROBE --out a FIFO: exit \(fifo.status) \(fifo.stdout)\(fifo.stderr); now \(String(describing: fifoType))")
        #expect(fifoType != .typeRegular, "the FIFO was replaced by a regular file")

        // --out a character device that refuses writes (a private node like /dev/full, root only): exit 73, the
        // node left alone. Never run against /dev/full itself: the tool replaces what it names.
        if getuid() == 0, mknod("\(dir)/full", S_IFCHR | 0o666, dev_t(0x107)) == 0 {
            let full = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/doc.json", "--out", "\(dir)/full"])
            let type = try fm.attributesOfItem(atPath: "\(dir)/full")[.type] as? FileAttributeType
            print("PROBE --out a full device: exit \(full.status) \(full.stdout)\(full.stderr); now \(String(describing: type))")
            #expect(full.status == 73, "output that cannot be written reported as: \(full.stdout)")
            #expect(type == .typeCharacterSpecial, "the device node was replaced by a regular file")
            let made = try await PinCheckBinary.run([
                "log-list-document", "--list", PinCheckLogListTests.testList, "--version", "1", "--audience", Self.audience, "--out", "\(dir)/full",
            ])
            print("PROBE log-list-document --out a full device: exit \(made.status) \(made.stderr)")
            #expect(made.status == 73)
        }

        // --out a directory: 73, and a message a user can act on.
        let directory = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/doc.json", "--out", dir])
        print("PROBE --out a directory: exit \(directory.status) \(directory.stderr)")
        #expect(directory.status == 73)
        #expect(!directory.stderr.contains("NSCocoaErrorDomain"), "\(directory.stderr)")
    }

    // MARK: Terminal output

    /// An audience, list names and a kid with control characters: every line printed is printable.
    @Test func controlCharactersNeverReachTheTerminal() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let evil = "com.example.shop\u{1B}]0;pwned\u{07}\u{1B}[2J\r\nforged: ok\u{85}\u{2028}"
        var outputs: [(String, BuiltBinary.Outcome)] = []
        outputs.append(("log-list-document --audience", try await PinCheckBinary.run([
            "log-list-document", "--list", PinCheckLogListTests.testList, "--version", "1", "--audience", evil, "--out", "\(dir)/evil.json",
        ])))
        try Data(Self.document().utf8).write(to: URL(fileURLWithPath: "\(dir)/doc.json"))
        _ = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/doc.json", "--out", "\(dir)/doc.jws"])
        outputs.append(("verify-log-list --audience", try await PinCheckBinary.run([
            "verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", evil, "\(dir)/doc.jws",
        ])))
        outputs.append(("sign-log-list --kid", try await PinCheckBinary.run([
            "sign-log-list", "--key", "\(dir)/a.key", "--kid", evil, "--in", "\(dir)/doc.json", "--out", "\(dir)/kid.jws",
        ])))
        if FileManager.default.fileExists(atPath: "\(dir)/kid.jws") {
            outputs.append(("verify-log-list of an evil kid", try await PinCheckBinary.run([
                "verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", Self.audience, "\(dir)/kid.jws",
            ])))
        }
        let escaped = #"\u001b]0;x\u0007\u001b[2J\r\nforged\u0085\u2028"#
        let names = Self.listText
            .replacingOccurrences(of: #""ShopKit Test Operator One""#, with: #""One \#(escaped)""#)
            .replacingOccurrences(of: #""ShopKit Test Log A""#, with: #""A \#(escaped)""#)
            .replacingOccurrences(of: #""version": "1.0""#, with: #""version": "1.0 \#(escaped)""#)
        try names.write(toFile: "\(dir)/names.json", atomically: true, encoding: .utf8)
        outputs.append(("log-list with odd names", try await PinCheckBinary.run(["log-list", "\(dir)/names.json"])))
        let badKey = names.replacingOccurrences(of: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgoAm", with: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgoAn")
        try badKey.write(toFile: "\(dir)/names-bad.json", atomically: true, encoding: .utf8)
        outputs.append(("log-list with odd names and a bad key", try await PinCheckBinary.run(["log-list", "\(dir)/names-bad.json"])))
        _ = try await PinCheckBinary.run(["log-list-document", "--list", "\(dir)/names.json", "--version", "1", "--audience", Self.audience, "--out", "\(dir)/names.doc"])
        outputs.append(("sign-log-list with odd names", try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/names.doc", "--out", "\(dir)/names.jws"])))
        outputs.append(("verify-log-list with odd names", try await PinCheckBinary.run([
            "verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", Self.audience, "\(dir)/names.jws",
        ])))
        for (label, outcome) in outputs {
            print("PROBE terminal \(label): exit \(outcome.status) \(outcome.stdout.debugDescription) \(outcome.stderr.debugDescription)")
            let bad = Self.controlCharacters(outcome.stdout + outcome.stderr)
            #expect(bad.isEmpty, "\(label): \(bad.map { String($0.value, radix: 16) })")
        }
    }

    // MARK: Exit codes and bounds

    /// Exit codes as each command's --help gives them, and bounded time on large inputs.
    @Test func exitCodesAndLargeInputs() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let list = PinCheckLogListTests.testList
        let usage: [[String]] = [
            ["log-list", "\(dir)/missing.json"],
            ["log-list", dir],
            ["log-list", "/dev/zero"],
            ["log-list-document", "--list", list, "--version", "1", "--audience", Self.audience, "--valid-days", "0"],
            ["log-list-document", "--list", list, "--version", "1", "--audience", Self.audience, "--valid-days", "-1"],
            ["log-list-document", "--list", list, "--version", "1", "--audience", Self.audience, "--valid-days", "181"],
            ["log-list-document", "--list", list, "--version", "9007199254740992", "--audience", Self.audience],
            ["log-list-document", "--list", list, "--version", "1", "--audience", ""],
            ["verify-log-list", "--pubkey", "\(dir)/a.pub", "--audience", Self.audience, "\(dir)/none.jws"],
            ["verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/a.pub", "--audience", Self.audience, "\(dir)/none.jws"],
            ["verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "", "\(dir)/none.jws"],
            ["verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--current-version", "-1", "--audience", Self.audience, "\(dir)/none.jws"],
        ]
        for arguments in usage {
            let run = try await PinCheckBinary.run(arguments + ["--out", "\(dir)/o.json"].filter { _ in arguments[0] == "log-list-document" })
            print("PROBE exit \(arguments.dropFirst(0).joined(separator: " ")): \(run.status) \(run.stderr.split(separator: "\n").first ?? "")")
            #expect(run.status == 64, "\(arguments): \(run.status) \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/o.json"), "\(arguments): written")
        }
        // A 20 MB list (one huge description): done in bounded time, either way.
        let huge = Self.listText.replacingOccurrences(of: #""ShopKit Test Log A""#, with: "\"" + String(repeating: "x", count: 20 << 20) + "\"")
        try huge.write(toFile: "\(dir)/huge.json", atomically: true, encoding: .utf8)
        let clock = ContinuousClock()
        var start = clock.now
        let big = try await PinCheckBinary.run(["log-list", "\(dir)/huge.json"])
        print("PROBE 20 MB list: exit \(big.status) in \(clock.now - start) \(big.stderr.prefix(200))")
        #expect(clock.now - start < .seconds(30))
        // 20,000 previous operators on one log (a 1 MB list).
        var entries: [String] = []
        for index in 0..<20_000 {
            let end = Self.ts(Date(timeIntervalSince1970: 1_600_000_000 + Double(index)))
            entries.append(#"{"name": "Op \#(index)", "end_time": "\#(end)"}"#)
        }
        let many = Self.listText.replacingOccurrences(  // on log A only
            of: #""url": "https://ct.shopkit.test/log-a/","#,
            with: #""url": "https://ct.shopkit.test/log-a/", "previous_operators": [\#(entries.joined(separator: ","))],"#)
        try many.write(toFile: "\(dir)/many.json", atomically: true, encoding: .utf8)
        start = clock.now
        let manyRun = try await PinCheckBinary.run(["log-list", "\(dir)/many.json"])
        let elapsed = clock.now - start
        print("PROBE \(many.utf8.count)-byte list, 20,000 previous operators on one log: exit \(manyRun.status) in \(elapsed)")
        #expect(elapsed < .seconds(10), "a 1 MB list took \(elapsed)")
    }
}

extension Data {
    fileprivate func replacing(_ old: Data, with new: Data) -> Data {
        guard let range = range(of: old) else { return self }
        var copy = self
        copy.replaceSubrange(range, with: new)
        return copy
    }
}

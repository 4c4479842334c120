import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// `pin-check log-list`, `log-list-document`, `sign-log-list` and `verify-log-list` through the built binary: a
/// publisher's way from a v3 log list to a signed document an app's `CTLogListUpdates` takes, with keys made by
/// the openssl command and the test CT logs' list (`TestCerts/ct/test-log-list.json`).
@Suite("PinCheck log lists", .timeLimit(.minutes(3)))
struct PinCheckLogListTests {
    static let testList = TestCertificates.ctFile("test-log-list.json").path
    static let audience = "com.example.shop"

    /// `test-log-list.json` with `change` applied to its JSON object, written to `name` in `directory`.
    static func list(in directory: String, _ name: String, _ change: (inout [String: Any]) -> Void) throws -> String {
        var object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: testList))) as! [String: Any]
        change(&object)
        let path = "\(directory)/\(name)"
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The first log of the first operator of `object`, changed by `change`.
    static func firstLog(_ object: inout [String: Any], _ change: (inout [String: Any]) -> Void) {
        var operators = object["operators"] as! [[String: Any]]
        var logs = operators[0]["logs"] as! [[String: Any]]
        change(&logs[0])
        operators[0]["logs"] = logs
        object["operators"] = operators
    }

    @Test func aListIsCheckedAsAppsLoadItAndSummarized() async throws {
        let checked = try await PinCheckBinary.run(["log-list", Self.testList])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains("log list of 2026-11-01T00:00:00Z, version 1.0: 3 operators, 4 logs (4 usable)"))

        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A key OpenSSL cannot read: the list's own reader takes it (base64), OpenSSL's store does not; named.
        let badKey = try Self.list(in: dir, "bad-key.json") { Self.firstLog(&$0) { $0["key"] = Data("not a key".utf8).base64EncodedString() } }
        let refused = try await PinCheckBinary.run(["log-list", badKey])
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("log \"ShopKit Test Log A\": its key does not load as a CT log"), "\(refused.stderr)")
        // A log_id that is not its key's SHA-256.
        let badID = try Self.list(in: dir, "bad-id.json") { Self.firstLog(&$0) { $0["log_id"] = Data(repeating: 7, count: 32).base64EncodedString() } }
        let wrongID = try await PinCheckBinary.run(["log-list", badID])
        #expect(wrongID.status == 65)
        #expect(wrongID.stderr.contains("log \"ShopKit Test Log A\""), "\(wrongID.stderr)")
        // A mistake the reader finds names its field.
        let badState = try Self.list(in: dir, "bad-state.json") { Self.firstLog(&$0) { $0["state"] = ["frozen": ["timestamp": "2025-01-01T00:00:00Z"]] } }
        let unknownState = try await PinCheckBinary.run(["log-list", badState])
        #expect(unknownState.status == 65)
        #expect(unknownState.stderr.contains("operators[0].logs[0].state: unknown state \"frozen\""), "\(unknownState.stderr)")
        // Stale: valid, with a warning.
        let old = try Self.list(in: dir, "old.json") { $0["log_list_timestamp"] = "2020-01-01T00:00:00Z" }
        let stale = try await PinCheckBinary.run(["log-list", old])
        #expect(stale.status == 0)
        #expect(stale.stderr.contains("warning: the log list is dated 2020-01-01T00:00:00Z") && stale.stderr.contains("report-only"))
        #expect(try await PinCheckBinary.run(["log-list", "\(dir)/missing.json"]).status == 64)
        // A document around it is made and signed with the same warning (apps take it, and act report-only).
        let staleDocument = try await PinCheckBinary.run([
            "log-list-document", "--list", old, "--version", "1", "--audience", Self.audience, "--out", "\(dir)/old-doc.json",
        ])
        #expect(staleDocument.status == 0 && staleDocument.stderr.contains("warning: the log list is dated 2020-01-01"))
        let staleSigned = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/old-doc.json", "--out", "\(dir)/old.jws"])
        #expect(staleSigned.status == 0 && staleSigned.stderr.contains("warning: the log list is dated 2020-01-01"), "\(staleSigned.stderr)")
    }

    /// Made, signed and verified with the tool, the document is what the app's own verifier takes, carrying the
    /// list exactly as given.
    @Test func aDocumentMadeSignedAndVerifiedIsWhatTheAppTakes() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let made = try await PinCheckBinary.run([
            "log-list-document", "--list", Self.testList, "--version", "7", "--audience", Self.audience, "--out", "\(dir)/ct.json",
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let signed = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/ct.json", "--out", "\(dir)/ct.jws"])
        #expect(signed.status == 0, "\(signed.stderr)")
        #expect(signed.stdout.contains("version 7, 4 logs") && signed.stdout.contains("\"a\""))
        #expect(!signed.stdout.contains("PRIVATE") && !signed.stderr.contains("PRIVATE"))

        let verified = try await PinCheckBinary.run([
            "verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "b=\(dir)/b.pub", "--audience", Self.audience, "\(dir)/ct.jws",
        ])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("valid, version 7, signed by \"a\""))
        #expect(verified.stdout.contains("3 operators, 4 logs (4 usable)"))

        // The app's verifier, with the same public keys, takes it, and its list is the given one.
        let keys = ["a": try String(contentsOfFile: "\(dir)/a.pub", encoding: .utf8), "b": try String(contentsOfFile: "\(dir)/b.pub", encoding: .utf8)]
        let verifier = try PinSetVerifier(publicKeys: keys, audience: Self.audience)
        let jws = try String(contentsOfFile: "\(dir)/ct.jws", encoding: .utf8).trimmingCharacters(in: .newlines)
        let document = try verifier.verifyLogList(jws, currentVersion: 6, now: Date())
        #expect(document.version == 7)
        #expect(document.logList == (try CTLogList(json: Data(contentsOf: URL(fileURLWithPath: Self.testList)))))

        // Not above the version the app has: refused, naming the log-list document.
        let rollback = try await PinCheckBinary.run([
            "verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--current-version", "7", "--audience", Self.audience, "\(dir)/ct.jws",
        ])
        #expect(rollback.status == 65)
        #expect(rollback.stderr.contains("the CT log-list document has version 7, not above the version in force (7)"), "\(rollback.stderr)")
        // Another app's audience.
        let otherApp = try await PinCheckBinary.run(["verify-log-list", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.other", "\(dir)/ct.jws"])
        #expect(otherApp.status == 65)
    }

    /// Neither kind of document is taken, signed or verified as the other.
    @Test func pinSetAndLogListDocumentsNeverPassForEachOther() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await PinCheckBinary.run(["log-list-document", "--list", Self.testList, "--version", "1", "--audience", Self.audience, "--out", "\(dir)/ct.json"])
        #expect(try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/ct.json", "--out", "\(dir)/ct.jws"]).status == 0)
        #expect(try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"]).status == 0)
        let keys = ["--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", Self.audience]

        let logListAsPins = try await PinCheckBinary.run(["verify-pins"] + keys + ["\(dir)/ct.jws"])
        #expect(logListAsPins.status == 65)
        #expect(logListAsPins.stderr.contains("it is a CT log-list document, never read as pins"), "\(logListAsPins.stderr)")
        let pinsAsLogList = try await PinCheckBinary.run(["verify-log-list"] + keys + ["\(dir)/pins.jws"])
        #expect(pinsAsLogList.status == 65)
        #expect(pinsAsLogList.stderr.contains("this is a pin-set document, never read as a log list"), "\(pinsAsLogList.stderr)")

        let signPinsALogList = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/ct.json", "--out", "\(dir)/x.jws"])
        #expect(signPinsALogList.status == 65)
        let signLogListPins = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/x.jws"])
        #expect(signLogListPins.status == 65)
        #expect(signLogListPins.stderr.contains("unknown field \"pinSets\""), "\(signLogListPins.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/x.jws"))
    }

    /// What every app would refuse is not signed: nothing is written, and the message says why.
    @Test func whatAppsRefuseIsNotSigned() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let list = try Data(contentsOf: URL(fileURLWithPath: Self.testList))
        func document(_ name: String, issuedAt: Date, expiresAt: Date, audience: String? = Self.audience, logList: Data = list) throws -> String {
            let json = try CTLogListDocument.json(version: 2, issuedAt: issuedAt, expiresAt: expiresAt, audience: audience, logList: logList)
            try json.write(toFile: "\(dir)/\(name)", atomically: true, encoding: .utf8)
            return "\(dir)/\(name)"
        }
        let now = Date()
        let listDate = try CTLogList(json: list).timestamp
        let cases: [(path: String, words: String)] = [
            (try document("expired.json", issuedAt: listDate + 60, expiresAt: listDate + 120), "expired at"),
            (try document("long.json", issuedAt: now, expiresAt: now + 400 * 86_400), "apps accept at most"),
            (try document("future.json", issuedAt: now + 7 * 86_400, expiresAt: now + 9 * 86_400), "in the future"),
            (try document("no-audience.json", issuedAt: now, expiresAt: now + 86_400, audience: nil), "no \"audience\""),
            (try document(
                "bad-key.json", issuedAt: now, expiresAt: now + 86_400,
                logList: Data(contentsOf: URL(fileURLWithPath: Self.list(in: dir, "bad-key-list.json") {
                    Self.firstLog(&$0) { $0["key"] = Data("not a key".utf8).base64EncodedString() }
                }))), "its key does not load as a CT log"),
        ]
        for (path, words) in cases {
            let signed = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", path, "--out", "\(dir)/out.jws"])
            #expect(signed.status == 65, "\(path)")
            #expect(signed.stderr.contains(words), "\(path): \(signed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/out.jws"))
        }
        // The signing key's rules are sign-pins' rules.
        let ecdsa = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/ec.key", "--in", try document("ok.json", issuedAt: now, expiresAt: now + 86_400), "--out", "\(dir)/out.jws"])
        #expect(ecdsa.status == 64)
        #expect(ecdsa.stderr.contains("sign with an Ed25519 key"))
        // A file of two keys: which one signs would be OpenSSL's pick (the first); refused.
        let two = try String(contentsOfFile: "\(dir)/b.key", encoding: .utf8) + String(contentsOfFile: "\(dir)/a.key", encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: "\(dir)/two.key", contents: Data(two.utf8), attributes: [.posixPermissions: 0o600]))
        let twoKeys = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/two.key", "--kid", "a", "--in", "\(dir)/ok.json", "--out", "\(dir)/out.jws"])
        #expect(twoKeys.status == 64)
        #expect(twoKeys.stderr.contains("2 PEM blocks"), "\(twoKeys.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: "\(dir)/a.key")
        let shared = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/ok.json", "--out", "\(dir)/out.jws"])
        #expect(shared.status == 64)
        #expect(shared.stderr.contains("lets other users read the signing key"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/out.jws"))

        // A bad list never becomes a document either.
        let badList = try Self.list(in: dir, "bad-state.json") { Self.firstLog(&$0) { $0["state"] = ["frozen": ["timestamp": "2025-01-01T00:00:00Z"]] } }
        let made = try await PinCheckBinary.run(["log-list-document", "--list", badList, "--version", "1", "--audience", Self.audience, "--out", "\(dir)/doc.json"])
        #expect(made.status == 65)
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/doc.json"))
        #expect(try await PinCheckBinary.run(["log-list-document", "--list", Self.testList, "--version", "0", "--audience", Self.audience]).status == 64)
    }

    /// `--out` never destroys what the command reads (the signing key, the document, the list) and never replaces
    /// what is not a regular file; nothing is written, and the message says why.
    @Test func theOutputNeverReplacesAnInputOrSomethingThatIsNotAFile() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await PinCheckBinary.run(["log-list-document", "--list", Self.testList, "--version", "1", "--audience", Self.audience, "--out", "\(dir)/ct.json"])
        let key = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/a.key"))
        let document = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/ct.json"))
        for (command, out) in [("sign-log-list", "\(dir)/a.key"), ("sign-log-list", "\(dir)/ct.json"), ("sign-pins", "\(dir)/a.key")] {
            let input = command == "sign-pins" ? "\(dir)/pins.json" : "\(dir)/ct.json"
            let outcome = try await PinCheckBinary.run([command, "--key", "\(dir)/a.key", "--in", input, "--out", out])
            #expect(outcome.status == 64, "\(command) --out \(out): \(outcome.stderr)")
            #expect(outcome.stderr.contains("is the file --"), "\(outcome.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/a.key")) == key)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/ct.json")) == document)
        let overList = try await PinCheckBinary.run([
            "log-list-document", "--list", "\(dir)/ct.json", "--version", "1", "--audience", Self.audience, "--out", "\(dir)/ct.json",
        ])
        #expect(overList.status != 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/ct.json")) == document)

        // A directory and a pipe: 73, left as they are.
        #expect(mkfifo("\(dir)/fifo", 0o600) == 0)
        for out in [dir, "\(dir)/fifo"] {
            let outcome = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/ct.json", "--out", out])
            #expect(outcome.status == 73, "\(out): \(outcome.stderr)")
            #expect(outcome.stderr.contains("not a regular file"), "\(outcome.stderr)")
        }
        var fifo = stat()
        #expect(stat("\(dir)/fifo", &fifo) == 0 && (fifo.st_mode & S_IFMT) == S_IFIFO, "the pipe was replaced")
        // A directory that does not exist: 73, with the system's words.
        let missing = try await PinCheckBinary.run(["sign-log-list", "--key", "\(dir)/a.key", "--in", "\(dir)/ct.json", "--out", "\(dir)/no/such.jws"])
        #expect(missing.status == 73)
        #expect(missing.stderr.contains("No such file or directory"), "\(missing.stderr)")
        // Nothing left behind beside the outputs.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).allSatisfy { !$0.hasPrefix(".pin-check-out-") })
    }

    /// A list's version is the publisher's text: printed escaped, never as terminal controls.
    @Test func aListsVersionIsPrintedEscaped() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.list(in: dir, "odd-version.json") { $0["version"] = "1.0\u{1B}[2J\u{2028}forged" }
        let checked = try await PinCheckBinary.run(["log-list", path])
        #expect(checked.status == 0)
        #expect(checked.stdout.contains(#"version 1.0\u{1B}[2J\u{2028}forged: 3 operators"#), "\(checked.stdout)")
        #expect(!checked.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x2028 })
    }
}

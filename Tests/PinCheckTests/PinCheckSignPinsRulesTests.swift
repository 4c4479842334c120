import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Issue 38 through the built `pin-check`: what sign-pins refuses to sign, what verify-pins always shows, and the
/// strictness pins-document writes.
@Suite("PinCheck sign-pins rules", .timeLimit(.minutes(3)))
struct PinCheckSignPinsRulesTests {
    @Test func aDocumentWithADuplicateMemberIsNeitherSignedNorVerified() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // What jq shows a reviewer (the last reportOnly: false) is not what Foundation's decoder would apply.
        let now = Date()
        let json = """
            {"version": 5, "issuedAt": "\(PinSetDocument.timestamp(now - 60))", "expiresAt": "\(PinSetDocument.timestamp(now + 86_400))",
             "strictHosts": true, "audience": "com.example.shop",
             "pinSets": [{"host": "api.example.com", "reportOnly": true, "reportOnly": false,
                          "pins": ["\(TestCertificates.pin("leaf-localhost-ecdsa"))", "\(TestCertificates.pin("backup-intermediate"))"]}]}
            """
        try json.write(toFile: "\(dir)/dup.json", atomically: true, encoding: .utf8)
        let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/dup.json", "--out", "\(dir)/dup.jws"])
        #expect(signed.status == 65)
        #expect(signed.stderr.contains(#"member "reportOnly" appears twice in pinSets[0]"#), "\(signed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/dup.jws"))

        // Signed by other means, verify-pins refuses it as the app does.
        let key = try String(contentsOfFile: "\(dir)/a.key", encoding: .utf8)
        let signingKey = try OpenSSLKey.privateKey(pem: key)
        let jws = try CompactJWS.serialize(payload: Array(json.utf8), keyID: "a") { try signingKey.signEd25519($0) }
        try jws.write(toFile: "\(dir)/dup.jws", atomically: true, encoding: .utf8)
        let verified = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.shop", "\(dir)/dup.jws"])
        #expect(verified.status == 65)
        #expect(verified.stderr.contains("appears twice"), "\(verified.stderr)")
    }

    @Test func verifyPinsAlwaysShowsStrictnessAndEverySetsExpiration() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"])
        #expect(signed.status == 0, "\(signed.stderr)")
        let verified = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.shop", "\(dir)/pins.jws"])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("strictHosts: false"), "\(verified.stdout)")
        #expect(verified.stdout.contains("[api.example.com] enforced, no expiration"), "\(verified.stdout)")
    }

    @Test func pinsDocumentNeverDefaultsToLaxAndCarriesThePreviousStrictness() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let context = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let server = try await LoopbackTLSServer.start(tlsContext: context)
        try TestCertificates.certificate("root").write(toFile: "\(dir)/root.pem", atomically: true, encoding: .utf8)
        try "localhost:\(server.port)\n".write(toFile: "\(dir)/hosts.txt", atomically: true, encoding: .utf8)
        func document(_ extra: [String]) async throws -> (BuiltBinary.Outcome, [String: Any]?) {
            let outcome = try await PinCheckBinary.run(
                ["pins-document", "--hosts-file", "\(dir)/hosts.txt", "--ca-file", "\(dir)/root.pem", "--version", "2", "--out", "\(dir)/out.json"] + extra)
            let object = outcome.status == 0
                ? try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/out.json"))) as? [String: Any] : nil
            try? FileManager.default.removeItem(atPath: "\(dir)/out.json")
            return (outcome, object)
        }
        let unsaid = try await document(["--audience", "com.example.shop"])
        #expect(unsaid.0.status == 64)
        #expect(unsaid.0.stderr.contains("--strict-hosts"), "\(unsaid.0.stderr)")

        #expect(try await document(["--strict-hosts", "--audience", "com.example.shop"]).1?["strictHosts"] as? Bool == true)
        #expect(try await document(["--no-strict-hosts", "--audience", "com.example.shop"]).1?["strictHosts"] as? Bool == false)
        // Both flags at once was taken, the last one winning: refused, so no document's strictness is a flag order.
        for flags in [["--strict-hosts", "--no-strict-hosts"], ["--no-strict-hosts", "--strict-hosts"]] {
            let both = try await document(flags + ["--audience", "com.example.shop"])
            #expect(both.0.status == 64, "\(flags): \(both.0.stderr)")
            #expect(both.0.stderr.contains("--strict-hosts") && both.0.stderr.contains("--no-strict-hosts"), "\(both.0.stderr)")
            #expect(both.1 == nil)
        }
        let noAudience = try await document(["--strict-hosts"])
        #expect(noAudience.0.status == 64)
        for timeout in ["0", "-1", "3601", "nan"] {
            let bad = try await document(["--strict-hosts", "--audience", "com.example.shop", "--timeout", timeout])
            #expect(bad.0.status == 64, "--timeout \(timeout): \(bad.0.stderr)")
        }
        #expect(noAudience.0.stderr.contains("--audience"), "\(noAudience.0.stderr)")

        let strictPrevious = #"{"version": 1, "issuedAt": "2026-01-01T00:00:00Z", "expiresAt": "2026-02-01T00:00:00Z", "strictHosts": true, "audience": "com.example.shop", "pinSets": [{"host": "localhost", "pins": ["\#(TestCertificates.pin("leaf-localhost-ecdsa"))", "\#(TestCertificates.pin("backup-intermediate"))"]}]}"#
        try strictPrevious.write(toFile: "\(dir)/previous.json", atomically: true, encoding: .utf8)
        let carried = try await document(["--previous", "\(dir)/previous.json"]).1
        #expect(carried?["strictHosts"] as? Bool == true)
        #expect(carried?["audience"] as? String == "com.example.shop")
        let relaxed = try await document(["--previous", "\(dir)/previous.json", "--no-strict-hosts"])
        #expect(relaxed.1?["strictHosts"] as? Bool == false)
        #expect(relaxed.0.stderr.contains("warning"))

        // Found by the adversarial review: a signed --previous carried its settings over unverified, so a forged
        // one (another key, a lax strictHosts, another app's audience) set the next document's.
        let now = Date()
        let fresh = """
            {"version": 1, "issuedAt": "\(PinSetDocument.timestamp(now - 60))", "expiresAt": "\(PinSetDocument.timestamp(now + 86_400))",
             "strictHosts": false, "audience": "com.attacker.app",
             "pinSets": [{"host": "localhost", "pins": ["\(TestCertificates.pin("leaf-localhost-ecdsa"))", "\(TestCertificates.pin("backup-intermediate"))"]}]}
            """
        try fresh.write(toFile: "\(dir)/fresh.json", atomically: true, encoding: .utf8)
        for (key, name) in [("a", "genuine"), ("stranger", "forged")] {
            let signed = try await PinCheckBinary.run(
                ["sign-pins", "--key", "\(dir)/\(key).key", "--kid", "a", "--in", "\(dir)/fresh.json", "--out", "\(dir)/\(name).jws"])
            #expect(signed.status == 0, "\(signed.stderr)")
        }
        let unchecked = try await document(["--previous", "\(dir)/forged.jws"])
        #expect(unchecked.0.status == 64)
        #expect(unchecked.0.stderr.contains("--pubkey"), "\(unchecked.0.stderr)")
        let forged = try await document(["--previous", "\(dir)/forged.jws", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub"])
        #expect(forged.0.status == 65, "\(forged.0.stderr)")
        #expect(forged.1 == nil)
        let genuine = try await document(["--previous", "\(dir)/genuine.jws", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub"])
        #expect(genuine.0.status == 0, "\(genuine.0.stderr)")
        #expect(genuine.1?["strictHosts"] as? Bool == false)
        #expect(genuine.1?["audience"] as? String == "com.attacker.app")
        try await server.shutdown()
    }

    @Test func signPinsRefusesAnExpiredDocumentAndAKeyOthersCanRead() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Date()
        let expired = """
            {"version": 4, "issuedAt": "\(PinSetDocument.timestamp(now - 7200))", "expiresAt": "\(PinSetDocument.timestamp(now - 60))",
             "strictHosts": true, "audience": "com.example.shop",
             "pinSets": [{"host": "api.example.com", "pins": ["\(TestCertificates.pin("leaf-localhost-ecdsa"))", "\(TestCertificates.pin("backup-intermediate"))"]}]}
            """
        try expired.write(toFile: "\(dir)/expired.json", atomically: true, encoding: .utf8)
        let late = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/expired.json", "--out", "\(dir)/x.jws"])
        #expect(late.status == 65)
        #expect(late.stderr.contains("expired at \(PinSetDocument.timestamp(now - 60))"), "\(late.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/x.jws"))

        for mode in [0o644, 0o640, 0o604] {
            #expect(chmod("\(dir)/a.key", mode_t(mode)) == 0)
            let exposed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/x.jws"])
            #expect(exposed.status == 64)
            #expect(exposed.stderr.contains("chmod 600 \(dir)/a.key"), "\(exposed.stderr)")
            #expect(!exposed.stderr.contains("PRIVATE"))
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/x.jws"))
        }
        #expect(chmod("\(dir)/a.key", 0o600) == 0)
        let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/x.jws"])
        #expect(signed.status == 0, "\(signed.stderr)")
    }

    /// Found by the adversarial review: sign-pins signed documents every app refuses, and re-decoded text.
    @Test func signPinsRefusesWhatEveryAppRefuses() async throws {
        let dir = try await PinCheckSignPinsTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Date()
        func document(issuedAt: Date, expiresAt: Date, audience: String = "com.example.shop") -> String {
            """
            {"version": 4, "issuedAt": "\(PinSetDocument.timestamp(issuedAt))", "expiresAt": "\(PinSetDocument.timestamp(expiresAt))",
             "strictHosts": true, "audience": "\(audience)",
             "pinSets": [{"host": "api.example.com", "pins": ["\(TestCertificates.pin("leaf-localhost-ecdsa"))", "\(TestCertificates.pin("backup-intermediate"))"]}]}
            """
        }
        let cases: [(String, [UInt8], [String], String)] = [
            ("long", Array(document(issuedAt: now - 60, expiresAt: now + 3650 * 86_400).utf8), [], "apps accept at most 180"),
            ("future", Array(document(issuedAt: now + 100 * 86_400, expiresAt: now + 120 * 86_400).utf8), [], "in the future"),
            ("latin1", Array(document(issuedAt: now - 60, expiresAt: now + 86_400).utf8).map { $0 == UInt8(ascii: "!") ? 0xFF : $0 }
                + [], [], ""),
            ("emptykid", Array(document(issuedAt: now - 60, expiresAt: now + 86_400).utf8), ["--kid", ""], "printable ASCII"),
            ("newlinekid", Array(document(issuedAt: now - 60, expiresAt: now + 86_400).utf8), ["--kid", "sig\nning"], "printable ASCII"),
        ]
        for (name, bytes, extra, message) in cases {
            var bytes = bytes
            if name == "latin1" {
                // A raw 0xFF inside the audience: not UTF-8.
                let text = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "com.example.shop", with: "com.example.shopX")
                bytes = Array(text.utf8).map { $0 == UInt8(ascii: "X") ? 0xFF : $0 }
            }
            FileManager.default.createFile(atPath: "\(dir)/\(name).json", contents: Data(bytes))
            let outcome = try await PinCheckBinary.run(
                ["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/\(name).json", "--out", "\(dir)/\(name).jws"] + extra)
            #expect(outcome.status == (name.hasSuffix("kid") ? 64 : 65), "\(name): \(outcome.stderr)")
            #expect(outcome.stderr.contains(name == "latin1" ? "not UTF-8" : message), "\(name): \(outcome.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/\(name).jws"), "\(name)")
        }
    }
}

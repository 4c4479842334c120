import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// `pin-check sign-pins` and `verify-pins` through the built binary, with keys made by the openssl command.
@Suite("PinCheck sign-pins and verify-pins", .timeLimit(.minutes(3)))
struct PinCheckSignPinsTests {
    static let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))

    /// A directory with signing keys `a` and `b` (and their .pub) and a valid pins.json.
    static func workspace() async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sign-pins-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in ["a", "b", "stranger"] {
            #expect(try await openssl.run(["genpkey", "-algorithm", "ed25519", "-out", "\(directory)/\(name).key"]).status == 0)
            #expect(try await openssl.run(["pkey", "-in", "\(directory)/\(name).key", "-pubout", "-out", "\(directory)/\(name).pub"]).status == 0)
        }
        #expect(try await openssl.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(directory)/ec.key"]).status == 0)
        let now = Date()
        let json = """
            {"version": 4, "issuedAt": "\(PinSetDocument.timestamp(now - 60))", "expiresAt": "\(PinSetDocument.timestamp(now + 86_400))",
             "audience": "com.example.shop",
             "pinSets": [{"host": "api.example.com", "pins": ["\(TestCertificates.pin("leaf-localhost-ecdsa"))", "\(TestCertificates.pin("backup-intermediate"))"]}]}
            """
        try json.write(toFile: "\(directory)/pins.json", atomically: true, encoding: .utf8)
        return directory
    }

    @Test func signThenVerifyAsTheAppWould() async throws {
        let dir = try await Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws"])
        #expect(signed.status == 0, "\(signed.stderr)")
        #expect(signed.stdout.contains("version 4") && signed.stdout.contains("\"a\""))
        #expect(!signed.stdout.contains("PRIVATE") && !signed.stderr.contains("PRIVATE"))

        let verified = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "b=\(dir)/b.pub", "--audience", "com.example.shop", "\(dir)/pins.jws"])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("valid, version 4, signed by \"a\""))
        #expect(verified.stdout.contains("[api.example.com]"))
        #expect(verified.stdout.contains(TestCertificates.pin("backup-intermediate").description))

        // Not above the version in force: refused, exit 65.
        let rollback = try await PinCheckBinary.run([
            "verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--current-version", "4", "--audience", "com.example.shop", "\(dir)/pins.jws",
        ])
        #expect(rollback.status == 65)
        #expect(rollback.stderr.contains("not above the version in force"))
    }

    @Test func aDocumentSignedByAKeyTheAppDoesNotTrustIsRefused() async throws {
        let dir = try await Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let signed = try await PinCheckBinary.run([
            "sign-pins", "--key", "\(dir)/stranger.key", "--kid", "a", "--in", "\(dir)/pins.json", "--out", "\(dir)/pins.jws",
        ])
        #expect(signed.status == 0)
        let verified = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.shop", "\(dir)/pins.jws"])
        #expect(verified.status == 65)
        #expect(verified.stderr.contains("does not verify under key \"a\""))
    }

    @Test func invalidInputsAreRefusedBeforeSigning() async throws {
        let dir = try await Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try #"{"version": 1, "issuedAt": "2027-01-01T00:00:00Z", "expiresAt": "2027-02-01T00:00:00Z", "pinSets": [], "pin": 1}"#
            .write(toFile: "\(dir)/bad.json", atomically: true, encoding: .utf8)
        let bad = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/bad.json", "--out", "\(dir)/bad.jws"])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("unknown field \"pin\""))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/bad.jws"))

        let ecdsa = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/ec.key", "--in", "\(dir)/pins.json", "--out", "\(dir)/x.jws"])
        #expect(ecdsa.status == 64)
        #expect(ecdsa.stderr.contains("sign with an Ed25519 key"))

        let oneKey = try await PinCheckBinary.run(["verify-pins", "--pubkey", "\(dir)/a.pub", "--audience", "com.example.shop", "\(dir)/pins.json"])
        #expect(oneKey.status == 64)
        #expect(oneKey.stderr.contains("give the current signing key and a backup"))
    }

    @Test func pinsDocumentRefusesAHostItCannotVerify() async throws {
        let dir = try await Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let closed = try BoundClosedPort()
        defer { closed.release() }
        try "127.0.0.1:\(closed.port)\n".write(toFile: "\(dir)/hosts.txt", atomically: true, encoding: .utf8)
        let outcome = try await PinCheckBinary.run([
            "pins-document", "--hosts-file", "\(dir)/hosts.txt", "--version", "1", "--strict-hosts", "--audience", "com.example.shop", "--out", "\(dir)/out.json",
        ])
        #expect(outcome.status == 65)
        #expect(outcome.stderr.contains("127.0.0.1:\(closed.port) is connect-failed"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/out.json"))
    }

    @Test func aServerIsCheckedAgainstTheHostsPinsInASignedDocument() async throws {
        let dir = try await Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let context = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        let server = try await LoopbackTLSServer.start(tlsContext: context)
        try TestCertificates.certificate("root").write(toFile: "\(dir)/root.pem", atomically: true, encoding: .utf8)
        let now = Date()
        for (name, pins) in [("matching", ["leaf-localhost-ecdsa", "backup-intermediate"]), ("other", ["other-root", "other-intermediate"])] {
            let json = """
                {"version": 2, "issuedAt": "\(PinSetDocument.timestamp(now - 60))", "expiresAt": "\(PinSetDocument.timestamp(now + 3600))",
                 "audience": "com.example.shop",
                 "pinSets": [{"host": "localhost", "pins": [\(pins.map { "\"\(TestCertificates.pin($0))\"" }.joined(separator: ","))]}]}
                """
            try json.write(toFile: "\(dir)/\(name).json", atomically: true, encoding: .utf8)
            let signed = try await PinCheckBinary.run(["sign-pins", "--key", "\(dir)/a.key", "--in", "\(dir)/\(name).json", "--out", "\(dir)/\(name).jws"])
            #expect(signed.status == 0)
        }
        func check(_ name: String) async throws -> PinCheckBinary.Outcome {
            try await PinCheckBinary.run([
                "127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", "\(dir)/root.pem",
                "--pins-document", "\(dir)/\(name).jws", "--pubkey", "\(dir)/a.pub", "--pubkey", "\(dir)/b.pub", "--audience", "com.example.shop",
                "--timeout", "60",
            ])
        }
        let matching = try await check("matching")
        #expect(matching.status == 0, "\(matching.stderr)")
        #expect(matching.stdout.contains(TestCertificates.pin("leaf-localhost-ecdsa").description))
        #expect(try await check("other").status == 1)
        try await server.shutdown()
    }
}

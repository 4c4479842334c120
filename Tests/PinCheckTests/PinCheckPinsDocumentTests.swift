import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// `pin-check HOST --pins-document DOC`: the document is checked exactly as `verify-pins` checks it (one check,
/// `verifiedDocument`), and its set for the host is applied as an app applies it (the TLS layer's own policy
/// evaluation): an expired set under strict hosts is refused, under lax hosts connects unpinned, a report-only set
/// connects with the mismatch as a warning. Real `openssl s_server`, the built binary, documents signed here (so
/// that documents `sign-pins` would refuse can be made).
@Suite(.timeLimit(.minutes(3))) struct PinCheckPinsDocumentTests {
    static let matching = ["leaf-localhost-ecdsa", "backup-intermediate"].map { TestCertificates.pin($0).description }
    static let other = ["other-root", "other-intermediate"].map { TestCertificates.pin($0).description }

    /// A directory with the signer's public keys (`current.pub`, `backup.pub`) and the test root.
    static func workspace(_ signer: DocumentSigner) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pins-document-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try signer.current.publicKeyPEM.write(toFile: "\(directory)/current.pub", atomically: true, encoding: .utf8)
        try signer.backup.publicKeyPEM.write(toFile: "\(directory)/backup.pub", atomically: true, encoding: .utf8)
        try TestCertificates.certificate("root").write(toFile: "\(directory)/root.pem", atomically: true, encoding: .utf8)
        return directory
    }

    /// pin-check against a fresh s_server with `document` (JSON, signed here) and verify-pins on the same file.
    static func check(
        _ document: String, _ extra: [String] = [], audience: String = DocumentSigner.audience
    ) async throws -> (check: PinCheckBinary.Outcome, verify: PinCheckBinary.Outcome) {
        let signer = try DocumentSigner()
        let dir = try workspace(signer)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try signer.sign(document, kid: "current").write(toFile: "\(dir)/doc.jws", atomically: true, encoding: .utf8)
        let keys = ["--pubkey", "\(dir)/current.pub", "--pubkey", "\(dir)/backup.pub"]
        let verify = try await PinCheckBinary.run(["verify-pins"] + keys + ["--audience", audience, "\(dir)/doc.jws"])
        let server = try await OpenSSLSServer.start(["-tls1_3"])
        defer { server.stop() }
        let check = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", "\(dir)/root.pem", "--timeout", "60",
             "--pins-document", "\(dir)/doc.jws", "--audience", audience] + keys + extra)
        return (check, verify)
    }

    static func document(
        version: Int = 1, issuedAt: Date = Date() - 60, expiresAt: Date = Date() + 86_400,
        audience: String = DocumentSigner.audience, strict: Bool = true, set: [String: Any]
    ) -> String {
        let object: [String: Any] = [
            "version": version, "issuedAt": PinSetDocument.timestamp(issuedAt),
            "expiresAt": PinSetDocument.timestamp(expiresAt), "audience": audience, "strictHosts": strict,
            "pinSets": [set],
        ]
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static let now = Date()

    /// Documents every app refuses are refused by `pin-check --pins-document` too, exit 65, with verify-pins' words.
    @Test(arguments: [
        ("expired", PinCheckPinsDocumentTests.document(issuedAt: PinCheckPinsDocumentTests.now - 40 * 86_400, expiresAt: PinCheckPinsDocumentTests.now - 86_400, set: ["host": "localhost", "pins": PinCheckPinsDocumentTests.matching])),
        ("issued in the future", PinCheckPinsDocumentTests.document(issuedAt: PinCheckPinsDocumentTests.now + 10 * 86_400, expiresAt: PinCheckPinsDocumentTests.now + 40 * 86_400, set: ["host": "localhost", "pins": PinCheckPinsDocumentTests.matching])),
        ("another app's audience", PinCheckPinsDocumentTests.document(audience: "com.example.other", set: ["host": "localhost", "pins": PinCheckPinsDocumentTests.matching])),
        ("valid 400 days", PinCheckPinsDocumentTests.document(expiresAt: PinCheckPinsDocumentTests.now + 400 * 86_400, set: ["host": "localhost", "pins": PinCheckPinsDocumentTests.matching])),
        ("version 5000", PinCheckPinsDocumentTests.document(version: 5000, set: ["host": "localhost", "pins": PinCheckPinsDocumentTests.matching])),
    ])
    func aDocumentAppsRefuseIsRefused(name: String, document: String) async throws {
        let (check, verify) = try await Self.check(document)
        #expect(verify.status == 65, "\(name): verify-pins \(verify.stdout) \(verify.stderr)")
        #expect(check.status == 65, "\(name): pin-check \(check.stdout) \(check.stderr)")
        // The same words as verify-pins: the text after the file name.
        let reason = try #require(verify.stderr.components(separatedBy: "doc.jws: ").last)
        #expect(check.stderr.contains("--pins-document ") && check.stderr.contains(reason), "\(name): \(check.stderr)")
        #expect(check.stdout.isEmpty, "\(name): nothing is checked: \(check.stdout)")
    }

    @Test func theAudienceIsRequired() async throws {
        let outcome = try await PinCheckBinary.run(
            ["localhost:1", "--pins-document", "/nonexistent.jws", "--pubkey", "a.pub", "--pubkey", "b.pub"])
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains("--audience"), "\(outcome.stderr)")
    }

    /// Strict document, the host's only set expired, pins matching: an app refuses the host (pinSetExpired).
    @Test func anExpiredSetUnderStrictHostsIsRefused() async throws {
        let set: [String: Any] = ["host": "localhost", "pins": Self.matching, "expiration": PinSetDocument.timestamp(Self.now - 86_400)]
        let (check, verify) = try await Self.check(Self.document(strict: true, set: set), ["--json"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(check.status == 1, "\(check.stdout) \(check.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "pin-mismatch")
        #expect((object["reason"] as? String)?.contains("expired") == true, "\(object["reason"] ?? "")")
        let label = try #require(object["pinsDocument"] as? [String: Any], "\(check.stdout)")
        #expect(label["enforcement"] as? String == "expired")
        #expect(label["strictHosts"] as? Bool == true)
        #expect(label["hostPattern"] as? String == "localhost")
    }

    /// Lax document, the host's only set expired, pins not matching: an app connects unpinned; the report says so.
    @Test func anExpiredSetUnderLaxHostsConnectsUnpinned() async throws {
        let set: [String: Any] = ["host": "localhost", "pins": Self.other, "expiration": PinSetDocument.timestamp(Self.now - 86_400)]
        let (check, verify) = try await Self.check(Self.document(strict: false, set: set))
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("Verdict: ok (exit 0)"), "\(check.stdout)")
        #expect(check.stdout.contains("set [localhost] expired"), "\(check.stdout)")
        #expect(check.stdout.contains("warning: the document's pin set localhost expired"), "\(check.stdout)")
        #expect(check.stdout.contains("unpinned"), "\(check.stdout)")
    }

    /// A report-only set whose pins do not match: an app connects and reports; a warning, exit 0, labelled.
    @Test func aReportOnlySetConnectsWithTheMismatchAsAWarning() async throws {
        let set: [String: Any] = ["host": "localhost", "pins": Self.other, "reportOnly": true]
        let (check, verify) = try await Self.check(Self.document(strict: false, set: set), ["--json"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "ok")
        let warnings = try #require(object["warnings"] as? [String])
        #expect(warnings.contains { $0.contains("report-only") && $0.contains("no pin matches") }, "\(warnings)")
        let label = try #require(object["pinsDocument"] as? [String: Any], "\(check.stdout)")
        #expect(label["enforcement"] as? String == "report-only")
    }

    /// The control: an enforced set whose pins do not match is a mismatch, exit 1, labelled enforced.
    @Test func anEnforcedSetThatDoesNotMatchIsAMismatch() async throws {
        let (check, _) = try await Self.check(Self.document(set: ["host": "localhost", "pins": Self.other]))
        #expect(check.status == 1, "\(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("set [localhost] enforced"), "\(check.stdout)")
        #expect(!check.stdout.contains("before the client certificate was sent"), "no --cert: \(check.stdout)")
    }
}

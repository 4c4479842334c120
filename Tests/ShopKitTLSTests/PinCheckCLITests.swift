import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// The built `pin-check` binary: usage errors, output formats, offline `--pem`, `--print-config`, `--demo`.
@Suite("PinCheck command")
struct PinCheckCLITests {
    static let leafPin = TestCertificates.pin("leaf-localhost-ecdsa").description
    static let backupPin = TestCertificates.pin("backup-intermediate").description

    /// Runs pin-check against a standard-chain server, trusting only the test root, checking `localhost`.
    func runAgainstServer(
        chain: [String] = ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"],
        key: String = "leaf-localhost-ecdsa", _ extra: [String]
    ) async throws -> PinCheckBinary.Outcome {
        let server = try await LoopbackTLSServer.start(chain: chain, key: key)
        let caFile = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        let outcome = try await PinCheckBinary.run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", caFile.path] + extra)
        try await server.shutdown()
        return outcome
    }

    @Test("usage errors exit 64 with a message saying what is wrong", arguments: [
        ([] as [String], "exactly one of"),
        (["[::1"], "missing ]"),
        (["localhost:99999"], "port"),
        (["localhost", "--pin", "sha256/abc"], "base64"),
        (["localhost", "--pin", "md5/AAAA"], "pin 'md5/AAAA'"),
        (["localhost", "--pins-file", "/nonexistent/pins"], "cannot read"),
        (["localhost", "--ca-file", "/nonexistent/ca.pem"], "cannot read"),
        (["localhost", "--print-config", "xml"], "print-config"),
        (["--pem", "/nonexistent.pem"], "cannot read"),
        (["localhost", "--json", "--print-config", "curl"], "leave out --json"),
    ])
    func usageErrors(arguments: [String], message: String) async throws {
        let outcome = try await PinCheckBinary.run(arguments)
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
    }

    @Test("--pem prints the pins of a PEM file offline, equal to the openssl CLI's")
    func pemPins() async throws {
        let path = TestCertificates.directory.appendingPathComponent("root.pem").path
        let outcome = try await PinCheckBinary.run(["--pem", path])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.hasPrefix(TestCertificates.pin("root").description))
        #expect(outcome.stdout.contains("RSA 2048"))
    }

    @Test("human output: TLS details, the chain with pins, the matched pin, exit 0")
    func humanOutputMatched() async throws {
        let outcome = try await runAgainstServer(["--pin", Self.leafPin, "--pin", Self.backupPin])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("TLS: TLSv1.3"))
        #expect(outcome.stdout.contains("ALPN http/1.1"))
        #expect(outcome.stdout.contains("SANs:      localhost, 127.0.0.1"))
        #expect(outcome.stdout.contains("key:       ECDSA P-256, signature ecdsa-with-SHA256"))
        #expect(outcome.stdout.contains("pin:       \(Self.leafPin)  <- matched"))
        #expect(outcome.stdout.contains("days left"))
        #expect(!outcome.stdout.contains("warning:"))
    }

    @Test("a single pin (curl syntax, from a pins file) warns that there is no backup")
    func singlePinWarning() async throws {
        let curlStyle = Self.leafPin.replacingOccurrences(of: "sha256/", with: "sha256//")
        let file = try PinCheckBinary.temporaryFile("# production\nleaf \(curlStyle)\n\n", suffix: ".txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try await runAgainstServer(["--pins-file", file.path])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("warning: only one pin given"))
    }

    @Test("a mismatch exits 1 and lists the chain's pins to paste")
    func mismatch() async throws {
        let other = TestCertificates.pin("other-leaf-localhost").description
        let outcome = try await runAgainstServer(["--pin", other, "--pin", Self.backupPin])
        #expect(outcome.status == 1)
        #expect(outcome.stdout.contains("Verdict: pin-mismatch"))
        #expect(outcome.stdout.contains(Self.leafPin))
        #expect(!outcome.stdout.contains("<- matched"))
    }

    @Test("an untrusted server exits 2 and shows the chain it sent and OpenSSL's reason; a pin never matches it")
    func untrustedShowsPresentedChain() async throws {
        let pin = TestCertificates.pin("other-leaf-localhost").description
        let outcome = try await runAgainstServer(
            chain: ["other-leaf-localhost", "other-intermediate"], key: "other-leaf-localhost",
            ["--pin", pin, "--json"])
        #expect(outcome.status == 2)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "untrusted")
        #expect((object["verifiedChain"] as? [Any])?.isEmpty == true)
        let presented = try #require(object["presentedChain"] as? [[String: Any]])
        #expect(presented.count == 2)
        #expect(presented.first?["pin"] as? String == pin)
        #expect(presented.allSatisfy { $0["matched"] as? Bool == false })
        #expect((object["reason"] as? String)?.contains("local issuer") == true)
        #expect(object["matchedPin"] is NSNull)
    }

    @Test("--json has the documented shape")
    func jsonShape() async throws {
        let outcome = try await runAgainstServer(["--json", "--pin", Self.leafPin, "--pin", Self.backupPin])
        #expect(outcome.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        for key in ["host", "port", "servername", "verdict", "tlsVersion", "cipher", "alpn", "verifiedChain",
                    "presentedChain", "configuredPins", "matchedPin", "warnings", "reason"] {
            #expect(object[key] != nil, "missing \(key)")
        }
        #expect(object["servername"] as? String == "localhost")
        #expect(object["matchedPin"] as? String == Self.leafPin)
        let leaf = try #require((object["verifiedChain"] as? [[String: Any]])?.first)
        #expect(leaf["matched"] as? Bool == true)
        #expect(leaf["key"] as? String == "ECDSA P-256")
        #expect((leaf["subjectAlternativeNames"] as? [String]) == ["localhost", "127.0.0.1"])
    }

    @Test("--print-config writes the leaf and intermediate pins in each format", arguments: PinConfigFormat.allCases)
    func printConfig(format: PinConfigFormat) async throws {
        let outcome = try await runAgainstServer(["--print-config", format.rawValue])
        #expect(outcome.status == 0)
        let intermediate = TestCertificates.pin("intermediate-2").description
        let root = TestCertificates.pin("root").description
        switch format {
        case .curl:
            #expect(outcome.stdout.contains("--pinnedpubkey 'sha256//\(Self.leafPin.dropFirst(7));sha256//"))
        case .android:
            #expect(outcome.stdout.contains("<pin digest=\"SHA-256\">\(Self.leafPin.dropFirst(7))</pin>"))
        case .shopkit, .okhttp:
            #expect(outcome.stdout.contains("\"\(Self.leafPin)\""))
            #expect(outcome.stdout.contains("\"\(intermediate)\""))
        }
        let config = try #require(outcome.stdout.components(separatedBy: "\(format.rawValue) configuration:").last)
        #expect(config.contains("backup pin"))
        #expect(config.contains(intermediate.dropFirst(7)))
        #expect(!config.contains(root.dropFirst(7)), "the root is not printed")
    }

    @Test("--demo passes on the leaf pin and the backup intermediate pin and shows a failure")
    func demo() async throws {
        let outcome = try await PinCheckBinary.run(["--demo"])
        #expect(outcome.status == 0, "stderr: \(outcome.stderr)")
        #expect(outcome.stdout.contains("\(Self.leafPin)  <- matched"))
        #expect(outcome.stdout.contains("\(Self.backupPin)  <- matched"))
        #expect(outcome.stdout.contains("Verdict: pin-mismatch"))
        #expect(outcome.stdout.contains("all three checks behaved as expected"))
    }
}

/// Pure parts of the inspector: address parsing, pin syntax, the expiry warning with an injected clock.
@Suite("PinCheck library")
struct PinCheckLibraryTests {
    @Test("HOST[:PORT] parsing", arguments: [
        ("example.com", "example.com", 443), ("example.com:8443", "example.com", 8443),
        ("[::1]:8443", "::1", 8443), ("[::1]", "::1", 443), ("::1", "::1", 443), ("127.0.0.1:1", "127.0.0.1", 1),
    ])
    func parsesAddresses(text: String, host: String, port: Int) throws {
        let address = try ServerAddress(parsing: text)
        #expect(address.host == host)
        #expect(address.port == port)
    }

    @Test("malformed addresses are refused", arguments: ["", "[::1", "[::1]x", "a:b:c", "host:0", "host:x", "ho st"])
    func refusesAddresses(text: String) {
        #expect(throws: ServerAddressError.self) { try ServerAddress(parsing: text) }
    }

    @Test("curl's sha256// syntax parses to the same pin")
    func curlPinSyntax() throws {
        let pin = TestCertificates.pin("root")
        #expect(try ServerInspector.parsePin(pin.description.replacingOccurrences(of: "sha256/", with: "sha256//")) == pin)
        #expect(try ServerInspector.parsePin(pin.description) == pin)
    }

    @Test("a leaf expiring within 30 days is warned about")
    func expiryWarning() async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        // The leaf is valid until 2045-12-31; the clock says ten days before that (OpenSSL's own check uses
        // the real time, so the chain still verifies).
        let almost = ISO8601DateFormatter().date(from: "2045-12-21T00:00:00Z")!
        let report = try await ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port), serverName: "localhost",
            pins: [TestCertificates.pin("leaf-localhost-ecdsa"), TestCertificates.pin("backup-intermediate")],
            trustAnchorsPEM: TestCertificates.certificate("root"), now: { almost }
        ).inspect()
        try await server.shutdown()
        #expect(report.verdict == .ok)
        #expect(report.verifiedChain.first?.daysLeft == 10)
        #expect(report.warnings.contains { $0.contains("expires within 30 days, in 10 days") })
    }
}

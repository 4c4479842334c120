import Foundation
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// What the built `pin-check` prints for each verdict, as text and as JSON, and `--print-config`.
@Suite("PinCheck output", .timeLimit(.minutes(3)))
struct PinCheckOutputTests {
    static let leafPin = TestCertificates.pin("leaf-localhost-ecdsa").description
    static let backupPin = TestCertificates.pin("backup-intermediate").description

    @Test("human output: TLS details, the chain with pins, the matched pin, exit 0")
    func humanOutputMatched() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(["--pin", Self.leafPin, "--pin", Self.backupPin])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("TLS: TLSv1.3"))
        #expect(outcome.stdout.contains("ALPN http/1.1"))
        #expect(outcome.stdout.contains("SANs:      localhost, 127.0.0.1"))
        #expect(outcome.stdout.contains("key:       ECDSA P-256, signature ecdsa-with-SHA256"))
        #expect(outcome.stdout.contains("pin:       \(Self.leafPin)  <- matched"))
        #expect(outcome.stdout.contains("days left"))
        #expect(!outcome.stdout.contains("warning:"))
        #expect(outcome.stderr.isEmpty)
    }

    @Test("a single pin (curl syntax, from a pins file) warns that there is no backup")
    func singlePinWarning() async throws {
        let curlStyle = Self.leafPin.replacingOccurrences(of: "sha256/", with: "sha256//")
        let file = try PinCheckBinary.temporaryFile("# production\nleaf \(curlStyle)\n\n", suffix: ".txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try await PinCheckBinary.runAgainstServer(["--pins-file", file.path])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("warning: only one pin given"))
    }

    @Test("a mismatch exits 1 and lists the pins to use under their own heading")
    func mismatch() async throws {
        let other = TestCertificates.pin("other-leaf-localhost").description
        let outcome = try await PinCheckBinary.runAgainstServer(["--pin", other, "--pin", Self.backupPin])
        #expect(outcome.status == 1)
        #expect(outcome.stdout.contains("Verdict: pin-mismatch"))
        #expect(!outcome.stdout.contains("<- matched"))
        let pinsToUse = try #require(outcome.section("Pins to use"), "stdout: \(outcome.stdout)")
        let intermediates = ["intermediate-2", "intermediate-1"].map { TestCertificates.pin($0).description }
        #expect(pinsToUse.contains("  \(Self.leafPin)  CN=localhost"))
        for pin in intermediates { #expect(pinsToUse.contains("  \(pin)  ")) }
        #expect(!pinsToUse.contains(TestCertificates.pin("root").description), "the root is not suggested")
        #expect(!pinsToUse.contains(other), "the given pins are not suggested")
        #expect(pinsToUse.contains("backup pin"))
    }

    @Test("an untrusted server exits 2 and shows the chain it sent and OpenSSL's reason; a pin never matches it")
    func untrustedShowsPresentedChain() async throws {
        let pin = TestCertificates.pin("other-leaf-localhost").description
        let outcome = try await PinCheckBinary.runAgainstServer(
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

    @Test("human output of an untrusted chain: the chain as sent, OpenSSL's reason, no match marked")
    func untrustedHumanOutput() async throws {
        let pin = TestCertificates.pin("other-leaf-localhost").description
        let outcome = try await PinCheckBinary.runAgainstServer(
            chain: ["other-leaf-localhost", "other-intermediate"], key: "other-leaf-localhost", ["--pin", pin])
        #expect(outcome.status == 2)
        let chain = try #require(outcome.section("Chain the server sent (NOT trusted; in the order sent):"))
        #expect(chain.contains("[0] CN=localhost"))
        #expect(chain.contains("[1] O=ShopKit Other,CN=ShopKit Unrelated Intermediate"))
        #expect(chain.contains("pin:       \(pin)\n"), "the pin is shown, not marked as matched")
        #expect(!outcome.stdout.contains("Verified chain"))
        #expect(!outcome.stdout.contains("<- matched"))
        let verdict = try #require(outcome.section("Verdict: untrusted (exit 2)"))
        #expect(verdict.contains("server certificate chain is not trusted: unable to get local issuer certificate (20)"))
    }

    @Test("a hostname mismatch says the chain leads to a trusted root and shows the certificate's SANs")
    func hostnameMismatchHumanOutput() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(
            chain: ["leaf-other-host", "intermediate-2", "intermediate-1"], key: "leaf-other-host", [])
        #expect(outcome.status == 3)
        #expect(!outcome.stdout.contains("NOT trusted"), "stdout: \(outcome.stdout)")
        let chain = try #require(outcome.section("Chain the server sent (it leads to a trusted root, but the name check failed"))
        #expect(chain.contains("SANs:      api.other.test"))
        let verdict = try #require(outcome.section("Verdict: hostname-mismatch (exit 3)"))
        #expect(verdict.contains("server certificate does not cover localhost"))
        #expect(verdict.contains("the chain leads to a trusted root, but localhost is not in the certificate's SANs: api.other.test"))
    }

    @Test("a certificate without SANs is reported as such (its CN is never used)")
    func hostnameMismatchWithoutSANs() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(
            chain: ["leaf-cn-only", "intermediate-2", "intermediate-1"], key: "leaf-cn-only", [])
        #expect(outcome.status == 3)
        let verdict = try #require(outcome.section("Verdict: hostname-mismatch (exit 3)"))
        #expect(verdict.contains("the certificate has no SANs (its CN is never used)"))
    }

    /// The name is reported in the one canonical form that OpenSSL checked and the pins were looked up under, in the
    /// header, JSON's `servername`, the pin report and `--print-config`. It was reported as typed (`LocalHost.`),
    /// unlike the name in the pin report beside it.
    @Test("the name checked is reported in its canonical form", arguments: ["LocalHost.", "LOCALHOST"])
    func canonicalServerName(spelling: String) async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let caFile = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        let arguments = [
            "127.0.0.1:\(server.port)", "--servername", spelling, "--ca-file", caFile.path, "--timeout", "60",
            "--pin", TestCertificates.pin("other-leaf-localhost").description,
            "--pin", TestCertificates.pin("other-intermediate").description,
        ]
        let json: PinCheckBinary.Outcome
        let text: PinCheckBinary.Outcome
        do {
            json = try await PinCheckBinary.run(arguments + ["--json"])
            text = try await PinCheckBinary.run(arguments + ["--print-config", "okhttp"])
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
        #expect(json.status == 1, "stdout: \(json.stdout)\nstderr: \(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["servername"] as? String == "localhost")
        #expect((object["reason"] as? String)?.contains("Certificate pinning failure for localhost") == true)
        #expect(text.status == 1)
        #expect(text.stdout.hasPrefix("localhost at 127.0.0.1:\(server.port)\n"), "\(text.stdout)")
        #expect(text.stdout.contains(".add(\"localhost\", \"\(Self.leafPin)\")"), "\(text.stdout)")
        #expect(!text.stdout.contains(spelling), "\(text.stdout)")
    }

    @Test("--json has the documented shape")
    func jsonShape() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(["--json", "--pin", Self.leafPin, "--pin", Self.backupPin])
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
        let outcome = try await PinCheckBinary.runAgainstServer(["--print-config", format.rawValue])
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
}

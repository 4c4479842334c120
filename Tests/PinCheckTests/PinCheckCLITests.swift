import Foundation
import ShopKitCore
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// The built `pin-check` binary: usage errors, offline `--pem`, `--demo`, IPv6 literals.
@Suite("PinCheck command", .timeLimit(.minutes(3)))
struct PinCheckCLITests {
    static let leafPin = TestCertificates.pin("leaf-localhost-ecdsa").description
    static let backupPin = TestCertificates.pin("backup-intermediate").description
    static let rootPEM = TestCertificates.directory.appendingPathComponent("root.pem").path

    @Test("usage errors exit 64 with exactly one line on stderr saying what is wrong", arguments: [
        ([] as [String], "give one of HOST[:PORT], --pem FILE or --demo"),
        (["[::1"], "missing ]"),
        (["localhost:99999"], "port"),
        (["localhost", "--pin", "sha256/abc"], "base64"),
        (["localhost", "--pin", "md5/AAAA"], "--pin md5/AAAA"),
        (["localhost", "--pins-file", "/nonexistent/pins"], "--pins-file /nonexistent/pins: cannot read"),
        (["localhost", "--ca-file", "/nonexistent/ca.pem"], "--ca-file /nonexistent/ca.pem: cannot read"),
        (["localhost", "--print-config", "xml"], "print-config"),
        (["localhost", "--frobnicate"], "--frobnicate"),
        (["localhost", "--timeout", "0"], "--timeout"),
        (["localhost", "--servername", ""], "--servername"),
        (["--pem", "/nonexistent.pem"], "--pem /nonexistent.pem: cannot read"),
        (["localhost", "--json", "--print-config", "curl"], "leave out --json"),
        (["--pem", PinCheckCLITests.rootPEM, "--pin", PinCheckCLITests.leafPin], "--pin does not apply to --pem"),
        (["--pem", PinCheckCLITests.rootPEM, "--json"], "--json does not apply to --pem"),
        (["--demo", "--json"], "--json does not apply to --demo"),
        (["--demo", "--timeout", "3"], "--timeout does not apply to --demo"),
        (["localhost", "--pem", PinCheckCLITests.rootPEM], "HOST[:PORT] and --pem exclude each other"),
        (["localhost", "--demo"], "HOST[:PORT] and --demo exclude each other"),
        (["--pem", PinCheckCLITests.rootPEM, "--demo"], "--pem and --demo exclude each other"),
    ])
    func usageErrors(arguments: [String], message: String) async throws {
        let outcome = try await PinCheckBinary.run(arguments)
        #expect(outcome.status == 64)
        #expect(outcome.stderr.hasPrefix("pin-check: "), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n", omittingEmptySubsequences: false).count == 2, "one line: \(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
    }

    @Test("--version prints the one version, ShopKitVersion.current, and exits 0")
    func version() async throws {
        let outcome = try await PinCheckBinary.run(["--version"])
        #expect(outcome.status == 0)
        #expect(outcome.stdout == ShopKitVersion.current + "\n")
        #expect(outcome.stderr.isEmpty)
    }

    @Test("--help exits 0 and documents every exit status")
    func help() async throws {
        let outcome = try await PinCheckBinary.run(["--help"])
        #expect(outcome.status == 0)
        for status in ["0 ", "1 ", "2 ", "3 ", "4 ", "64", "69", "70"] {
            #expect(outcome.stdout.contains("\n  \(status)  "), "exit \(status) in: \(outcome.stdout)")
        }
        #expect(outcome.stderr.isEmpty)
    }

    @Test("files that exist but do not parse are usage errors naming the file (and the line)", arguments: [
        ("--pins-file", "# prod\nleaf sha256/abc\n", "--pins-file", "line 2: "),
        ("--pins-file", "\(PinCheckCLITests.leafPin) \(PinCheckCLITests.backupPin)\n", "--pins-file", "two pins on one line"),
        ("--pins-file", "# nothing yet\n", "--pins-file", "holds no pin"),
        ("--ca-file", "not a certificate\n", "--ca-file", "trust anchors do not load"),
        ("--pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "--pem", "no certificate or public key"),
    ])
    func malformedFiles(option: String, contents: String, named: String, message: String) async throws {
        let file = try PinCheckBinary.temporaryFile(contents, suffix: ".txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = option == "--pem" ? ["--pem", file.path] : ["127.0.0.1:1", option, file.path]
        let outcome = try await PinCheckBinary.run(arguments)
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains("\(named) \(file.path): "), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n", omittingEmptySubsequences: false).count == 2, "one line: \(outcome.stderr)")
    }

    @Test("an OpenSSL that cannot be set up on this machine exits 69, not 64, in one line", arguments: [false, true])
    func brokenOpenSSLIsNotAUsageError(withCAFile: Bool) async throws {
        // An OpenSSL config that asks for a provider that does not exist, with diagnostics on: SSL_CTX_new fails.
        let config = try PinCheckBinary.temporaryFile(
            """
            config_diagnostics = 1
            openssl_conf = init
            [init]
            providers = providers
            [providers]
            missing = missing
            [missing]
            module = /nonexistent/provider.so
            activate = 1

            """, suffix: ".cnf")
        defer { try? FileManager.default.removeItem(at: config) }
        let arguments = ["127.0.0.1:1"] + (withCAFile ? ["--ca-file", Self.rootPEM] : [])
        let outcome = try await PinCheckBinary.binary().run(arguments, environment: ["OPENSSL_CONF": config.path])
        #expect(outcome.status == 69)
        #expect(outcome.stderr.hasPrefix("pin-check: cannot check on this machine: "), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n", omittingEmptySubsequences: false).count == 2)
        #expect(outcome.stdout.isEmpty)
    }

    @Test("--pem prints the pins of certificates offline, equal to the openssl CLI's")
    func pemPins() async throws {
        let outcome = try await PinCheckBinary.run(["--pem", Self.rootPEM])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.hasPrefix(TestCertificates.pin("root").description))
        #expect(outcome.stdout.contains("RSA 2048"))
    }

    @Test("--pem reads PUBLIC KEY blocks (as `openssl pkey -pubout` writes them)")
    func pemPublicKeys() async throws {
        let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))
        var text = ""
        for name in ["leaf-ed25519", "leaf-localhost-rsa"] {
            let key = TestCertificates.directory.appendingPathComponent("\(name).key").path
            let exported = try await openssl.run(["pkey", "-in", key, "-pubout"])
            try #require(exported.status == 0, "openssl: \(exported.stderr)")
            #expect(exported.stdout.hasPrefix("-----BEGIN PUBLIC KEY-----"))
            text += exported.stdout
        }
        let file = try PinCheckBinary.temporaryFile(text)
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try await PinCheckBinary.run(["--pem", file.path])
        #expect(outcome.status == 0, "stderr: \(outcome.stderr)")
        #expect(outcome.stdout == """
            \(TestCertificates.pin("leaf-ed25519"))  public key (Ed25519)
            \(TestCertificates.pin("leaf-localhost-rsa"))  public key (RSA 2048)

            """)
    }

    @Test("an IPv6 literal in brackets connects over ::1",
          .enabled(if: LoopbackIPv6.isAvailable, "::1 cannot be bound on this machine (no IPv6 loopback)"))
    func ipv6Literal() async throws {
        let outcome = try await PinCheckBinary.runAgainstServer(
            host: "::1", ["--pin", Self.leafPin, "--pin", Self.backupPin, "--json"])
        #expect(outcome.status == 0, "stderr: \(outcome.stderr)")
        #expect(outcome.verdict == "ok")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(object["host"] as? String == "::1")
        #expect(object["matchedPin"] as? String == Self.leafPin)
    }

    /// README: forms a resolver reads as an address (`127.1`, `0x7f000001`) are refused; so are an underscore and a
    /// non-ASCII `--servername`. Refused as usage (64) naming the form, before any connection: the port is closed,
    /// so a connection attempt would end in exit 4.
    @Test("a HOST or --servername that is no host name is refused with 64 before connecting", arguments: [
        (["0x7f000001"], "HOST: the host \"0x7f000001\" is an IPv4 address in a shortened, octal or hex form"),
        (["127.1"], "HOST: the host \"127.1\" is neither an IP address in standard form nor a DNS name"),
        (["ex_ample.com"], "HOST: the host \"ex_ample.com\" has a byte that no host name has"),
        (["127.0.0.1", "--servername", "0x7f000001"], "--servername: the host \"0x7f000001\" is an IPv4 address"),
        (["127.0.0.1", "--servername", "ex_ample.com"], "--servername: the host \"ex_ample.com\" has a byte"),
        (["127.0.0.1", "--servername", "localhost\u{212A}"], "--servername: the host \"localhost\u{212A}\" is not ASCII"),
    ])
    func refusedNamesBeforeConnecting(arguments: [String], message: String) async throws {
        let closed = try BoundClosedPort()
        defer { closed.release() }
        let outcome = try await PinCheckBinary.run(["\(arguments[0]):\(closed.port)"] + arguments.dropFirst())
        #expect(outcome.status == 64, "stdout: \(outcome.stdout) stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
    }

    /// `127.0.0.1.` is checked as the address 127.0.0.1 and connected to as that address: the raw spelling, which
    /// the system resolver cannot resolve, never reaches it.
    @Test("a trailing dot after an IPv4 address connects to its canonical form", arguments: ["127.0.0.1.", "localhost."])
    func trailingDotConnectsCanonically(host: String) async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let outcome = try await PinCheckBinary.run(
            ["\(host):\(server.port)", "--ca-file", Self.rootPEM, "--timeout", "60", "--json"])
        try await server.shutdown()
        #expect(outcome.status == 0, "stdout: \(outcome.stdout) stderr: \(outcome.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        let canonical = String(host.dropLast())
        #expect(object["host"] as? String == canonical)
        #expect(object["servername"] as? String == canonical)
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

    @Test("--demo moved out of the source tree says where it looked, in one line, and exits 69")
    func demoWithoutTestCerts() async throws {
        let folder = try TemporaryTree()
        defer { folder.remove() }
        let moved = try folder.copyBinary(PinCheckBinary.binary())
        let outcome = try await BuiltBinary(url: moved).run(["--demo"])
        #expect(outcome.status == 69)
        #expect(outcome.stderr.split(separator: "\n", omittingEmptySubsequences: false).count == 2, "one line: \(outcome.stderr)")
        #expect(outcome.stderr.contains("cannot find TestCerts/ in \(moved.deletingLastPathComponent().path)"))
        #expect(outcome.stderr.contains("source tree"))
        #expect(outcome.stdout.isEmpty)
    }

    @Test("--demo exits 70, not 1, when a check does not end as expected")
    func demoUnexpected() async throws {
        // A tree whose pins.txt gives the "unrelated" names the pins of the served chain: check 3 then passes.
        let folder = try TemporaryTree()
        defer { folder.remove() }
        let moved = try folder.copyBinary(PinCheckBinary.binary(), into: "bin")
        let certs = try folder.copyTestCerts()
        let pins = try String(contentsOf: certs.appendingPathComponent("pins.txt"), encoding: .utf8)
            .replacingOccurrences(
                of: "other-leaf-localhost \(TestCertificates.pin("other-leaf-localhost"))",
                with: "other-leaf-localhost \(Self.leafPin)")
        try pins.write(to: certs.appendingPathComponent("pins.txt"), atomically: true, encoding: .utf8)
        let outcome = try await BuiltBinary(url: moved).run(["--demo"])
        #expect(outcome.status == 70)
        #expect(outcome.stderr.contains("UNEXPECTED"), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains("ended in ok, expected pin-mismatch"), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n", omittingEmptySubsequences: false).count == 2)
    }
}

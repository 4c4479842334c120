import Foundation
import ShopKitPinning
import TestSupport
import Testing

/// `pin-check backup-key` through the built binary: the key file is 0600 and never printed, and the printed
/// pin is exactly the SPKI pin of a certificate a CA issues for the CSR (signed here by `openssl x509 -req` with
/// the TestCerts intermediate).
@Suite("PinCheck backup-key", .timeLimit(.minutes(3)))
struct PinCheckBackupKeyTests {
    static let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("backup-key-\(UUID())")
    }

    /// The `backup pin` line of the output.
    static func printedPin(_ stdout: String) -> String? {
        stdout.split(separator: "\n").first { $0.contains("backup pin") }?.split(separator: " ").last.map(String.init)
    }

    /// The pin `pin-check --pem` prints for the first block of `path`.
    static func pemPin(_ path: String) async throws -> String? {
        let outcome = try await PinCheckBinary.run(["--pem", path])
        return outcome.stdout.split(separator: " ").first.map(String.init)
    }

    @Test(arguments: [("ecdsa-p256", "ECDSA P-256"), ("rsa-2048", "RSA 2048"), ("ed25519", "Ed25519")])
    func theCertificateIssuedForTheCSRCarriesThePrintedPin(keyType: String, description: String) async throws {
        let out = Self.directory()
        defer { try? FileManager.default.removeItem(at: out) }
        let outcome = try await PinCheckBinary.run(["backup-key", "--host", "api.example.com", "--out", out.path, "--key-type", keyType])
        #expect(outcome.status == 0, "stderr: \(outcome.stderr)")
        #expect(outcome.stdout.contains("backup key for api.example.com (\(description))"))
        #expect(!outcome.stdout.contains("PRIVATE KEY"))
        let pin = try #require(Self.printedPin(outcome.stdout))
        #expect((try? SPKIPin(pin)) != nil)
        // The pin in every --print-config format.
        for format in ["shopkit configuration:", "okhttp configuration:", "curl configuration:", "android configuration:"] {
            #expect(outcome.stdout.contains(format))
        }
        #expect(outcome.stdout.contains("sha256//" + pin.dropFirst("sha256/".count)))

        let key = out.appendingPathComponent("api.example.com.key").path
        let csr = out.appendingPathComponent("api.example.com.csr").path
        let attributes = try FileManager.default.attributesOfItem(atPath: key)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: key, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----"))

        // A CA signs the CSR (keeping its SAN); the issued certificate's pin is the printed one.
        let certificate = out.appendingPathComponent("issued.pem").path
        let ca = TestCertificates.directory
        let signed = try await Self.openssl.run([
            "x509", "-req", "-in", csr, "-CA", ca.appendingPathComponent("intermediate-2.pem").path,
            "-CAkey", ca.appendingPathComponent("intermediate-2.key").path, "-set_serial", "4242", "-days", "30",
            "-copy_extensions", "copy", "-out", certificate,
        ])
        #expect(signed.status == 0, "openssl: \(signed.stderr)")
        #expect(try await Self.pemPin(certificate) == pin)
        let text = try await Self.openssl.run(["x509", "-in", certificate, "-noout", "-ext", "subjectAltName", "-subject"])
        #expect(text.stdout.contains("DNS:api.example.com"))
        #expect(text.stdout.contains("CN=api.example.com") || text.stdout.contains("CN = api.example.com"))

        // And the key file holds the key of that pin.
        let publicKey = out.appendingPathComponent("public.pem").path
        #expect(try await Self.openssl.run(["pkey", "-in", key, "-pubout", "-out", publicKey]).status == 0)
        #expect(try await Self.pemPin(publicKey) == pin)
    }

    @Test func neverOverwritesAKeyOrCSR() async throws {
        let out = Self.directory()
        defer { try? FileManager.default.removeItem(at: out) }
        let first = try await PinCheckBinary.run(["backup-key", "--host", "10.0.0.7", "--out", out.path])
        #expect(first.status == 0)
        let key = out.appendingPathComponent("10.0.0.7.key").path
        let before = try Data(contentsOf: URL(fileURLWithPath: key))
        let second = try await PinCheckBinary.run(["backup-key", "--host", "10.0.0.7", "--out", out.path])
        #expect(second.status == 73)
        #expect(second.stderr.contains("exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: key)) == before)

        // Only the CSR left over: still nothing is written, and no new key appears.
        try FileManager.default.removeItem(atPath: key)
        let third = try await PinCheckBinary.run(["backup-key", "--host", "10.0.0.7", "--out", out.path])
        #expect(third.status == 73)
        #expect(!FileManager.default.fileExists(atPath: key))
        // An IP address goes into the SAN as IP.
        let csr = out.appendingPathComponent("10.0.0.7.csr").path
        #expect(try await Self.openssl.run(["req", "-in", csr, "-noout", "-text"]).stdout.contains("IP Address:10.0.0.7"))
    }

    @Test("backup-key usage errors exit 64", arguments: [
        (["--host", "**.example.com", "--out", "/tmp/x"], "**."),
        (["--host", "api.example.com", "--out", "/tmp/x", "--key-type", "dsa"], "key-type"),
        (["--out", "/tmp/x"], "--host"),
        (["--host", "bad host", "--out", "/tmp/x"], "--host"),
        // KELVIN SIGN lowercases to `k`: refused as non-ASCII, named escaped, never read as api.example.cok.
        (["--host", "api.example.co\u{212A}", "--out", "/tmp/x"], #"--host host pattern "api.example.co\u{212A}" is not ASCII"#),
    ])
    func usageErrors(arguments: [String], message: String) async throws {
        let outcome = try await PinCheckBinary.run(["backup-key"] + arguments)
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.split(separator: "\n").count == 1)
    }

    @Test func helpExitsZero() async throws {
        let outcome = try await PinCheckBinary.run(["backup-key", "--help"])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("73"))
    }
}

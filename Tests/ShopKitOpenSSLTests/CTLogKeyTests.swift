import Foundation
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKitOpenSSL

/// The keys a CT log list may give its logs, as OpenSSL's CT log store takes them: RFC 6962's ECDSA P-256 and RSA
/// (2048 bits or more), each written exactly as its `log_id` digests it. Keys made by the openssl command.
@Suite(.timeLimit(.minutes(3))) struct CTLogKeyTests {
    static let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))

    /// The DER SubjectPublicKeyInfo of a new key made by `openssl genpkey` with `options`.
    static func publicKey(_ options: [String]) async throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ct-log-key-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try await openssl.run(["genpkey"] + options + ["-out", "\(directory)/key.pem"]).status == 0)
        #expect(try await openssl.run(["pkey", "-in", "\(directory)/key.pem", "-pubout", "-outform", "DER", "-out", "\(directory)/key.der"]).status == 0)
        return Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/key.der")))
    }

    /// A list of one log with `key`, its `log_id` the SHA-256 of `digested` (the key itself by default).
    static func list(key: [UInt8], digested: [UInt8]? = nil) throws -> CTLogList {
        let log = CTLogList.Log(
            description: "ShopKit Test Log", logID: try sha256(digested ?? key), key: key,
            state: .usable(Date(timeIntervalSince1970: 0)), operatorName: "ShopKit Test Operator")
        return CTLogList(timestamp: Date(), operators: [.init(name: "ShopKit Test Operator", logs: [log])])
    }

    static func refusal(_ list: CTLogList) -> String? {
        do {
            _ = try OpenSSLCTLogStore(list)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func ecdsaP256AndRSAOf2048BitsOrMoreAreCTLogKeys() async throws {
        for options in [["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]] {
            #expect(Self.refusal(try Self.list(key: try await Self.publicKey(options))) == nil, "\(options)")
        }
    }

    /// Keys RFC 6962 does not allow are refused with the list, naming the log and the key: a 1024-bit RSA key
    /// (factorable by a well-funded attacker; browsers want 2048), other curves, EdDSA.
    @Test func otherKeysAreRefusedNamingTheLogAndTheKey() async throws {
        let cases: [([String], String)] = [
            (["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"], "an RSA key of 1024 bits"),
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"], "an ECDSA key on secp384r1"),
            (["-algorithm", "ED25519"], "a Ed25519 key"),
        ]
        for (options, words) in cases {
            let refusal = try #require(Self.refusal(try Self.list(key: try await Self.publicKey(options))), "\(options)")
            #expect(refusal.contains("the log \"ShopKit Test Log\" has \(words)"), "\(refusal)")
        }
    }

    /// Bytes after the key: OpenSSL reads the key and ignores them, so a `log_id` of the key alone would match
    /// OpenSSL's encoding. The list's own bytes must be what the `log_id` digests: refused.
    @Test func aKeyWithBytesAfterItIsRefused() async throws {
        let key = try await Self.publicKey(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        let refusal = try #require(Self.refusal(try Self.list(key: key + [0, 0], digested: key)))
        #expect(refusal.contains("has a log_id that is not the SHA-256 of its key"), "\(refusal)")
        // With a log_id of the bytes as written, OpenSSL's own encoding has another digest: refused as well.
        #expect(Self.refusal(try Self.list(key: key + [0, 0])) != nil)
    }
}

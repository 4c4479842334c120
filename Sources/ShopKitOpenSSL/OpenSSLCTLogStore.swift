import COpenSSL
import Foundation
import ShopKitCore
import NIOConcurrencyHelpers
import ShopKitPinning

/// OpenSSL's `CTLOG_STORE` holding the public keys of a ``CTLogList``'s logs: what `SCT_validate` checks an SCT's
/// signature against. One owner frees it.
///
/// Built once per log list (OpenSSL has no call that adds one log to a store, only a file in its CT log format:
/// the keys, which are public, go through a private temporary file that is removed at once).
package final class OpenSSLCTLogStore: @unchecked Sendable {
    // @unchecked Sendable: the store is complete when `init` returns and never changed after; OpenSSL only reads
    // it (`CTLOG_STORE_get0_log_by_id` in `SCT_validate`), and reads of a built store need no lock. The other
    // mutable state, `validated`, is behind its own lock.
    private let store: OpaquePointer
    /// The log list the store was built from.
    package let logList: CTLogList
    /// SCTs whose signature `SCT_validate` found valid under this store, for the certificate and issuer they were
    /// checked with: checked again, they would be valid again (only a timestamp later than the time of check makes
    /// a good signature invalid, and time only moves on), so a later full handshake with the same certificate
    /// skips OpenSSL 3.0's costly per-SCT set-up (about 7 M instructions each). Bounded; a miss only costs a check.
    private let validated = NIOLockedValueBox(BoundedCache<ValidatedSCT, Void>(capacity: 1_024))

    /// One SCT as checked: the certificate's and issuer's DER digests (SHA-256), where it came from, its bytes.
    struct ValidatedSCT: Hashable {
        var certificate: [UInt8]
        var issuer: [UInt8]
        var source: SignedCertificateTimestamp.Source
        var sct: [UInt8]
    }

    /// The store for `logList`'s logs.
    ///
    /// - Throws: `OpenSSLError` when a log's key is not a public key OpenSSL reads, or not one RFC 6962 allows
    ///   (ECDSA P-256, RSA of 2048 bits or more), or its `log_id` is not the SHA-256 of its key as the list writes
    ///   it (the list is at fault: an SCT could never be checked against that log).
    package init(_ logList: CTLogList) throws(OpenSSLError) {
        OpenSSLError.clearQueue()
        guard let store = CTLOG_STORE_new() else { throw OpenSSLError.drain("CTLOG_STORE_new") }
        self.store = store
        self.logList = logList
        let logs = logList.logs
        guard !logs.isEmpty else { return }
        var text = "enabled_logs = " + logs.indices.map { "log\($0)" }.joined(separator: ",") + "\n"
        for (index, log) in logs.enumerated() {
            text += "[log\(index)]\ndescription = log\(index)\nkey = \(Data(log.key).base64EncodedString())\n"
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-ct-logs-\(UUID()).cnf")
        guard FileManager.default.createFile(
            atPath: file.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw OpenSSLError(operation: "CTLOG_STORE_load_file", queue: ["cannot write \(file.path)"])
        }
        defer { try? FileManager.default.removeItem(at: file) }
        guard CTLOG_STORE_load_file(store, file.path) == 1 else {
            throw OpenSSLError.drain("CTLOG_STORE_load_file (a log's key in the CT log list is not a public key)")
        }
        for log in logs {
            let found = log.logID.withUnsafeBufferPointer { CTLOG_STORE_get0_log_by_id(store, $0.baseAddress, $0.count) }
            // OpenSSL finds a log by the digest of its own encoding of the key; the list's bytes must be that
            // encoding, nothing after it or around it: one key, one text.
            guard let found, try sha256(log.key) == log.logID else {
                throw OpenSSLError(
                    operation: "CT log list",
                    queue: ["the log \"\(log.description)\" has a log_id that is not the SHA-256 of its key"])
            }
            if let problem = Self.unfitKey(CTLOG_get0_public_key(found)) {
                throw OpenSSLError(operation: "CT log list", queue: ["the log \"\(log.description)\" has \(problem)"])
            }
        }
    }

    /// Why `key` cannot be a CT log's key, nil when it can: RFC 6962 §2.1.4 allows ECDSA on NIST P-256 and RSA (of
    /// at least 2048 bits, as browsers require), both with SHA-256; any other key (a 512-bit RSA key anyone can
    /// factor, P-384, Ed25519, X25519) is refused with the list.
    static func unfitKey(_ key: OpaquePointer?) -> String? {
        guard let key else { return "no public key" }
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            let bits = EVP_PKEY_get_bits(key)
            return bits >= 2048 ? nil : "an RSA key of \(bits) bits; a CT log's RSA key has at least 2048"
        case EVP_PKEY_EC:
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else {
                return "an ECDSA key on an unnamed curve; a CT log's ECDSA key is on P-256 (RFC 6962 §2.1.4)"
            }
            let group = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return group == "prime256v1" ? nil : "an ECDSA key on \(group); a CT log's ECDSA key is on P-256 (RFC 6962 §2.1.4)"
        default:
            return "a \(CertificateInfoCache.keyDescription(key)) key; a CT log's key is ECDSA P-256 or RSA (RFC 6962 §2.1.4)"
        }
    }

    deinit { CTLOG_STORE_free(store) }

    /// Whether `sct` was found valid under this store before.
    func wasValidated(_ sct: ValidatedSCT) -> Bool { validated.withLockedValue { $0[sct] != nil } }

    /// Records that `sct` was found valid.
    func recordValid(_ sct: ValidatedSCT) { validated.withLockedValue { $0.insert((), for: sct) } }

    /// How many SCTs are remembered as valid (for tests).
    package var validatedCount: Int { validated.withLockedValue { $0.count } }

    /// Calls `body` with the borrowed store; the pointer must not escape.
    func withStore<T>(_ body: (OpaquePointer) -> T) -> T { body(store) }
}

/// The roots Certificate Transparency applies to: the SPKI pins of the publicly trusted roots.
package enum PublicRootStore {
    /// Where Debian's ca-certificates keeps the Mozilla roots, the publicly trusted ones, apart from roots an
    /// administrator added (`/usr/local/share/ca-certificates`, which `/etc/ssl/certs` also holds).
    package static let systemDirectory = "/usr/share/ca-certificates/mozilla"

    /// The last successful read of the system directory (a failed or empty read is not kept: it is tried again).
    private static let systemCache = NIOLockedValueBox<Set<SPKIPin>?>(nil)

    /// The SPKI pins of the system's public roots (``systemDirectory``'s certificates), or nil when there are none
    /// to read: the folder is missing (a distribution other than Debian's family), empty or unreadable. Read once
    /// per process when it succeeds.
    package static func system(directory: String = systemDirectory) -> Set<SPKIPin>? {
        if directory == systemDirectory, let cached = systemCache.withLockedValue({ $0 }) { return cached }
        let pins = pins(ofCertificatesIn: directory)
        guard !pins.isEmpty else { return nil }
        if directory == systemDirectory { systemCache.withLockedValue { $0 = pins } }
        return pins
    }

    /// The SPKI pins of every certificate in the PEM files (`.crt`, `.pem`) of `directory`; files that do not
    /// parse are skipped.
    package static func pins(ofCertificatesIn directory: String) -> Set<SPKIPin> {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var pins: Set<SPKIPin> = []
        for name in names where name.hasSuffix(".crt") || name.hasSuffix(".pem") {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { continue }
            pins.formUnion(self.pins(ofPEM: String(decoding: data, as: UTF8.self)))
        }
        return pins
    }

    /// The SPKI pins of the certificates of a PEM text (none if it does not parse).
    package static func pins(ofPEM pem: String) -> Set<SPKIPin> {
        defer { OpenSSLError.clearQueue() }
        guard let certificates = try? OpenSSLCertificate.parsePEM(pem) else { return [] }
        var pins: Set<SPKIPin> = []
        for certificate in certificates {
            guard let pin = try? certificate.withX509({ x509 throws(OpenSSLError) -> SPKIPin in
                guard let key = X509_get0_pubkey(x509) else { throw OpenSSLError.drain("X509_get0_pubkey") }
                return try CertificateInfoCache.spkiPin(of: key)
            }) else { continue }
            pins.insert(pin)
        }
        return pins
    }
}

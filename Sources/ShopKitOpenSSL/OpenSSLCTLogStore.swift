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
    /// - Throws: `OpenSSLError` when a log's key is not a public key OpenSSL reads, or its `log_id` is not the
    ///   SHA-256 of its key (the list is at fault: an SCT could never be checked against that log).
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
            guard found != nil else {
                throw OpenSSLError(
                    operation: "CT log list",
                    queue: ["the log \"\(log.description)\" has a log_id that is not the SHA-256 of its key"])
            }
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

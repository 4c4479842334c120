import COpenSSL
import Foundation
import ShopKitPinning

/// One X.509 certificate, owned: the `X509` is freed when this object goes away.
///
/// Why a class: it is the single owner of a C object. Borrowed pointers never leave `withX509`.
package final class OpenSSLCertificate: @unchecked Sendable {
    // @unchecked Sendable: the X509 is never mutated after construction (ShopKit only reads it), and
    // OpenSSL's reads of a fully built X509 are thread-safe; its reference count is atomic.
    private let pointer: OpaquePointer

    /// Takes over one reference to `pointer`; it is released in `deinit`.
    init(takingOwnership pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Takes a new reference on a borrowed `X509` (e.g. one inside an `SSL`'s chain stack).
    convenience init(borrowing pointer: OpaquePointer) {
        X509_up_ref(pointer)
        self.init(takingOwnership: pointer)
    }

    deinit { X509_free(pointer) }

    /// Calls `body` with the borrowed `X509`; the pointer must not escape the closure.
    func withX509<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T {
        try body(pointer)
    }

    /// Parses every `CERTIFICATE` block of a PEM text, in order.
    package static func parsePEM(_ pem: String) throws(OpenSSLError) -> [OpenSSLCertificate] {
        try PEMBlocks.readAll("CERTIFICATE", from: pem, operation: "PEM_read_bio_X509") { bio, asked in
            PEM_read_bio_X509(bio, nil, noPEMPassphrase, asked).map(OpenSSLCertificate.init(takingOwnership:))
        }
    }

    /// The DER encoding of the certificate.
    package var derBytes: [UInt8] {
        withX509 { x509 in
            let length = i2d_X509(x509, nil)
            guard length > 0 else { return [] }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            bytes.withUnsafeMutableBufferPointer { buffer in
                var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                _ = i2d_X509(x509, &cursor)
            }
            return bytes
        }
    }

    /// The certificate's SPKI pin, names, dates and key type (cached per certificate, see `CertificateInfoCache`).
    package var info: CertificateInfo {
        get throws(OpenSSLError) { try CertificateInfoCache.shared.info(for: self) }
    }
}

/// The passphrase callback of every PEM read: there is no passphrase. It records that one was asked for (in
/// the `Bool` its user data points to) and answers with none.
///
/// Why never nil: with a nil callback OpenSSL prompts `Enter PEM pass phrase:` on the controlling terminal and
/// blocks until someone answers, for *any* block with encryption headers (`Proc-Type: 4,ENCRYPTED`),
/// certificates and public keys included. A pins or CA file could then hang a program (found by the `pem` fuzz
/// target; regression inputs `Fuzz/pem/encrypted-*`).
func noPEMPassphrase(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int32, _ writing: Int32, _ asked: UnsafeMutableRawPointer?
) -> Int32 {
    asked?.storeBytes(of: true, as: Bool.self)
    return 0
}

/// A read-only memory BIO over bytes, owned.
/// The one PEM block reader: every block of one label, each parsed by OpenSSL, all or nothing.
enum PEMBlocks {
    /// What ShopKit says about encrypted PEM, which it does not read.
    static let encryptedReason =
        "the PEM text is encrypted (a passphrase-protected key or block); ShopKit reads unencrypted PEM only: "
        + "decrypt it first, e.g. `openssl pkey -in KEY -out KEY.plain`"

    /// Calls `read` with the user data to pass along with ``noPEMPassphrase``; also returns whether a passphrase
    /// was asked for.
    static func withoutPassphrase<T>(
        _ read: (UnsafeMutableRawPointer) -> T
    ) -> (value: T, askedForPassphrase: Bool) {
        var asked = false
        let value = withUnsafeMutablePointer(to: &asked) { read(UnsafeMutableRawPointer($0)) }
        return (value, asked)
    }

    /// Reads every `label` block of `pem` in order with `read` (an OpenSSL `PEM_read_bio_*` call, given the
    /// BIO and the user data to pass with ``noPEMPassphrase``).
    ///
    /// Reading stops at the first block OpenSSL cannot parse (or at the end, on "no start line"); the count of
    /// `-----BEGIN label-----` lines says whether every block parsed.
    ///
    /// - Throws: `OpenSSLError` naming `operation` when there is no such block, or one does not parse (or is
    ///   encrypted).
    static func readAll<T>(
        _ label: String, from pem: String, operation: String,
        read: (OpaquePointer, UnsafeMutableRawPointer) -> T?
    ) throws(OpenSSLError) -> [T] {
        OpenSSLError.clearQueue()
        let bio = try MemoryBIO(contents: Array(pem.utf8))
        let (values, asked) = withoutPassphrase { flag in
            var values: [T] = []
            while let value = bio.withBIO({ read($0, flag) }) { values.append(value) }
            return values
        }
        let queue = OpenSSLError.drainQueue()
        let blocks = pem.components(separatedBy: "-----BEGIN \(label)-----").count - 1
        guard !values.isEmpty, values.count == blocks else {
            if asked { throw OpenSSLError(operation: operation, queue: [encryptedReason]) }
            let reason = blocks == 0 ? ["no \(label) block found in the PEM text"] : queue
            throw OpenSSLError(operation: operation, queue: reason.isEmpty ? ["a \(label) block does not parse"] : reason)
        }
        return values
    }
}

final class MemoryBIO {
    private let pointer: OpaquePointer
    private let storage: UnsafeMutableRawBufferPointer

    /// A BIO reading a private copy of `contents` (BIO_new_mem_buf does not copy, so the copy lives here).
    init(contents: [UInt8]) throws(OpenSSLError) {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(contents.count, 1), alignment: 1)
        storage.copyBytes(from: contents)
        guard let bio = BIO_new_mem_buf(storage.baseAddress, Int32(contents.count)) else {
            storage.deallocate()
            throw OpenSSLError.drain("BIO_new_mem_buf")
        }
        pointer = bio
    }

    deinit {
        BIO_free(pointer)
        storage.deallocate()
    }

    func withBIO<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T { try body(pointer) }
}

/// Runs `body` with a fresh writable memory BIO and returns what it wrote as text.
func withWritableBIO(_ body: (OpaquePointer) -> Void) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { return "" }
    defer { BIO_free(bio) }
    body(bio)
    var data: UnsafeMutablePointer<CChar>?
    let length = shopkit_BIO_get_mem_data(bio, &data)
    guard length > 0, let data else { return "" }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
}

import COpenSSL
import Foundation
import ShopKitPinning

/// An `EVP_PKEY`, owned: a private key (server role) or a public key (pin computation).
package final class OpenSSLKey: @unchecked Sendable {
    // @unchecked Sendable: the EVP_PKEY is never mutated after parsing; OpenSSL 3 keys are safe to read
    // from several threads and their reference count is atomic.
    private let pointer: OpaquePointer

    /// Takes over one reference to `pointer`; it is released in `deinit`.
    init(takingOwnership pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// Calls `body` with the borrowed `EVP_PKEY`; the pointer must not escape the closure.
    func withKey<T, E: Error>(_ body: (OpaquePointer) throws(E) -> T) throws(E) -> T { try body(pointer) }

    /// Parses the first private key of a PEM text (PKCS#8, RSA or EC; unencrypted: an encrypted key is refused,
    /// never prompted for).
    ///
    /// - Warning: The key is secret: it never appears in an error or a log, only OpenSSL's error reasons do.
    package static func privateKey(pem: String) throws(OpenSSLError) -> OpenSSLKey {
        OpenSSLError.clearQueue()
        let bio = try MemoryBIO(contents: Array(pem.utf8))
        let (read, asked) = PEMBlocks.withoutPassphrase { flag in
            bio.withBIO { PEM_read_bio_PrivateKey($0, nil, noPEMPassphrase, flag) }
        }
        guard let key = read else {
            if asked {
                OpenSSLError.clearQueue()
                throw OpenSSLError(operation: "PEM_read_bio_PrivateKey", queue: [PEMBlocks.encryptedReason])
            }
            throw OpenSSLError.drain("PEM_read_bio_PrivateKey")
        }
        return OpenSSLKey(takingOwnership: key)
    }

    /// Parses every `PUBLIC KEY` block (SubjectPublicKeyInfo) of a PEM text, in order.
    package static func publicKeys(pem: String) throws(OpenSSLError) -> [OpenSSLKey] {
        try PEMBlocks.readAll("PUBLIC KEY", from: pem, operation: "PEM_read_bio_PUBKEY") { bio, asked in
            PEM_read_bio_PUBKEY(bio, nil, noPEMPassphrase, asked).map(OpenSSLKey.init(takingOwnership:))
        }
    }

    /// The SPKI pin of this key: SHA-256 over its DER `SubjectPublicKeyInfo`.
    package var spkiPin: SPKIPin {
        get throws(OpenSSLError) { try withKey { key throws(OpenSSLError) in try CertificateInfoCache.spkiPin(of: key) } }
    }

    /// Key type and size, e.g. `RSA 2048`, `ECDSA P-256`, `Ed25519`.
    package var keyDescription: String { withKey { CertificateInfoCache.keyDescription($0) } }
}

/// Pins from PEM text, for tools such as `pin-check --pem`.
package enum PEMPins {
    /// One PEM object and its pin.
    package struct Entry: Sendable, Hashable {
        /// The SPKI pin.
        package let pin: SPKIPin
        /// The certificate subject (RFC 2253), or `public key` for a bare key.
        package let subject: String
        /// Key type and size.
        package let keyDescription: String
    }

    /// The pins of every certificate in `pem`, or, if it holds none, of every public key in it.
    package static func pins(pem: String) throws(OpenSSLError) -> [Entry] {
        if pem.contains("-----BEGIN CERTIFICATE-----") {
            return try OpenSSLCertificate.parsePEM(pem).map { certificate throws(OpenSSLError) in
                let info = try certificate.info
                return Entry(pin: info.spkiPin, subject: info.subject, keyDescription: info.keyDescription)
            }
        }
        return try OpenSSLKey.publicKeys(pem: pem).map { key throws(OpenSSLError) in
            Entry(pin: try key.spkiPin, subject: "public key", keyDescription: key.keyDescription)
        }
    }
}

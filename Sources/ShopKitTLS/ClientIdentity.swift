import Foundation
import ShopKitOpenSSL

/// A client certificate chain and its private key, sent when a server asks for one (mutual TLS).
///
/// Why a value parsed up front: a key that does not load, does not match its certificate or needs a passphrase
/// fails here, when the app builds its configuration, not on the first request. RSA, ECDSA and Ed25519 keys load;
/// keys may be PEM (PKCS#8 or traditional, encrypted with a passphrase or not) or come in a PKCS#12 bundle.
///
/// The key is held by one owner inside ShopKit (an OpenSSL key object, freed, and its secret cleared by OpenSSL,
/// when the last configuration using it goes away). The bytes and passphrase handed in are copied into buffers
/// ShopKit wipes after parsing; wipe your own copies too. The description shows the subject and fingerprint only.
///
/// - Warning: Whoever holds the key file can act as this client. Prefer keeping it in ShopKitCredentials's keyring or
///   encrypted file (`CredentialVault.clientIdentity(certificateChainPEM:keyItem:)`) over a plain file.
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible {
    let material: OpenSSLClientIdentity
    /// SHA-256 of the leaf certificate's DER, lowercase hex: identifies the identity (e.g. in the session cache).
    public let fingerprint: String
    /// The leaf certificate's subject (RFC 2253).
    public let subject: String
    /// The leaf certificate's issuer (RFC 2253).
    public let issuer: String
    /// The end of the leaf certificate's validity.
    public let notAfter: Date

    private init(_ material: OpenSSLClientIdentity) throws(TLSContextError) {
        self.material = material
        fingerprint = material.fingerprint
        do {
            let info = try material.chain[0].info
            subject = info.subject
            issuer = info.issuer
            notAfter = info.notAfter
        } catch {
            throw TLSContextError(message: "the client certificate cannot be read: \(error)", kind: .invalidInput)
        }
    }

    /// An identity from a PEM certificate chain (leaf first, then the intermediates to send) and a PEM private key.
    ///
    /// - Parameters:
    ///   - certificateChain: the PEM certificates: the client's certificate first, then the intermediates the
    ///     server needs to build the chain to its trusted CA.
    ///   - privateKey: the PEM private key of the first certificate, as UTF-8 bytes (bytes rather than a
    ///     `String`, so the caller can wipe them; ShopKit's copy is wiped after parsing).
    ///   - passphrase: the passphrase of an encrypted key (UTF-8 bytes); nil for an unencrypted key. An encrypted
    ///     key without it fails (there is no prompt).
    /// - Throws: ``TLSContextError`` of kind `.invalidInput` naming what is wrong: the chain does not parse, the
    ///   key does not load (or the passphrase is wrong), or the key does not belong to the first certificate.
    public static func pem(
        certificateChain: String, privateKey: [UInt8], passphrase: [UInt8]? = nil
    ) throws(TLSContextError) -> ClientIdentity {
        try pem(certificateChain: certificateChain, privateKey: SecureBytes(copying: privateKey), passphrase: passphrase)
    }

    /// An identity from PEM files: the certificate chain and the private key (see ``pem(certificateChain:privateKey:passphrase:)``).
    /// The key file is read straight into a buffer that is wiped after parsing.
    public static func pemFiles(
        certificateChain chainPath: String, privateKey keyPath: String, passphrase: [UInt8]? = nil
    ) throws(TLSContextError) -> ClientIdentity {
        guard let chain = FileManager.default.contents(atPath: chainPath) else { throw unreadable(chainPath, "client certificate") }
        guard let key = SecureBytes.contentsOfFile(keyPath) else { throw unreadable(keyPath, "client key") }
        return try pem(certificateChain: String(decoding: chain, as: UTF8.self), privateKey: key, passphrase: passphrase)
    }

    /// The PEM identity from a key ShopKit already holds in a wiped buffer (the file reader, ShopKitCredentials's vault).
    package static func pem(
        certificateChain: String, privateKey: SecureBytes, passphrase: [UInt8]?
    ) throws(TLSContextError) -> ClientIdentity {
        let secret = passphrase.map { SecureBytes(copying: $0) }
        do {
            return try ClientIdentity(
                .pem(certificateChain: certificateChain, privateKey: privateKey, passphrase: secret))
        } catch {
            throw TLSContextError(
                message: "the client certificate or key does not load (check the PEM files, that the key belongs "
                    + "to the first certificate, and the passphrase of an encrypted key): \(error)",
                kind: .invalidInput)
        }
    }

    /// An identity from a PKCS#12 bundle (`.p12`, `.pfx`): its certificate, key and any extra certificates,
    /// which are sent after the leaf.
    ///
    /// - Throws: ``TLSContextError`` of kind `.invalidInput` when the bundle does not parse, the passphrase is
    ///   wrong, or it holds no key and certificate.
    public static func pkcs12(_ bundle: [UInt8], passphrase: [UInt8]? = nil) throws(TLSContextError) -> ClientIdentity {
        try pkcs12(SecureBytes(copying: bundle), passphrase: passphrase)
    }

    /// An identity from a PKCS#12 file (see ``pkcs12(_:passphrase:)``), read straight into a wiped buffer.
    public static func pkcs12File(_ path: String, passphrase: [UInt8]? = nil) throws(TLSContextError) -> ClientIdentity {
        guard let bundle = SecureBytes.contentsOfFile(path) else { throw unreadable(path, "PKCS#12 client identity") }
        return try pkcs12(bundle, passphrase: passphrase)
    }

    private static func pkcs12(_ bundle: SecureBytes, passphrase: [UInt8]?) throws(TLSContextError) -> ClientIdentity {
        let secret = passphrase.map { SecureBytes(copying: $0) }
        do {
            return try ClientIdentity(.pkcs12(bundle, passphrase: secret))
        } catch {
            throw TLSContextError(
                message: "the PKCS#12 client identity does not load (check the file and its passphrase): \(error)",
                kind: .invalidInput)
        }
    }

    /// Two identities are equal when their leaf certificates are.
    public static func == (lhs: ClientIdentity, rhs: ClientIdentity) -> Bool { lhs.fingerprint == rhs.fingerprint }

    public func hash(into hasher: inout Hasher) { hasher.combine(fingerprint) }

    /// The subject and fingerprint; never the key.
    public var description: String { "ClientIdentity(\(subject), sha256 \(fingerprint))" }

    private static func unreadable(_ path: String, _ what: String) -> TLSContextError {
        TLSContextError(message: "cannot read the \(what) file \(path): check that it exists and is readable")
    }
}

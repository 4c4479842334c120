import Dispatch
import Foundation
import ShopKitOpenSSL

/// A scrypt hash of a passphrase, storable as text: `scrypt$logN$r$p$SALT$HASH` (base64).
///
/// For ``TerminalPassphraseVerifier`` when the presence passphrase is not the file passphrase.
public struct PassphraseHash: Sendable, Hashable, CustomStringConvertible {
    /// The cost parameters (the same accepted ranges as the token file).
    package let parameters: EncryptedFileStore.ScryptParameters
    /// The random salt.
    package let salt: [UInt8]
    /// The 32-byte scrypt output.
    package let hash: [UInt8]

    /// Hashes `passphrase` with a fresh salt (scrypt N=2^17 r=8 p=1), on a background queue (scrypt is slow by
    /// design). Store ``encoded``; parse it back with ``init(encoded:)``.
    public static func make(_ passphrase: Passphrase) async throws(CredentialError) -> PassphraseHash {
        try await make(passphrase, parameters: .default)
    }

    /// The same with the scrypt cost injected (tests lower it).
    package static func make(_ passphrase: Passphrase, parameters: EncryptedFileStore.ScryptParameters)
        async throws(CredentialError) -> PassphraseHash
    {
        if let problem = TokenFile.rangeProblem(parameters) { throw .io("scrypt parameters out of range: \(problem)") }
        let result: Result<PassphraseHash, CredentialError> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "ShopKitCredentials.PassphraseHash").async {
                continuation.resume(returning: Result { () throws(CredentialError) in
                    let salt: [UInt8]
                    do { salt = try SecureRandom.bytes(count: 16) } catch { throw .io("\(error)") }
                    let digest = try derive(passphrase, parameters: parameters, salt: salt)
                    return PassphraseHash(parameters: parameters, salt: salt, hash: digest)
                })
            }
        }
        return try result.get()
    }

    /// Parses the text form, range-checking the parameters; throws `.corrupt` when it is malformed.
    public init(encoded: String) throws(CredentialError) {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", let logN = UInt8(parts[1]), let r = UInt32(parts[2]),
            let p = UInt32(parts[3]), let salt = Data(base64Encoded: parts[4]), let hash = Data(base64Encoded: parts[5]),
            salt.count >= 16, hash.count == 32
        else { throw .corrupt("not a ShopKit passphrase hash (expected scrypt$logN$r$p$SALT$HASH)") }
        let parameters = EncryptedFileStore.ScryptParameters(logN: logN, r: r, p: p)
        if let problem = TokenFile.rangeProblem(parameters) { throw .corrupt("passphrase hash: \(problem)") }
        self.init(parameters: parameters, salt: Array(salt), hash: Array(hash))
    }

    private init(parameters: EncryptedFileStore.ScryptParameters, salt: [UInt8], hash: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    /// The text form, `scrypt$logN$r$p$SALT$HASH`.
    public var encoded: String {
        "scrypt$\(parameters.logN)$\(parameters.r)$\(parameters.p)$\(Data(salt).base64EncodedString())$"
            + Data(hash).base64EncodedString()
    }

    /// Redacted: the hash is not a secret, but it is an offline-guessing target, so it stays out of logs.
    public var description: String { "PassphraseHash(scrypt, logN: \(parameters.logN), <redacted>)" }

    /// Whether `passphrase` hashes to this hash. Blocking (runs scrypt): call off the cooperative pool.
    func matchesBlocking(_ passphrase: Passphrase) throws(CredentialError) -> Bool {
        let candidate = try Self.derive(passphrase, parameters: parameters, salt: salt)
        return SecureBytes(copying: candidate).constantTimeEquals(SecureBytes(copying: hash))
    }

    private static func derive(_ passphrase: Passphrase, parameters: EncryptedFileStore.ScryptParameters, salt: [UInt8])
        throws(CredentialError) -> [UInt8]
    {
        let result = passphrase.withBytes { bytes in
            Result { () throws(OpenSSLError) in
                try Scrypt.deriveKey(password: UnsafeRawBufferPointer(bytes), salt: salt, logN: parameters.logN,
                                     r: parameters.r, p: parameters.p, length: 32)
            }
        }
        do { return try result.get().withUnsafeBytes { Array($0) } } catch { throw .io("scrypt failed: \(error)") }
    }
}

import ShopKitAPI
import ShopKitOpenSSL
import ShopKitTLS

/// A client certificate's private key kept in the credential layer (the keyring or the encrypted file) instead of
/// a plain file: stored as an item of its own, read back through the vault, so the item's access policy
/// (`userPresence` included) applies to the key exactly as to tokens.
///
/// The item holds the PEM private key, unencrypted: the keyring or the encrypted file is what protects it at rest.
/// The certificate chain is public and stays with the app.
///
/// - Warning: On its way through the backends the PEM text passes through Swift strings, as tokens do, which
///   cannot be wiped; ShopKit copies it into a wiped buffer for parsing and keeps only OpenSSL's key object.
extension CredentialVault {
    /// Stores `privateKeyPEM` (a PEM private key, not encrypted) as the item `keyItem` under `policy`, after checking
    /// that it loads and belongs to the first certificate of `certificateChainPEM`; returns that identity.
    ///
    /// - Throws: `TLSContextError` (kind `.invalidInput`) when the key is encrypted (store it decrypted: the keyring
    ///   or encrypted file protects it), does not load, or does not match the certificate; `CredentialError` when the
    ///   policy cannot be honoured or the backend fails. Nothing is stored then.
    @discardableResult
    public func storeClientIdentity(
        certificateChainPEM: String, privateKeyPEM: [UInt8], as keyItem: CredentialKey,
        policy: AccessPolicy = .afterFirstUnlock
    ) async throws -> ClientIdentity {
        let key = SecureBytes(copying: privateKeyPEM)
        let encrypted = key.withUnsafeBytes { bytes in
            ["-----BEGIN ENCRYPTED PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED"].contains { marker in
                bytes.firstRange(of: Array(marker.utf8)) != nil
            }
        }
        guard !encrypted else {
            throw TLSContextError(
                message: "the client key to store is encrypted: store it decrypted (the keyring or encrypted file "
                    + "protects it), e.g. openssl pkey -in KEY -out KEY.plain in a private directory",
                kind: .invalidInput)
        }
        let identity = try ClientIdentity.pem(certificateChain: certificateChainPEM, privateKey: key, passphrase: nil)
        try await write(AuthTokens(accessToken: String(decoding: privateKeyPEM, as: UTF8.self)), for: keyItem, policy: policy)
        return identity
    }

    /// The client identity made of `certificateChainPEM` (leaf first) and the private key stored as `keyItem`;
    /// nil when there is no such item. The read goes through the vault, so a `userPresence` item asks for a proof
    /// of presence first.
    ///
    /// - Throws: `CredentialError` when the read is refused or fails (`.accessDenied`, `.locked`, …), or
    ///   `TLSContextError` (kind `.invalidInput`) when the stored key does not load or does not belong to the
    ///   chain's first certificate.
    public func clientIdentity(certificateChainPEM: String, keyItem: CredentialKey) async throws -> ClientIdentity? {
        guard let item = try await read(keyItem) else { return nil }
        let key = SecureBytes(copying: item.accessToken.utf8)
        return try ClientIdentity.pem(certificateChain: certificateChainPEM, privateKey: key, passphrase: nil)
    }
}

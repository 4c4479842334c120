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
    /// Stores `privateKeyPEM` (a PEM private key, not encrypted) as the item `keyItem` under `policy`.
    ///
    /// - Throws: `CredentialError.policyUnsupported` when the text is not an unencrypted PEM private key (decrypt
    ///   it first: the store protects it), or when the policy cannot be honoured; otherwise what the backend throws.
    public func storeClientKey(
        privateKeyPEM: [UInt8], as keyItem: CredentialKey, policy: AccessPolicy = .afterFirstUnlock
    ) async throws(CredentialError) {
        let text = String(decoding: privateKeyPEM, as: UTF8.self)
        guard text.contains("-----BEGIN "), text.contains("PRIVATE KEY-----") else {
            throw .policyUnsupported("the client key to store is not a PEM private key (-----BEGIN … PRIVATE KEY-----)")
        }
        guard !text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----"), !text.contains("Proc-Type: 4,ENCRYPTED") else {
            throw .policyUnsupported(
                "the client key to store is encrypted: store it decrypted (the keyring or encrypted file protects it), "
                    + "e.g. openssl pkey -in KEY -out KEY.plain")
        }
        try await write(AuthTokens(accessToken: text), for: keyItem, policy: policy)
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

import ShopKitAPI
import ShopKitOpenSSL
import ShopKitTLS

/// A client certificate's private key kept in the credential layer (the keyring or the encrypted file) instead of
/// a plain file: stored as an item of its own kind (``CredentialKind/clientKey``: a name of its own, so a token
/// never replaces it or reads it), read back through the vault, so the item's access policy applies to the key,
/// `userPresence` by default.
///
/// The item holds the PEM private key, unencrypted: the keyring or the encrypted file is what protects it at rest.
/// The certificate chain is public and stays with the app.
///
/// - Warning: With the encrypted file and the keyring, the key goes from storage to OpenSSL's key object in wiped
///   buffers only. Through any other backend it passes through Swift strings, as tokens do, which cannot be wiped;
///   ShopKit keeps only OpenSSL's key object.
extension CredentialVault {
    /// The policy client keys are stored under unless told otherwise: a proof of presence for every load.
    public static let clientKeyPolicy = AccessPolicy(access: .userPresence(reuseSeconds: 0))

    /// Stores `privateKeyPEM` (a PEM private key, not encrypted) as the client key item named by `keyItem`'s service
    /// and account (``CredentialKind/clientKey``, whatever `keyItem`'s kind) under `policy`, after checking that it
    /// loads and belongs to the first certificate of `certificateChainPEM`; returns that identity.
    ///
    /// The default policy is ``clientKeyPolicy`` (`userPresence`, asked at every load), so the vault needs a
    /// `PresenceVerifier` that can run; pass `AccessPolicy()` (`afterFirstUnlock`) explicitly for an unattended
    /// service.
    ///
    /// - Throws: `TLSContextError` (kind `.invalidInput`) when the key is encrypted (store it decrypted: the keyring
    ///   or encrypted file protects it), does not load, or does not match the certificate; `CredentialError` when the
    ///   policy cannot be honoured or the backend fails. Nothing is stored then.
    @discardableResult
    public func storeClientIdentity(
        certificateChainPEM: String, privateKeyPEM: [UInt8], as keyItem: CredentialKey,
        policy: AccessPolicy = CredentialVault.clientKeyPolicy
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
        let item = keyItem.of(.clientKey)
        if let store = backend as? any ClientKeyStore {
            // The file and the keyring keep the key in wiped buffers all the way.
            try checkHonoured(policy, for: item)
            try await store.writeClientKey(key, policy: policy, for: item)
        } else {
            try await writeItem(
                AuthTokens(accessToken: key.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }), for: item,
                policy: policy)
        }
        return identity
    }

    /// The client identity made of `certificateChainPEM` (leaf first) and the private key stored as the client key
    /// item named by `keyItem`'s service and account; nil when there is no such item. The read goes through the
    /// vault, so a `userPresence` item asks for a proof of presence first.
    ///
    /// A key stored by an earlier ShopKit, as a token item of that name, is still loaded (store it again to give it
    /// its own kind); any other token item there is an input error, never used as a key.
    ///
    /// - Throws: `CredentialError` when the read is refused or fails (`.accessDenied`, `.locked`, …), or
    ///   `TLSContextError` (kind `.invalidInput`) when the stored key does not load or does not belong to the
    ///   chain's first certificate.
    public func clientIdentity(certificateChainPEM: String, keyItem: CredentialKey) async throws -> ClientIdentity? {
        if let store = backend as? any ClientKeyStore,
            let (pem, policy) = try await store.readClientKey(keyItem.of(.clientKey))
        {
            // From storage to OpenSSL in wiped buffers only (the memory-scan test checks it).
            try await enforce(policy, for: keyItem.of(.clientKey))
            return try ClientIdentity.pem(certificateChain: certificateChainPEM, privateKey: pem, passphrase: nil)
        }
        var item = try await readItem(keyItem.of(.clientKey))
        if item == nil, let legacy = try await readItem(keyItem.of(.tokens)) {
            guard PrivateKeyItem.holdsPrivateKey(legacy.tokens) else {
                throw TLSContextError(
                    message: "\(keyItem.of(.tokens)) holds a token, not a client key; store the key with "
                        + "storeClientIdentity", kind: .invalidInput)
            }
            logger.notice("client key loaded from a token item (stored by an earlier ShopKit); store it again",
                metadata: ["key": "\(keyItem.of(.tokens))"])
            item = legacy
        }
        guard let item else { return nil }
        let key = SecureBytes(copying: item.tokens.accessToken.utf8)
        return try ClientIdentity.pem(certificateChain: certificateChainPEM, privateKey: key, passphrase: nil)
    }

    /// Deletes the client key item named by `keyItem`'s service and account (no presence needed). A token item of
    /// the same name is another item and stays; a key stored as a token item by an earlier ShopKit is deleted with
    /// ``delete(_:)``.
    public func deleteClientIdentity(keyItem: CredentialKey) async throws(CredentialError) {
        try await delete(keyItem.of(.clientKey))
    }

    /// The PEM text of the client key item named by `keyItem`'s service and account, through the vault's policy
    /// (for `token-store get --export-private-key`); nil when there is none.
    package func clientKeyItem(_ keyItem: CredentialKey) async throws(CredentialError) -> AuthTokens? {
        try await readItem(keyItem.of(.clientKey))?.tokens
    }
}

import Foundation
import ShopKitAPI
import ShopKitOpenSSL

/// Client key items in the token file: the PEM key is sealed on its own with the data key (`sealedKey`), so that a
/// read opens it straight into a wiped buffer and hands that to OpenSSL; it never becomes a `String` on the way.
extension FileStoreEngine {
    /// Seals `pem` for the client key item `key`, bound to this device when `thisDeviceOnly`.
    func sealKey(_ pem: SecureBytes, for key: CredentialKey, thisDeviceOnly: Bool, dataKey: SecureBytes)
        throws(CredentialError) -> BoundTokens
    {
        var device: String?
        if thisDeviceOnly {
            guard let deviceID else { throw .policyUnsupported("no machine id: set Configuration.deviceID") }
            device = deviceID
        }
        let aad = BoundTokens.keyAAD(service: key.service, account: key.account, deviceID: device)
        return try crypto { () throws(OpenSSLError) in
            let nonce = try SecureRandom.bytes(count: AES256GCM.nonceSize)
            let sealed = try pem.withUnsafeBytes { plain in
                Result { () throws(OpenSSLError) in try AES256GCM.seal(plain, key: dataKey, nonce: nonce, aad: aad) }
            }.get()
            return BoundTokens(nonce: Data(nonce), ciphertext: Data(sealed.ciphertext), tag: Data(sealed.tag))
        }
    }

    /// The client key item for `key` (its PEM in a wiped buffer) and its policy; `nil` when there is none. A
    /// device-bound key opens only on its own device (`.wrongDevice`).
    func clientKey(_ key: CredentialKey, in items: [TokenItem], dataKey: SecureBytes)
        throws(CredentialError) -> (pem: SecureBytes, policy: AccessPolicy)?
    {
        guard let item = items.first(where: { $0.key == key }) else { return nil }
        guard let policy = item.policy else { throw .corrupt("item \(key) has an unknown access policy") }
        guard let box = item.sealedKey else { throw .corrupt("client key item \(key) has no sealed key") }
        var device: String?
        if item.thisDeviceOnly {
            guard let deviceID else { throw .wrongDevice }
            device = deviceID
        }
        let aad = BoundTokens.keyAAD(service: key.service, account: key.account, deviceID: device)
        guard let pem = try crypto({ () throws(OpenSSLError) in
            try AES256GCM.open(Array(box.ciphertext), tag: Array(box.tag), key: dataKey, nonce: Array(box.nonce), aad: aad)
        }) else {
            if item.thisDeviceOnly { throw .wrongDevice }
            throw .corrupt("client key item \(key) does not open")
        }
        return (pem, policy)
    }
}

extension EncryptedFileStore {
    /// Stores the PEM key `pem` as the client key item `key` under `policy`, sealed on its own (see the format
    /// document), replacing any earlier item of that name.
    package func writeClientKey(_ pem: SecureBytes, policy: AccessPolicy, for key: CredentialKey)
        async throws(CredentialError)
    {
        guard key.kind == .clientKey else { throw .invalidConfiguration("\(key) does not name a client key item") }
        try await modify { engine, items, dataKey throws(CredentialError) in
            let fields = TokenItem.fields(of: policy)
            let item = TokenItem(
                service: key.service, account: key.account, kind: TokenItem.kindField(.clientKey),
                access: fields.access, reuseSeconds: fields.reuseSeconds, thisDeviceOnly: policy.thisDeviceOnly,
                tokens: nil, bound: nil,
                sealedKey: try engine.sealKey(pem, for: key, thisDeviceOnly: policy.thisDeviceOnly, dataKey: dataKey))
            items.removeAll { $0.key == key }
            items.append(item)
        }
    }

    /// The client key item `key`: its PEM in a wiped buffer, and its policy (not checked here: go through
    /// `CredentialVault`); `nil` when there is none.
    package func readClientKey(_ key: CredentialKey) async throws(CredentialError)
        -> (pem: SecureBytes, policy: AccessPolicy)?
    {
        try await run { engine throws(CredentialError) in
            guard let (_, dataKey, items) = try engine.load() else { return nil }
            return try engine.clientKey(key, in: items, dataKey: dataKey)
        }
    }
}

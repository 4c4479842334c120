import CLibSecret
import Foundation
import ShopKitAPI
import ShopKitOpenSSL

/// A store that keeps client keys in wiped buffers from storage to the caller (never a `String`).
package protocol ClientKeyStore: CredentialBackend {
    /// The client key item `key`: its PEM in a wiped buffer and its policy (not checked here: go through
    /// `CredentialVault`); `nil` when there is none.
    func readClientKey(_ key: CredentialKey) async throws(CredentialError) -> (pem: SecureBytes, policy: AccessPolicy)?
    /// Stores the PEM key `pem` as the client key item `key` under `policy`.
    func writeClientKey(_ pem: SecureBytes, policy: AccessPolicy, for key: CredentialKey) async throws(CredentialError)
}

extension EncryptedFileStore: ClientKeyStore {}

/// A client key item's secret in the keyring: one line of compact JSON without the key (the policy and the device,
/// as a token item's body has them, and `"kind":"clientKey"`), a newline, then the PEM bytes. It is written from and
/// read into wiped buffers; the key never becomes a `String`.
struct KeyringKeyHeader: Codable {
    var v = 1
    var kind = "clientKey"
    var access: String
    var reuseSeconds: Int?
    var thisDeviceOnly: Bool
    var device: String?

    init(policy: AccessPolicy, device: String?) {
        (access, reuseSeconds) = TokenItem.fields(of: policy)
        thisDeviceOnly = policy.thisDeviceOnly
        self.device = device
    }

    /// The header line, a newline and `pem`, in one wiped buffer.
    func secret(_ pem: SecureBytes) throws(CredentialError) -> SecureBytes {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let header = try? Array(encoder.encode(self)) else { throw .io("cannot encode the keyring item") }
        return SecureBytes(count: header.count + 1 + pem.count) { out in
            out.copyBytes(from: header + [0x0A])
            pem.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[(header.count + 1)...]).copyMemory(from: $0) }
        }
    }

    /// Splits a secret into its header's policy and the PEM (copied into a wiped buffer); checks the device.
    static func open(_ secret: UnsafeRawBufferPointer, key: CredentialKey, device: String?, boundTo: String?)
        throws(CredentialError) -> (pem: SecureBytes, policy: AccessPolicy)
    {
        guard let newline = secret.firstIndex(of: 0x0A),
            let header = try? JSONDecoder().decode(KeyringKeyHeader.self, from: Data(secret[..<newline])),
            header.v == 1, header.kind == "clientKey"
        else { throw .corrupt("the keyring item for \(key) is not a ShopKit client key item; delete it and store it again") }
        let item = TokenItem(
            service: key.service, account: key.account, access: header.access, reuseSeconds: header.reuseSeconds,
            thisDeviceOnly: header.thisDeviceOnly, tokens: nil, bound: nil)
        guard let policy = item.policy else { throw .corrupt("the keyring item for \(key) has an unknown access policy") }
        if policy.thisDeviceOnly {
            // Both the attribute and the header must name this machine.
            guard let device, boundTo == device, header.device == device else { throw .wrongDevice }
        }
        return (SecureBytes(copying: UnsafeRawBufferPointer(rebasing: secret[(newline + 1)...])), policy)
    }
}

extension KeyringStore: ClientKeyStore {
    package func readClientKey(_ key: CredentialKey) async throws(CredentialError)
        -> (pem: SecureBytes, policy: AccessPolicy)?
    {
        guard key.kind == .clientKey else { throw .invalidConfiguration("\(key) does not name a client key item") }
        let unlock = allowUnlockPrompt
        let device = deviceID
        return try await worker.run(timeout: timeout, timer: timer) { session, cancellable throws(CredentialError) in
            try session.withReconnect { () throws(CredentialError) -> (pem: SecureBytes, policy: AccessPolicy)? in
                guard let (value, boundTo) = try Self.loadSecret(
                    key, unlock: unlock, device: device, session: session, cancellable: cancellable)
                else { return nil }
                return try value.withBytes { (bytes) throws(CredentialError) in
                    try KeyringKeyHeader.open(bytes, key: key, device: device, boundTo: boundTo)
                }
            }
        }
    }

    package func writeClientKey(_ pem: SecureBytes, policy: AccessPolicy, for key: CredentialKey)
        async throws(CredentialError)
    {
        guard key.kind == .clientKey else { throw .invalidConfiguration("\(key) does not name a client key item") }
        var device: String?
        if policy.thisDeviceOnly {
            guard let deviceID else {
                throw .policyUnsupported("this machine has no /etc/machine-id to bind a this-device-only item to")
            }
            device = deviceID
        }
        let secret = try KeyringKeyHeader(policy: policy, device: device).secret(pem)
        let unlock = allowUnlockPrompt
        let effect = JobEffect.changes("storing the item for \(key)")
        try await worker.run(timeout: timeout, effect: effect, timer: timer) {
            [device] session, cancellable throws(CredentialError) in
            try session.withReconnect { () throws(CredentialError) in
                try Self.write(
                    secret: secret, contentType: "application/x-pem-file", for: key, device: device, unlock: unlock,
                    session: session, cancellable: cancellable)
            }
        }
    }
}

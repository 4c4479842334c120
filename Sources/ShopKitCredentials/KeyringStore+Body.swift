import Foundation
import ShopKitAPI

/// The secret body of a keyring item, version 1: compact JSON (no raw newlines), UTF-8.
///
///     {"access":"afterFirstUnlock"|"userPresence","accessToken":"…","device":"<machine id>",
///      "expiresAt":1767225600,"refreshToken":"…","reuseSeconds":30,"thisDeviceOnly":true,"v":1}
///
/// A client key item's body also has `"kind":"clientKey"` (its type tag; a token item's has no `kind`), and
/// `accessToken` holds the PEM key.
///
/// Keys are sorted; `refreshToken`, `expiresAt` (seconds since 1970), `reuseSeconds` and `device` are omitted when absent. The
/// policy is spelled out here rather than through `AccessPolicy`'s synthesized `Codable`, so the stored format does
/// not change when that type does.
package struct KeyringItemBody: Codable {
    static let currentVersion = 1

    var v: Int
    var accessToken: String
    var refreshToken: String?
    var expiresAt: Double?
    var access: String
    var reuseSeconds: Int?
    var thisDeviceOnly: Bool
    var device: String?
    /// `clientKey` for a client key item, absent for tokens (``kindField(_:)``).
    var kind: String?

    /// The `kind` field for items of `kind`.
    static func kindField(_ kind: CredentialKind) -> String? { kind == .clientKey ? "clientKey" : nil }

    init(_ credential: StoredCredential, device: String?, kind: CredentialKind = .tokens) {
        v = Self.currentVersion
        self.kind = Self.kindField(kind)
        accessToken = credential.tokens.accessToken
        refreshToken = credential.tokens.refreshToken
        expiresAt = credential.tokens.expiresAt?.timeIntervalSince1970
        switch credential.policy.access {
        case .afterFirstUnlock:
            access = "afterFirstUnlock"
        case .userPresence(let reuse):
            access = "userPresence"
            reuseSeconds = reuse
        }
        thisDeviceOnly = credential.policy.thisDeviceOnly
        self.device = device
    }

    /// The compact JSON bytes; the caller zeroes them after use.
    func encoded() throws(CredentialError) -> Data {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return try encoder.encode(self)
        } catch {
            throw .io("cannot encode the keyring item")
        }
    }

    /// Decodes and checks a body read from the keyring.
    package static func decode(_ bytes: [UInt8]) throws(CredentialError) -> KeyringItemBody {
        let body: KeyringItemBody
        var data = Data(bytes)
        defer { zeroize(&data) }
        do {
            body = try JSONDecoder().decode(KeyringItemBody.self, from: data)
        } catch {
            throw .corrupt("the keyring item is not a ShopKit token item; delete it and sign in again")
        }
        guard body.v == currentVersion else {
            throw .corrupt("the keyring item has format version \(body.v), this ShopKit reads \(currentVersion); "
                + "upgrade ShopKit or delete the item")
        }
        return body
    }

    /// The credential it holds.
    package func credential() throws(CredentialError) -> StoredCredential {
        let policyAccess: AccessPolicy.Access
        switch access {
        case "afterFirstUnlock":
            policyAccess = .afterFirstUnlock
        case "userPresence":
            guard let reuseSeconds, reuseSeconds >= 0 else {
                throw .corrupt("the keyring item's presence policy has no valid reuse window; delete it")
            }
            policyAccess = .userPresence(reuseSeconds: reuseSeconds)
        default:
            throw .corrupt("the keyring item has an unknown access policy; upgrade ShopKit or delete the item")
        }
        return StoredCredential(
            tokens: AuthTokens(
                accessToken: accessToken, refreshToken: refreshToken,
                expiresAt: expiresAt.map { Date(timeIntervalSince1970: $0) }),
            policy: AccessPolicy(access: policyAccess, thisDeviceOnly: thisDeviceOnly))
    }
}

/// Overwrites `bytes` with zeros in a way the optimiser keeps.
@inline(never)
func zeroize(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        for index in raw.indices { raw.storeBytes(of: 0, toByteOffset: index, as: UInt8.self) }
    }
}

/// Overwrites `data` with zeros in a way the optimiser keeps.
@inline(never)
func zeroize(_ data: inout Data) {
    data.withUnsafeMutableBytes { raw in
        for index in raw.indices { raw.storeBytes(of: 0, toByteOffset: index, as: UInt8.self) }
    }
}

/// This machine's id from `/etc/machine-id` (or `/var/lib/dbus/machine-id`); nil when neither is readable.
func currentMachineID() -> String? {
    for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty { return id }
        }
    }
    return nil
}

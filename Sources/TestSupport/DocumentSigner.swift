import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// Two Ed25519 signing keys ("current" and "backup") and the verifier trusting them.
package struct DocumentSigner: Sendable {
    package let current: OpenSSLKey
    package let backup: OpenSSLKey
    package let verifier: PinSetVerifier

    /// The app identifier the verifier expects and documents carry.
    package static let audience = "com.example.shop"

    /// A distinct pin per number.
    package static func pin(_ seed: UInt8) -> SPKIPin { try! SPKIPin(sha256: [UInt8](repeating: seed, count: 32)) }

    package init() throws {
        current = try OpenSSLKey.generate(.ed25519)
        backup = try OpenSSLKey.generate(.ed25519)
        verifier = try PinSetVerifier(
            publicKeys: ["current": current.publicKeyPEM, "backup": backup.publicKeyPEM], audience: Self.audience)
    }

    /// The JWS of `json` signed by `key` (by default the key `kid` names) under `kid`.
    package func sign(_ json: String, kid: String, key: OpenSSLKey? = nil) throws -> String {
        let key = key ?? (kid == "backup" ? backup : current)
        return try CompactJWS.serialize(payload: Array(json.utf8), keyID: kid) { try key.signEd25519($0) }
    }

    /// A document for ``audience`` valid from an hour before `now` for a day (unless given), pinning
    /// api.example.com to pins 1 and 3 with strict hosts, unless other sets are given.
    package func document(
        version: Int, now: Date = Date(), issuedAt: Date? = nil, expiresAt: Date? = nil,
        pinSets: [[String: Any]]? = nil, unpinning: [String] = []
    ) -> String {
        var object: [String: Any] = [
            "version": version,
            "issuedAt": PinSetDocument.timestamp(issuedAt ?? now - 3600),
            "expiresAt": PinSetDocument.timestamp(expiresAt ?? now + 86_400),
            "strictHosts": true,
            "audience": Self.audience,
            "pinSets": pinSets ?? [["host": "api.example.com", "pins": [Self.pin(1).description, Self.pin(3).description]]],
        ]
        if !unpinning.isEmpty { object["unpinnedBaselineHosts"] = unpinning }
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}

import Foundation
import ShopKitOpenSSL
import ShopKitPinning

/// Checks signed pin-set documents (`PinSetDocument` as a compact JWS, `alg: EdDSA`) against the Ed25519
/// public keys the app ships: the current signing key and at least one backup, each under its `kid`.
///
/// Why signatures: pins fetched over a channel the pins protect would only be as good as that channel. A document
/// signed offline, with a key whose public half is compiled into the app, can travel over any channel.
///
/// - Warning: Whoever holds a signing key can publish pins the app accepts (within the rules of
///   ``verify(_:baseline:currentVersion:now:)``); keep the private keys offline, never on the servers the pins
///   protect.
public struct PinSetVerifier: Sendable {
    private let keys: [String: OpenSSLKey]

    /// A verifier trusting `publicKeys`: key id (the JWS `kid`) → Ed25519 public key as PEM `PUBLIC KEY`
    /// (`openssl pkey -in KEY -pubout`).
    ///
    /// - Throws: `PinSetDocumentError.signingKeys(_:)` for fewer than two distinct keys, a key that does not
    ///   parse or is not Ed25519.
    public init(publicKeys: [String: String]) throws(PinSetDocumentError) {
        var keys: [String: OpenSSLKey] = [:]
        var seen = Set<String>()
        for (id, pem) in publicKeys.sorted(by: { $0.key < $1.key }) {
            let parsed: [OpenSSLKey]
            do { parsed = try OpenSSLKey.publicKeys(pem: pem) } catch {
                throw .signingKeys("the key \(String(reflecting: id)) is not a PEM public key: \(error)")
            }
            guard parsed.count == 1, let key = parsed.first else {
                throw .signingKeys("the key \(String(reflecting: id)) holds \(parsed.count) PEM public keys; give one")
            }
            guard key.isEd25519 else {
                throw .signingKeys("the key \(String(reflecting: id)) is \(key.keyDescription), not Ed25519")
            }
            guard let pin = try? key.spkiPin, seen.insert(pin.description).inserted else {
                throw .signingKeys("the key \(String(reflecting: id)) repeats another key; give distinct keys")
            }
            keys[id] = key
        }
        guard keys.count >= 2 else {
            throw .signingKeys("\(keys.count) key given; give the current signing key and a backup, so a lost key "
                + "does not end updates")
        }
        self.keys = keys
    }

    /// The key ids trusted, sorted.
    var keyIDs: [String] { keys.keys.sorted() }

    /// The document in `jws` if it may replace the policy in force.
    ///
    /// Refuses (each with its `PinSetDocumentError`): a text that is not a compact JWS; an `alg` other than
    /// `EdDSA` (`none` and `HS256` included); a `crit` header; no `kid`, or one the app does not know; a signature
    /// that does not verify; a payload that is not a valid document; a version not above `currentVersion`; a
    /// document expired, or issued in the future, at `now`; a document without a set for a host pattern that
    /// `baseline` pins (unless listed in its `unpinnedBaselineHosts`).
    public func verify(
        _ jws: String, baseline: PinningPolicy, currentVersion: Int, now: Date
    ) throws(PinSetDocumentError) -> PinSetDocument {
        let document = try signedDocument(jws)
        try document.check(baseline: baseline, currentVersion: currentVersion, now: now)
        return document
    }

    /// The document in `jws` when its signature verifies under one of the keys (no version, time or baseline
    /// rule applied: what `pin-check verify-pins` and a stored document's reload start from).
    package func signedDocument(_ jws: String) throws(PinSetDocumentError) -> PinSetDocument {
        let parsed = try CompactJWS(parsing: jws)
        guard let key = keys[parsed.keyID] else { throw .unknownKey(parsed.keyID) }
        guard key.verifiesEd25519(signature: parsed.signature, of: parsed.signingInput) else {
            throw .badSignature(keyID: parsed.keyID)
        }
        return try PinSetDocument(json: parsed.payload)
    }
}

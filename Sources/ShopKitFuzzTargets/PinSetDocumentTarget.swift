import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// Signed pin-set documents: the compact-JWS parser, the Ed25519 check and the document parser.
///
/// An input with two dots is a JWS as an app would fetch it; anything else is a document's JSON, which the target
/// signs with a configured key before verifying, so the fuzzer reaches the document rules behind the signature.
enum PinSetDocumentTarget {
    /// The app's side: two configured keys, a policy in force at version 3, a fixed clock.
    private static let current = try! OpenSSLKey.generate(.ed25519)
    private static let backup = try! OpenSSLKey.generate(.ed25519)
    private static let keys = ["current": current, "backup": backup]
    /// Without the app-level limits (audience, validity, version step); `PinSetDocument.check` is given the same
    /// limits, so that verification agrees exactly with it.
    private static let verifier = try! PinSetVerifier(
        publicKeys: ["current": try! current.publicKeyPEM, "backup": try! backup.publicKeyPEM], checkingAudience: nil,
        maximumValidity: .seconds(Int64.max), maximumVersionStep: Int.max)
    private static let inForce = 3
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)
    private static let baseline = PinningPolicy(pinSets: [
        try! PinSet(host: "api.example.com", pins: [String(repeating: "A", count: 43) + "=", String(repeating: "B", count: 42) + "A="].map { "sha256/" + $0 })
    ])

    static func run(_ bytes: [UInt8]) {
        let text = String(fuzzInput: bytes)
        if text.filter({ $0 == "." }).count == 2, !text.hasPrefix("{") {
            jws(text)
        } else {
            signedPayload(bytes)
        }
    }

    /// Verified ⇒ the header says EdDSA, the signature verifies under the configured key its kid names, the version
    /// is above the one in force, and the document is valid now. Parsed ⇒ the alg was EdDSA.
    private static func jws(_ text: String) {
        let parsed: CompactJWS
        do { parsed = try CompactJWS(parsing: text) } catch {
            _ = error.description
            return
        }
        let header = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".", omittingEmptySubsequences: false)[0]
        let object = Base64URL.decode(header).flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
        FuzzCheck.require(object?["alg"] as? String == "EdDSA", "a JWS whose alg is not EdDSA was parsed")
        FuzzCheck.require(object?["crit"] == nil, "a JWS with crit was parsed")
        FuzzCheck.require(!parsed.keyID.isEmpty && !parsed.signature.isEmpty, "a JWS without kid or signature was parsed")
        let document: PinSetDocument
        do { document = try verifier.verify(text, baseline: baseline, currentVersion: inForce, now: now) } catch {
            _ = error.description
            return
        }
        let key = keys[parsed.keyID]
        FuzzCheck.require(
            key?.verifiesEd25519(signature: parsed.signature, of: parsed.signingInput) == true,
            "verified without a valid signature under a configured key")
        FuzzCheck.require(document.version > inForce, "verified a version not above the one in force")
        FuzzCheck.require(document.issuedAt < document.expiresAt && now < document.expiresAt, "verified an expired document")
        FuzzCheck.require(document.policy.version == document.version, "the policy does not carry the document's version")
    }

    /// The payload signed by a configured key verifies exactly when the document parses and passes its rules; the
    /// same JWS with one signature byte changed never verifies; an accepted document prints as JSON that parses
    /// back to the same version, dates and pins.
    private static func signedPayload(_ bytes: [UInt8]) {
        let jws = CompactJWS.serialize(payload: bytes, keyID: "current") { (try? current.signEd25519($0)) ?? [] }
        let parsedAndValid: PinSetDocument? = {
            guard let document = try? PinSetDocument(json: bytes) else { return nil }
            return (try? document.check(baseline: baseline, currentVersion: inForce, now: now, limits: verifier.limits)) == nil
                ? nil : document
        }()
        let verified = try? verifier.verify(jws, baseline: baseline, currentVersion: inForce, now: now)
        FuzzCheck.require((verified == nil) == (parsedAndValid == nil), "verification disagrees with the document rules")
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if var signature = Base64URL.decode(parts[2]) {
            signature[signature.count / 2] ^= 0x01
            parts[2] = Base64URL.encode(signature)
            FuzzCheck.require(
                (try? verifier.verify(parts.joined(separator: "."), baseline: baseline, currentVersion: inForce, now: now)) == nil,
                "a changed signature verified")
        }
        guard let document = verified else { return }
        let printed = PinSetDocument.json(
            version: document.version, issuedAt: document.issuedAt, expiresAt: document.expiresAt, policy: document.policy,
            unpinnedBaselineHosts: [])
        let again = try? PinSetDocument(json: Array(printed.utf8))
        FuzzCheck.require(again?.version == document.version, "the printed document does not parse back")
        FuzzCheck.require(
            again?.policy.pinSets.map(\.pins) == document.policy.pinSets.map(\.pins)
                && again?.policy.pinSets.map(\.hostPattern) == document.policy.pinSets.map(\.hostPattern),
            "the printed document's pins differ")
    }
}

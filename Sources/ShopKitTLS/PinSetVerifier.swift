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
    /// The app's identifier a document's `audience` must equal (nil only for `pin-check`'s signature-only check).
    private let audience: String?
    /// The longest validity and the largest version step accepted.
    package let limits: PinSetDocument.Limits

    /// The default ``init(publicKeys:audience:maximumValidity:maximumVersionStep:)`` `maximumValidity`: 180 days,
    /// twice `pin-check pins-document`'s default of 90, so a stolen key's document ends within half a year.
    public static let defaultMaximumValidity: Duration = .seconds(Int64(PinSetDocument.Limits.standard.maximumValidity))

    /// A verifier trusting `publicKeys` for documents addressed to `audience`.
    ///
    /// - Parameters:
    ///   - publicKeys: key id (the JWS `kid`) → Ed25519 public key as PEM `PUBLIC KEY`
    ///     (`openssl pkey -in KEY -pubout`); at least two, the current signing key and a backup.
    ///   - audience: the app's identifier (its bundle id, say); a document is accepted only if its `audience`
    ///     is exactly this, so one organisation's signing key cannot move one app's document into another.
    ///   - maximumValidity: the longest `expiresAt` − `issuedAt` accepted (default 180 days).
    ///   - maximumVersionStep: how far above the version in force a document's version may be (default 1000),
    ///     so no document can take the last versions and leave no room for the next ones.
    /// - Throws: `PinSetDocumentError.signingKeys(_:)` for fewer than two distinct keys, a key that does not
    ///   parse or is not Ed25519, an empty audience, or a limit that is not positive.
    public init(
        publicKeys: [String: String], audience: String, maximumValidity: Duration = PinSetVerifier.defaultMaximumValidity,
        maximumVersionStep: Int = 1000
    ) throws(PinSetDocumentError) {
        guard !audience.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .signingKeys("the audience is empty; give the app's identifier, as documents name it")
        }
        try self.init(
            publicKeys: publicKeys, checkingAudience: audience, maximumValidity: maximumValidity,
            maximumVersionStep: maximumVersionStep)
    }

    /// The same; a nil `checkingAudience` checks signatures whatever the audience (`pin-check --pins-document`).
    package init(
        publicKeys: [String: String], checkingAudience audience: String?,
        maximumValidity: Duration = PinSetVerifier.defaultMaximumValidity,
        maximumVersionStep: Int = PinSetDocument.Limits.standard.maximumVersionStep
    ) throws(PinSetDocumentError) {
        let validity = Double(maximumValidity.components.seconds)
        guard validity > 0, maximumVersionStep > 0 else {
            throw .signingKeys("maximumValidity and maximumVersionStep must be above 0")
        }
        self.audience = audience
        self.limits = .init(maximumValidity: validity, maximumVersionStep: maximumVersionStep)
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
    /// `EdDSA` (`none` and `HS256` included); a `crit` header; no `kid`, or one the app does not know; a `typ`
    /// other than `shopkit-pins+jws`; a duplicate member name in the header or the payload; a signature that does
    /// not verify; a payload that is not a valid document; an `audience` other than the app's; a version not
    /// above `currentVersion`, or more than `maximumVersionStep` above it; a document valid for longer than
    /// `maximumValidity`, expired, or issued in the future, at `now`; a document that weakens a host pattern
    /// `baseline` pins (no enforced set live until the document expires, unless listed in its
    /// `unpinnedBaselineHosts`); a document that allows unpinned hosts over a strict `baseline`, unless the
    /// baseline permits it (`documentsMayAllowUnpinnedHosts`).
    public func verify(
        _ jws: String, baseline: PinningPolicy, currentVersion: Int, now: Date
    ) throws(PinSetDocumentError) -> PinSetDocument {
        let document = try signedDocument(jws)
        try document.check(baseline: baseline, currentVersion: currentVersion, now: now, limits: limits)
        return document
    }

    /// The document in `jws` when its signature verifies under one of the keys and names the app's audience (no
    /// version, time or baseline rule applied: what `pin-check verify-pins` and a stored document's reload start from).
    package func signedDocument(_ jws: String) throws(PinSetDocumentError) -> PinSetDocument {
        let document = try PinSetDocument(json: verifiedPayload(jws, kind: .pinSet))
        try checkAudience(document.audience)
        return document
    }

    /// The CT log-list document in `jws` if it may replace the log list in force.
    ///
    /// The same keys and rules as ``verify(_:baseline:currentVersion:now:)``, for a `CTLogListDocument`: refuses a
    /// malformed JWS, an `alg` other than `EdDSA`, a `crit` header, an unknown `kid`, a `typ` other than
    /// `shopkit-ct-log-list+jws` (a pin-set document among them: `PinSetDocumentError.wrongLogListType`), a
    /// duplicate member name, a signature that does not verify, a payload that is not a valid log-list document
    /// (`PinSetDocumentError.malformedLogListDocument`), another app's `audience`, a version not above
    /// `currentVersion` (the rollback floor of log-list documents) or more than `maximumVersionStep` above it, and a
    /// document valid for longer than `maximumValidity`, expired, or issued in the future at `now`.
    ///
    /// - Throws: `CTLogListDocumentError`, its `reason` the `PinSetDocumentError` case of the refusal, its message
    ///   naming the CT log-list document.
    public func verifyLogList(
        _ jws: String, currentVersion: Int, now: Date
    ) throws(CTLogListDocumentError) -> CTLogListDocument {
        let document = try signedLogListDocument(jws)
        try checkLogList(document, currentVersion: currentVersion, now: now)
        return document
    }

    /// The log-list document in `jws` when its signature verifies under one of the keys and names the app's
    /// audience (no version or time rule applied: what a stored document's reload starts from).
    package func signedLogListDocument(_ jws: String) throws(CTLogListDocumentError) -> CTLogListDocument {
        do throws(PinSetDocumentError) {
            let document = try CTLogListDocument(json: verifiedPayload(jws, kind: .ctLogList))
            try checkAudience(document.audience)
            return document
        } catch {
            throw CTLogListDocumentError(reason: error)
        }
    }

    /// Checks that a signed log-list `document` may replace the one in force (`currentVersion`, the rollback floor)
    /// at `now`, under this verifier's limits: the rules ``verifyLogList(_:currentVersion:now:)`` applies after the
    /// signature, and a stored document's reload applies alone.
    package func checkLogList(
        _ document: CTLogListDocument, currentVersion: Int, now: Date
    ) throws(CTLogListDocumentError) {
        do throws(PinSetDocumentError) {
            try document.check(currentVersion: currentVersion, now: now, limits: limits)
        } catch {
            throw CTLogListDocumentError(reason: error)
        }
    }

    /// The payload of `jws`, a JWS of `kind` whose signature verifies under the key its `kid` names.
    private func verifiedPayload(_ jws: String, kind: CompactJWS.Kind) throws(PinSetDocumentError) -> [UInt8] {
        let parsed = try CompactJWS(parsing: jws, kind: kind)
        guard let key = keys[parsed.keyID] else { throw .unknownKey(parsed.keyID) }
        guard key.verifiesEd25519(signature: parsed.signature, of: parsed.signingInput) else {
            throw .badSignature(keyID: parsed.keyID)
        }
        return parsed.payload
    }

    /// Refuses a document whose `audience` is not the app's (when the verifier checks audiences).
    private func checkAudience(_ documentAudience: String?) throws(PinSetDocumentError) {
        // Byte for byte: Swift's `==` on strings is canonical equivalence (a decomposed `é`, or the Kelvin sign for
        // `K`, would equal another app's identifier).
        if let audience, !(documentAudience.map { Array($0.utf8) == Array(audience.utf8) } ?? false) {
            throw .wrongAudience(document: documentAudience, app: audience)
        }
    }
}

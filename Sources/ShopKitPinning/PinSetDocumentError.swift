import Foundation

/// Why a signed pin-set document was refused. A refused document never changes the policy in force.
///
/// Each message says whose input is at fault: the publisher's document or signature, or the app's own
/// configuration (its signing keys).
public enum PinSetDocumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not a JWS in compact form (three base64url parts, no padding), or is too large.
    case malformedJWS(String)
    /// The JWS header is not a JSON object with string `alg` and `kid`.
    case malformedHeader(String)
    /// The header's `alg` is not `EdDSA` (this refuses `none`, `HS256` and every other algorithm).
    case algorithmNotAllowed(String)
    /// The header lists `crit` extensions, which ShopKit does not implement (RFC 7515 §4.1.11).
    case unsupportedCritical([String])
    /// The header names no key (`kid`).
    case missingKeyID
    /// The header's `kid` is none of the app's signing keys.
    case unknownKey(String)
    /// The signature does not verify under the key the header names (bad, missing or truncated).
    case badSignature(keyID: String)
    /// The signed payload is not a valid pin-set document; the message names the field.
    case malformedDocument(String)
    /// The header's or the payload's JSON nests objects and arrays deeper than `maximumDepth`: valid JSON, but far
    /// deeper than any pin-set document (which needs four levels), so it is not read.
    case nestedTooDeeply(maximumDepth: Int)
    /// A pin of the set for `host` (at `index` in its `pins`) is not a pin in its one canonical form
    /// (`sha256/` and the 44-character base64 of a 32-byte digest, nothing around it): one document has one text.
    case badPin(host: String, index: Int, PinParseError)
    /// The document's version is not above the version of the policy in force (a replay or a rollback).
    case notNewer(version: Int, current: Int)
    /// The document's `expiresAt` has passed.
    case expired(expiresAt: Date)
    /// The document's `issuedAt` is in the future (beyond the allowed clock skew).
    case notYetValid(issuedAt: Date)
    /// The document pins no longer a host pattern the app's baseline pins, and does not list it in
    /// `unpinnedBaselineHosts`.
    case dropsBaselineHost(String)
    /// The document keeps a set for a host pattern the app's baseline pins, but not one that holds: the set it
    /// applies to (some host of) the pattern is report-only, or stops being enforced before the document expires.
    /// The reason names that set.
    case weakensBaselineHost(String, reason: String)
    /// The app's baseline refuses hosts no set covers (`unpinnedHosts: .refuse`) and the document would allow them
    /// (`strictHosts` false or left out), which the app does not permit (`documentsMayAllowUnpinnedHosts`).
    case relaxesStrictHosts
    /// The app's baseline is strict and does not allow documents to relax it, and the document has a report-only
    /// set for this pattern: the hosts it covers would be reached without enforced pins.
    case reportOnlyUnderStrictHosts(HostPattern)
    /// The app's signing keys are unusable: fewer than two, not Ed25519, or a repeated key id (or its audience
    /// is empty).
    case signingKeys(String)
    /// The JWS header's `typ` is not ShopKit's `shopkit-pins+jws` (nil: no `typ`), so the token was made for
    /// something else (a JWT, another JOSE format) and is never read as pins.
    case wrongType(String?)
    /// The JWS header's `typ` is not `shopkit-ct-log-list+jws` (nil: no `typ`): a pin-set document or another
    /// token given where a CT log-list document (``CTLogListDocument``) was expected, never read as a log list.
    case wrongLogListType(String?)
    /// The signed payload is not a valid CT log-list document (``CTLogListDocument``); the message names the field.
    case malformedLogListDocument(String)
    /// The document's `audience` (nil: none) is not the app's: a document for another app, or for none.
    case wrongAudience(document: String?, app: String)
    /// The document is valid for longer (`expiresAt` − `issuedAt`, in whole days, rounded up) than the app's
    /// maximum.
    case validityTooLong(days: Int, maximumDays: Int)
    /// The document's version jumps further above the version in force than the app allows: a document that
    /// would leave no room for the next ones.
    case versionTooFar(version: Int, current: Int, maximumStep: Int)

    /// One line of printable text: a document's own strings (a host, a pin, a field) can carry control characters,
    /// which a terminal would act on (an escape sequence) or a log would split (a newline, U+2028) or reorder
    /// (U+202E); they are written as `\u{1B}` escapes.
    public var description: String { description(document: Self.pinSetKind) }

    /// What the messages call a pin-set document.
    static let pinSetKind = "pin-set document"

    /// The same, naming the kind of document (`"CT log-list document"`, as `CTLogListDocumentError` does) in the
    /// messages both kinds can get (the JWS, the signature, the payload, the version, the time and the audience),
    /// with pin-check's hints for that kind (`sign-pins` or `sign-log-list`).
    func description(document kind: String) -> String { printableOnOneLine(text(kind)) }

    private func text(_ kind: String) -> String {
        switch self {
        case .malformedJWS(let problem):
            return "the \(kind) is not a compact JWS (publisher): \(problem)"
        case .malformedHeader(let problem):
            return "the \(kind)'s JWS header is invalid (publisher): \(problem)"
        case .algorithmNotAllowed(let alg):
            return "the \(kind) is signed with alg \(String(reflecting: alg)) (publisher): only EdDSA "
                + "(Ed25519) is accepted; sign it with pin-check " + (kind == Self.pinSetKind ? "sign-pins" : "sign-log-list")
        case .unsupportedCritical(let names):
            return "the \(kind)'s header marks \(names) critical (publisher): no JWS extension is supported"
        case .missingKeyID:
            return "the \(kind)'s header has no kid (publisher): name the signing key that signed it"
        case .unknownKey(let kid):
            return "the \(kind) is signed with key \(String(reflecting: kid)), which the app does not know "
                + "(publisher, or an app without that key): sign with one of the app's signing keys"
        case .badSignature(let kid):
            return "the \(kind)'s signature does not verify under key \(String(reflecting: kid)) "
                + "(publisher, or a document altered in transit)"
        case .malformedDocument(let problem):
            return "the \(kind) is invalid (publisher): \(problem)"
        case .nestedTooDeeply(let depth):
            return "the \(kind)'s JSON nests objects and arrays more than \(depth) levels deep (publisher): "
                + (kind == Self.pinSetKind
                    ? "a pin-set document needs four (document, pinSets, a set, its pins); write it as docs/pin-set-document.md shows"
                    : "no document needs that many")
        case .badPin(let host, let index, let problem):
            return "the pin-set document's set for \(host) has a bad pin at pins[\(index)] (publisher): \(problem)"
        case .notNewer(let version, let current):
            return "the \(kind) has version \(version), not above the version in force (\(current)): "
                + "a replayed or rolled-back document; publish a higher version"
        case .expired(let expiresAt):
            return "the \(kind) expired at \(PinSetDocument.timestamp(expiresAt)) (publisher): publish a fresh one"
        case .notYetValid(let issuedAt):
            return "the \(kind) is issued at \(PinSetDocument.timestamp(issuedAt)), in the future "
                + "(publisher's or this machine's clock is wrong)"
        case .dropsBaselineHost(let pattern):
            return "the pin-set document has no pin set for \(pattern), which the app's baseline pins (publisher): "
                + "add one, or list \(pattern) in unpinnedBaselineHosts to unpin it deliberately"
        case .weakensBaselineHost(let pattern, let reason):
            return "the pin-set document weakens the pins of \(pattern), which the app's baseline pins (publisher): "
                + "\(reason); make that set enforced and live until the document expires, or list \(pattern) in "
                + "unpinnedBaselineHosts to unpin it deliberately"
        case .relaxesStrictHosts:
            return "the pin-set document allows hosts without pins (strictHosts false or missing), but the app's "
                + "baseline refuses them (publisher): set \"strictHosts\": true (pin-check pins-document --strict-hosts)"
        case .reportOnlyUnderStrictHosts(let pattern):
            return "the pin-set document has a report-only set for \(pattern), but the app's baseline is strict "
                + "(publisher): the hosts it covers would be reached without enforced pins; enforce the set, or have "
                + "the app allow it in code (PinningPolicy.documentsMayAllowUnpinnedHosts)"
        case .signingKeys(let problem):
            return "the app's pin-set signing keys are unusable (app configuration): \(problem)"
        case .wrongType(let typ) where typ?.lowercased().hasSuffix(CompactJWS.logListType) == true:
            return "the pin-set document's header has typ \(String(reflecting: typ!)) (publisher): it is a CT log-list "
                + "document, never read as pins; verify it with PinSetVerifier.verifyLogList"
        case .wrongType(let typ):
            return "the pin-set document's header has typ \(typ.map { String(reflecting: $0) } ?? "missing") (publisher): "
                + "a pin-set document has typ \"shopkit-pins+jws\"; sign it with pin-check sign-pins"
        case .wrongLogListType(let typ):
            return "the CT log-list document's header has typ \(typ.map { String(reflecting: $0) } ?? "missing") "
                + "(publisher): a CT log-list document has typ \"\(CompactJWS.logListType)\""
                + (typ?.lowercased().hasSuffix(CompactJWS.type) == true ? "; this is a pin-set document, never read as a log list" : "")
        case .malformedLogListDocument(let problem):
            return "the CT log-list document is invalid (publisher): \(problem)"
        case .wrongAudience(let document, let app):
            return "the \(kind) is for \(document.map { "audience \(String(reflecting: $0))" } ?? "no audience"), "
                + "not this app's \(String(reflecting: app)) (publisher): publish a document with \"audience\": "
                + "\(String(reflecting: app))"
        case .validityTooLong(let days, let maximum):
            return "the \(kind) is valid for \(days) days, more than the app's maximum of \(maximum) "
                + "(publisher): publish one with an earlier expiresAt (pin-check "
                + (kind == Self.pinSetKind ? "pins-document" : "log-list-document") + " --valid-days)"
        case .versionTooFar(let version, let current, let step):
            return "the \(kind) has version \(version), more than \(step) above the version in force "
                + "(\(current)) (publisher): versions count up by small steps; publish \(current + 1)"
        }
    }
}

extension PinSetDocumentError {
    /// Checks a signed document's JSON before it is decoded: unique member names (RFC 7493), integers written as
    /// integers, at most `maximumDepth` levels; `malformed` makes the document kind's error from the problem.
    static func checkJSON(
        _ json: [UInt8], maximumDepth: Int, malformed: (String) -> PinSetDocumentError
    ) throws(PinSetDocumentError) {
        switch JSONDuplicateCheck.scan(json, integersOnly: true, maximumDepth: maximumDepth) {
        case .unique: return
        case .tooDeep(let limit): throw .nestedTooDeeply(maximumDepth: limit)
        case .duplicate(let name, let path):
            throw malformed(
                "member \(String(reflecting: name)) appears twice in \(path.isEmpty ? "the document" : path); readers "
                    + "disagree on which one counts (RFC 7493), so keep one")
        case .malformed(let problem): throw malformed("not JSON (\(problem))")
        }
    }
}

extension PinSetDocumentError {
    /// The fields every signed document shares, checked alike for each kind: a version from 1 to
    /// `PinSetDocument.maximumVersion`, a non-blank audience when there is one, and `issuedAt` before `expiresAt`,
    /// each written exactly as `YYYY-MM-DDTHH:MM:SSZ`. Returns the two times; `malformed` makes the kind's error.
    static func checkEnvelope(
        version: Int, audience: String?, issuedAt: String, expiresAt: String, malformed: (String) -> PinSetDocumentError
    ) throws(PinSetDocumentError) -> (issuedAt: Date, expiresAt: Date) {
        guard (1...PinSetDocument.maximumVersion).contains(version) else {
            throw malformed("version must be an integer from 1 to \(PinSetDocument.maximumVersion)")
        }
        if let audience, audience.trimmingCharacters(in: .whitespaces).isEmpty {
            throw malformed("audience is empty; give the app's identifier")
        }
        let issued = try date(issuedAt, field: "issuedAt", malformed: malformed)
        let expires = try date(expiresAt, field: "expiresAt", malformed: malformed)
        guard issued < expires else { throw malformed("expiresAt must be after issuedAt") }
        return (issued, expires)
    }

    /// A document time, exactly as documents write them (`YYYY-MM-DDTHH:MM:SSZ`, ASCII, UTC, every field in range):
    /// offsets, other digits and out-of-range fields (`+14:00`, `２０２７`, February 30, 24:00) are refused
    /// (``UTCTimestamp``), never read as another instant than a reviewer reads.
    static func date(
        _ text: String, field: String, malformed: (String) -> PinSetDocumentError
    ) throws(PinSetDocumentError) -> Date {
        guard let date = UTCTimestamp.parse(text, fractionalSeconds: false) else {
            throw malformed(
                "\(field) \(String(reflecting: text)) is not a UTC time written as YYYY-MM-DDTHH:MM:SSZ, such as 2027-01-01T00:00:00Z")
        }
        return date
    }
}

extension PinSetDocumentError {
    /// Whether a signed document of `version`, valid from `issuedAt` to `expiresAt`, may replace the one in force
    /// (`currentVersion`, the rollback floor) at `now`, checked alike for each kind: valid for at most
    /// `limits.maximumValidity`, a version above the current one by at most `limits.maximumVersionStep`, not
    /// expired, and not issued in the future (beyond `PinSetDocument.clockSkew`).
    static func checkAcceptance(
        version: Int, currentVersion: Int, issuedAt: Date, expiresAt: Date, now: Date, limits: PinSetDocument.Limits
    ) throws(PinSetDocumentError) {
        let validity = expiresAt.timeIntervalSince(issuedAt)
        guard validity <= limits.maximumValidity else {
            throw .validityTooLong(
                days: Int((validity / 86_400).rounded(.up)), maximumDays: Int((limits.maximumValidity / 86_400).rounded(.down)))
        }
        // Subtracted with overflow reported: an app's version in force near Int.min must not trap on a document.
        let step = version.subtractingReportingOverflow(currentVersion)
        guard version <= currentVersion || (!step.overflow && step.partialValue <= limits.maximumVersionStep) else {
            throw .versionTooFar(version: version, current: currentVersion, maximumStep: limits.maximumVersionStep)
        }
        guard version > currentVersion else { throw .notNewer(version: version, current: currentVersion) }
        guard now < expiresAt else { throw .expired(expiresAt: expiresAt) }
        guard issuedAt <= now.addingTimeInterval(PinSetDocument.clockSkew) else { throw .notYetValid(issuedAt: issuedAt) }
    }
}

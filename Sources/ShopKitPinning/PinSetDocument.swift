import Foundation

/// A pin-set document: the pins an app applies in place of its compiled-in baseline, published signed (a JWS
/// with `EdDSA` and `typ: shopkit-pins+jws`; ShopKitTLS's `PinSetVerifier` checks it) so pins can rotate without
/// a release.
///
/// The payload is JSON with the fields of a pins file and a policy, plus a version, a validity window and the app
/// it is for (every field and rule, a complete example and a JSON Schema: `docs/pin-set-document.md`):
///
///     {
///       "version": 4,
///       "issuedAt": "2026-11-26T09:00:00Z",
///       "expiresAt": "2027-02-24T09:00:00Z",
///       "audience": "com.example.shop",
///       "strictHosts": true,
///       "pinSets": [
///         {"host": "api.example.com", "pins": ["sha256/…current…", "sha256/…backup…"]},
///         {"host": "*.cdn.example.com", "pins": ["sha256/…", "sha256/…"], "reportOnly": true,
///          "expiration": "2027-01-01T00:00:00Z"}
///       ],
///       "unpinnedBaselineHosts": ["legacy.example.com"]
///     }
///
/// `version` is an integer from 1 to 2^53−1 that every new document raises; times are UTC in ISO 8601
/// (`YYYY-MM-DDTHH:MM:SSZ`); `audience` names the app (`PinSetVerifier` requires its own); each set needs two
/// distinct pins (the current key and a backup); `strictHosts` (default false) refuses hosts no set covers, and
/// cannot turn a strict baseline lax; `unpinnedBaselineHosts` lists the baseline's host patterns the document stops
/// pinning on purpose (without it, a baseline host must keep an enforced set live until the document expires).
/// Unknown fields and repeated member names are refused, so a typo cannot silently drop a setting and two readers
/// cannot read two documents.
public struct PinSetDocument: Sendable {
    /// The document's version: a document is applied only above the version in force.
    public let version: Int
    /// When the document was issued.
    public let issuedAt: Date
    /// When the document stops being applied (the app then falls back to its baseline, never to no pins).
    public let expiresAt: Date
    /// The policy the document describes; its `version` is the document's.
    public let policy: PinningPolicy
    /// The app the document is for (its `audience`: an identifier such as a bundle id); `PinSetVerifier` accepts
    /// only its own.
    public let audience: String?
    /// The largest version: the largest integer every JSON reader holds exactly (I-JSON, RFC 7493 §2.2).
    package static let maximumVersion = 9_007_199_254_740_991
    /// The JSON the document was read from (what its signature covers): two documents are the same document when
    /// it is the same.
    package let json: [UInt8]
    /// Baseline host patterns the document unpins deliberately.
    public let unpinnedBaselineHosts: [HostPattern]

    /// How far in the future `issuedAt` may be (clock skew between publisher and app).
    package static let clockSkew: TimeInterval = 5 * 60
    /// How deep a document's JSON may nest objects and arrays: a document needs four levels (the document,
    /// `pinSets`, a set, its `pins`); deeper JSON is refused as ``PinSetDocumentError/nestedTooDeeply(maximumDepth:)``,
    /// well before a decoder's own limit would report it as "not JSON".
    package static let maximumDepth = 16

    /// Parses a document's JSON.
    ///
    /// - Throws: ``PinSetDocumentError/malformedDocument(_:)`` naming the field at fault.
    package init(json: [UInt8]) throws(PinSetDocumentError) {
        // Every number in a document is an integer, written as one: `1.0` or `5.9999999999999999` would be read as
        // a version that another reader (or the reviewer) does not see.
        try PinSetDocumentError.checkJSON(json, maximumDepth: Self.maximumDepth, malformed: { .malformedDocument($0) })
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(json))
        } catch let error as PinSetDocumentError {
            throw error
        } catch let error as DecodingError {
            throw .malformedDocument(Self.describe(error))
        } catch {
            throw .malformedDocument("not JSON")
        }
        let (issuedAt, expiresAt) = try PinSetDocumentError.checkEnvelope(
            version: wire.version, audience: wire.audience, issuedAt: wire.issuedAt, expiresAt: wire.expiresAt,
            malformed: { .malformedDocument($0) })
        var sets: [PinSet] = []
        for (index, set) in wire.pinSets.enumerated() {
            let expiration = try set.expiration.map { text throws(PinSetDocumentError) in
                try Self.date(text, field: "pinSets[\(index)].expiration")
            }
            // Each pin exactly in its canonical text: the one parser's rules, and OkHttp's form only (curl's
            // `sha256//` is the same digest written another way).
            for (position, text) in set.pins.enumerated() {
                let pin: SPKIPin
                do { pin = try SPKIPin(text) } catch { throw .badPin(host: set.host, index: position, error) }
                guard pin.description == text else { throw .badPin(host: set.host, index: position, .curlForm(pin)) }
            }
            let pinSet: PinSet
            do {
                pinSet = try PinSet(host: set.host, pins: set.pins, expiration: expiration, reportOnly: set.reportOnly)
            } catch {
                throw .malformedDocument("pinSets[\(index)] (\(set.host)): \(error)")
            }
            guard !sets.contains(where: { $0.hostPattern == pinSet.hostPattern }) else {
                throw .malformedDocument("pinSets[\(index)]: a second set for \(pinSet.hostPattern); merge their pins")
            }
            sets.append(pinSet)
        }
        guard !sets.isEmpty else { throw .malformedDocument("pinSets is empty: a document pins at least one host") }
        var unpinned: [HostPattern] = []
        for text in wire.unpinnedBaselineHosts {
            do { unpinned.append(try HostPattern(text)) } catch {
                throw .malformedDocument("unpinnedBaselineHosts: \(error)")
            }
        }
        version = wire.version
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        policy = PinningPolicy(pinSets: sets, unpinnedHosts: wire.strictHosts ? .refuse : .allow, version: wire.version)
        unpinnedBaselineHosts = unpinned
        audience = wire.audience
        self.json = json
    }

    /// Checks that the document may replace the policy in force (`currentVersion`) over `baseline` at `now`: its
    /// version is above, it is valid at `now` (with ``clockSkew`` for `issuedAt`), it keeps every host pattern the
    /// baseline pins as pinned as the baseline does (an enforced set, live until the document expires; see
    /// `checkBaselineHosts`), unless it lists the pattern in `unpinnedBaselineHosts`, and it keeps a strict
    /// baseline strict unless the baseline allows otherwise (`documentsMayAllowUnpinnedHosts`): not lax, and with
    /// no report-only set.
    package func check(
        baseline: PinningPolicy, currentVersion: Int, now: Date, limits: Limits = .standard
    ) throws(PinSetDocumentError) {
        try PinSetDocumentError.checkAcceptance(
            version: version, currentVersion: currentVersion, issuedAt: issuedAt, expiresAt: expiresAt, now: now,
            limits: limits)
        if baseline.unpinnedHosts == .refuse, !baseline.documentsMayAllowUnpinnedHosts {
            if policy.unpinnedHosts == .allow { throw .relaxesStrictHosts }
            // A strict app reaches a host only with enforced pins: a report-only set would let every host it covers
            // (`**.co.uk`) be reached with none, as a lax document would.
            if let set = policy.pinSets.first(where: \.reportOnly) { throw .reportOnlyUnderStrictHosts(set.hostPattern) }
        }
        try checkBaselineHosts(baseline)
    }

    /// How long a document may be valid and how far its version may jump: the same for every way a document
    /// applies (`PinSetVerifier`, and `PinsFileWatcher`'s local file with the standard limits).
    package struct Limits: Sendable {
        /// The longest `expiresAt` − `issuedAt` accepted, in seconds.
        package var maximumValidity: TimeInterval
        /// How far above the version in force a document's version may be, so that no document can take the last
        /// versions and leave no room for the next ones.
        package var maximumVersionStep: Int

        /// 180 days (twice `pin-check pins-document`'s default of 90, so a stolen key's document ends within half a
        /// year) and 1000 versions.
        package static let standard = Limits(maximumValidity: 180 * 86_400, maximumVersionStep: 1000)

        package init(maximumValidity: TimeInterval, maximumVersionStep: Int) {
            self.maximumValidity = maximumValidity
            self.maximumVersionStep = maximumVersionStep
        }
    }

    /// Whether the document has expired at `now`: from the instant `expiresAt` names on, as a pin set's expiration
    /// (`PinSet.isExpired(at:)`). The one rule every check of a document's expiry uses (the checks, the expiry
    /// timers, `sign-pins`).
    package func isExpired(at now: Date) -> Bool { now >= expiresAt }

    /// The policy to put in force for this document over `baseline` (the one it was checked against): its own,
    /// which gives way to `baseline` at `expiresAt` in every evaluation, whenever the timer that replaces it runs.
    package func policy(over baseline: PinningPolicy) -> PinningPolicy {
        var policy = self.policy
        policy.expiry = .init(at: expiresAt, then: baseline)
        return policy
    }

    /// The JSON of a document (sorted keys; what `pin-check` emits for signing).
    package static func json(
        version: Int, issuedAt: Date, expiresAt: Date, policy: PinningPolicy, unpinnedBaselineHosts: [String] = [],
        audience: String? = nil
    ) -> String {
        var object: [String: Any] = [
            "version": version, "issuedAt": timestamp(issuedAt), "expiresAt": timestamp(expiresAt),
            "strictHosts": policy.unpinnedHosts == .refuse,
            "pinSets": policy.pinSets.map { set -> [String: Any] in
                var entry: [String: Any] = ["host": set.hostPattern.pattern, "pins": set.pins.map(\.description)]
                if set.reportOnly { entry["reportOnly"] = true }
                if let expiration = set.expiration { entry["expiration"] = timestamp(expiration) }
                return entry
            },
        ]
        if !unpinnedBaselineHosts.isEmpty { object["unpinnedBaselineHosts"] = unpinnedBaselineHosts }
        if let audience { object["audience"] = audience }
        let data = (try? JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// `date` as the document writes times: ISO 8601 in UTC, whole seconds.
    package static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    private static func date(_ text: String, field: String) throws(PinSetDocumentError) -> Date {
        try PinSetDocumentError.date(text, field: field, malformed: { .malformedDocument($0) })
    }

    /// What a Swift type the decoder expected is called in JSON: a user never sees Swift's type names.
    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: return "an integer"
        case is Bool.Type: return "true or false"
        case is String.Type: return "a string"
        case is [Any].Type, is [String].Type, is [WireSet].Type: return "a JSON array"
        default: return "a JSON object"
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context.codingPath)
            return "missing field \(parent.isEmpty ? "" : parent + ".")\(key.stringValue)"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            return "\(field.isEmpty ? "the document" : field) must be \(kind(type))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "field \(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "not a pin-set document"
        }
    }
}

/// The document's JSON, decoded strictly: unknown fields and wrong types are refused.
private struct Wire: Decodable {
    let version: Int
    let issuedAt: String
    let expiresAt: String
    let strictHosts: Bool
    let pinSets: [WireSet]
    let unpinnedBaselineHosts: [String]
    let audience: String?

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: FieldKey.self)
        try container.refuseUnknown(
            ["version", "issuedAt", "expiresAt", "strictHosts", "pinSets", "unpinnedBaselineHosts", "audience"])
        audience = try container.decodeOptional(String.self, forKey: "audience")
        version = try container.decode(Int.self, forKey: "version")
        issuedAt = try container.decode(String.self, forKey: "issuedAt")
        expiresAt = try container.decode(String.self, forKey: "expiresAt")
        strictHosts = try container.decodeOptional(Bool.self, forKey: "strictHosts") ?? false
        pinSets = try container.decode([WireSet].self, forKey: "pinSets")
        unpinnedBaselineHosts = try container.decodeOptional([String].self, forKey: "unpinnedBaselineHosts") ?? []
    }
}

private struct WireSet: Decodable {
    let host: String
    let pins: [String]
    let reportOnly: Bool
    let expiration: String?

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: FieldKey.self)
        try container.refuseUnknown(["host", "pins", "reportOnly", "expiration"])
        host = try container.decode(String.self, forKey: "host")
        pins = try container.decode([String].self, forKey: "pins")
        reportOnly = try container.decodeOptional(Bool.self, forKey: "reportOnly") ?? false
        expiration = try container.decodeOptional(String.self, forKey: "expiration")
    }
}

private struct FieldKey: CodingKey, ExpressibleByStringLiteral {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }
}

extension KeyedDecodingContainer where Key == FieldKey {
    /// An optional member: absent is nil; `null` is refused, so that a document has one way to leave a member
    /// out (and no reader takes `null` for a value).
    fileprivate func decodeOptional<T: Decodable>(_ type: T.Type, forKey key: FieldKey) throws -> T? {
        guard contains(key) else { return nil }
        if try decodeNil(forKey: key) {
            let at = (codingPath + [key]).map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            throw PinSetDocumentError.malformedDocument(
                "\(at.drop { $0 == "." }) is null; leave the member out to omit it (null is not a value here)")
        }
        return try decode(type, forKey: key)
    }

    fileprivate func refuseUnknown(_ known: Set<String>) throws {
        if let unknown = allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            let at = codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            throw PinSetDocumentError.malformedDocument(
                "unknown field \(String(reflecting: unknown))\(at.isEmpty ? "" : " in " + at.drop { $0 == "." }); "
                    + "known fields: \(known.sorted().joined(separator: ", "))")
        }
    }
}

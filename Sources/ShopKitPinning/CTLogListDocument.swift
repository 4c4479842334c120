import Foundation

/// A CT log-list document: the log list an app judges SCTs against, published signed so it can be replaced at run
/// time without a release, with the machinery of pin-set documents (the same Ed25519 keys, audience, rollback floor
/// and expiry; ShopKitTLS's `PinSetVerifier.verifyLogList(_:currentVersion:now:)` checks it).
///
/// A compact JWS (`alg: EdDSA`) whose header has `typ: shopkit-ct-log-list+jws`, and whose payload is:
///
///     {
///       "version": 7,
///       "issuedAt": "2026-11-28T09:00:00Z",
///       "expiresAt": "2027-02-26T09:00:00Z",
///       "audience": "com.example.shop",
///       "logList": { "log_list_timestamp": "2026-11-27T12:00:00Z", "operators": [ … ] }
///     }
///
/// `logList` is a log list in Chrome's v3 schema, read as strictly as ``CTLogList/init(json:)``. The `typ` keeps the
/// two kinds apart: a pin-set document (`shopkit-pins+jws`) is never read as a log list, nor a log-list document as
/// pins, although the same keys sign both; and each payload refuses the other's fields. `version` is the rollback
/// floor of log-list documents, counted apart from pin-set documents' versions.
public struct CTLogListDocument: Sendable {
    /// The document's version: a document is applied only above the version in force.
    public let version: Int
    /// When the document was issued.
    public let issuedAt: Date
    /// When the document stops being applied.
    public let expiresAt: Date
    /// The app the document is for; `PinSetVerifier` accepts only its own.
    public let audience: String?
    /// The log list.
    public let logList: CTLogList
    /// The JSON the document was read from (what its signature covers).
    package let json: [UInt8]

    /// How deep a document's JSON may nest: one level above a list's (``CTLogList/maximumDepth``), so every list
    /// that can be read alone can be published in a document.
    package static let maximumDepth = CTLogList.maximumDepth + 1

    /// Parses a document's JSON.
    ///
    /// - Throws: ``PinSetDocumentError/malformedLogListDocument(_:)`` naming the field at fault, or
    ///   ``PinSetDocumentError/nestedTooDeeply(maximumDepth:)``.
    package init(json: [UInt8]) throws(PinSetDocumentError) {
        try PinSetDocumentError.checkJSON(json, maximumDepth: Self.maximumDepth, malformed: { .malformedLogListDocument($0) })
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(json))
        } catch let error as CTLogListError {
            throw .malformedLogListDocument(Self.text(error))
        } catch let error as DecodingError {
            throw .malformedLogListDocument(Self.text(CTLogListError(error)))
        } catch {
            throw .malformedLogListDocument("not JSON")
        }
        let (issuedAt, expiresAt) = try PinSetDocumentError.checkEnvelope(
            version: wire.version, audience: wire.audience, issuedAt: wire.issuedAt, expiresAt: wire.expiresAt,
            malformed: { .malformedLogListDocument($0) })
        let logList: CTLogList
        do { logList = try wire.logList.logList() } catch {
            throw .malformedLogListDocument(Self.text(CTLogListError(error.message, path: "logList." + (error.path ?? ""))))
        }
        // A list dated after the document that carries it would never go stale by its date: a signer's slip that
        // would keep enforcement on under an old list for ever.
        guard logList.timestamp <= issuedAt.addingTimeInterval(PinSetDocument.clockSkew) else {
            throw .malformedLogListDocument(
                "logList.log_list_timestamp (\(PinSetDocument.timestamp(logList.timestamp))) is after issuedAt "
                    + "(\(PinSetDocument.timestamp(issuedAt))): a list cannot be newer than the document that signs it")
        }
        version = wire.version
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        audience = wire.audience
        self.logList = logList
        self.json = json
    }

    /// Checks that the document may replace the log list in force (`currentVersion`, the rollback floor) at `now`:
    /// its version is above (by at most `limits.maximumVersionStep`), it is valid for at most
    /// `limits.maximumValidity`, not expired, and not issued in the future (beyond ``PinSetDocument/clockSkew``).
    package func check(currentVersion: Int, now: Date, limits: PinSetDocument.Limits = .standard) throws(PinSetDocumentError) {
        try PinSetDocumentError.checkAcceptance(
            version: version, currentVersion: currentVersion, issuedAt: issuedAt, expiresAt: expiresAt, now: now,
            limits: limits)
    }

    /// Whether the document has expired at `now` (from the instant `expiresAt` names on).
    package func isExpired(at now: Date) -> Bool { now >= expiresAt }

    /// The JSON of a document (sorted keys) around `logList`, the v3 list's JSON as given: what a publisher signs.
    package static func json(
        version: Int, issuedAt: Date, expiresAt: Date, audience: String?, logList: Data
    ) throws -> String {
        var object: [String: Any] = [
            "version": version, "issuedAt": PinSetDocument.timestamp(issuedAt),
            "expiresAt": PinSetDocument.timestamp(expiresAt),
            "logList": try JSONSerialization.jsonObject(with: logList),
        ]
        if let audience { object["audience"] = audience }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    private static func text(_ error: CTLogListError) -> String {
        (error.path.map { "\($0): " } ?? "") + error.message
    }


    /// The payload as JSON has it: unknown fields refused (a pin-set payload's `pinSets` among them).
    private struct Wire: Decodable {
        let version: Int
        let issuedAt: String
        let expiresAt: String
        let audience: String?
        let logList: CTLogListWire

        static let fields: Set<String> = ["version", "issuedAt", "expiresAt", "audience", "logList"]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CTKey.self)
            if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { !Self.fields.contains($0) }) {
                throw CTLogListError(
                    "unknown field \(String(reflecting: unknown)); known fields: \(Self.fields.sorted().joined(separator: ", "))")
            }
            version = try container.decode(Int.self, forKey: "version")
            issuedAt = try container.decode(String.self, forKey: "issuedAt")
            expiresAt = try container.decode(String.self, forKey: "expiresAt")
            audience = try container.decodeOptional(String.self, forKey: "audience")
            logList = try container.decode(CTLogListWire.self, forKey: "logList")
        }
    }
}

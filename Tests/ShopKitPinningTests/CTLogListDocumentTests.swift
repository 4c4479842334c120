import Foundation
import Testing
@testable import ShopKitPinning

/// `CTLogListDocument`: its payload, its rules, and the `typ` that keeps it apart from pin-set documents (the
/// signed path: ShopKitTLSTests' `PinSetVerifierLogListTests`).
@Suite(.timeLimit(.minutes(3))) struct CTLogListDocumentTests {
    static let now = CTFixture.now

    static func json(
        version: Int = 3, issuedAt: Date = now - 3600, expiresAt: Date = now + 30 * 86_400, logList: String = CTLogListTests.chromeLike,
        extra: [String: Any] = [:]
    ) -> [UInt8] {
        var object = try! JSONSerialization.jsonObject(
            with: Data(CTLogListDocument.json(
                version: version, issuedAt: issuedAt, expiresAt: expiresAt, audience: "com.example.shop",
                logList: Data(logList.utf8)).utf8)) as! [String: Any]
        object.merge(extra) { $1 }
        return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    @Test func aDocumentCarriesItsLogList() throws {
        let document = try CTLogListDocument(json: Self.json())
        #expect(document.version == 3 && document.audience == "com.example.shop")
        #expect(document.logList == (try CTLogList(json: Data(CTLogListTests.chromeLike.utf8))))
        try document.check(currentVersion: 2, now: Self.now)
    }

    @Test func aPinSetPayloadIsNotALogListDocumentNorTheReverse() throws {
        let pins = PinSetDocumentTests.json([("api.example.com", false, nil)])
        #expect(throws: PinSetDocumentError.malformedLogListDocument(
            "unknown field \"pinSets\"; known fields: audience, expiresAt, issuedAt, logList, version")) {
            try CTLogListDocument(json: pins)
        }
        #expect { try PinSetDocument(json: Self.json()) } throws: { error in
            guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.hasPrefix("unknown field \"logList\"")
        }
    }

    /// A signer's slip: a list dated after the document that signs it would never go stale by its date.
    @Test func aListDatedAfterItsDocumentIsRefused() throws {
        let list = try CTLogList(json: Data(CTLogListTests.chromeLike.utf8))
        #expect { try CTLogListDocument(json: Self.json(issuedAt: list.timestamp - 86_400)) } throws: { error in
            guard case .malformedLogListDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.contains("is after issuedAt")
        }
    }

    @Test func theLogListIsReadStrictlyWithItsPath() throws {
        let bad = CTLogListTests.changed(CTLogListTests.id(2), CTLogListTests.id(2, count: 31))
        #expect(throws: PinSetDocumentError.malformedLogListDocument(
            "logList.operators[0].logs[1].log_id: 31 bytes; a log ID is the 32-byte SHA-256 of the log's key")) {
            try CTLogListDocument(json: Self.json(logList: bad))
        }
        let unknown = CTLogListTests.changed(#"{"usable": {"timestamp""#, #"{"frozen": {"timestamp""#)
        #expect { try CTLogListDocument(json: Self.json(logList: unknown)) } throws: { error in
            guard case .malformedLogListDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.hasPrefix("logList.operators[0].logs[0].state: unknown state \"frozen\"")
        }
        let twice = Array(#"{"version":1,"version":2}"#.utf8)
        #expect { try CTLogListDocument(json: twice) } throws: { error in
            guard case .malformedLogListDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.hasPrefix("member \"version\" appears twice")
        }
    }

    @Test func rollbackAndReplayAreRefused() throws {
        let document = try CTLogListDocument(json: Self.json(version: 5))
        for current in [5, 9] {
            #expect(throws: PinSetDocumentError.notNewer(version: 5, current: current)) {
                try document.check(currentVersion: current, now: Self.now)
            }
        }
        #expect(throws: PinSetDocumentError.versionTooFar(version: 5, current: -1000, maximumStep: 1000)) {
            try document.check(currentVersion: -1000, now: Self.now)
        }
    }

    @Test func expiryAndValidityAreChecked() throws {
        let expiresAt = Self.now + 60
        let document = try CTLogListDocument(json: Self.json(expiresAt: expiresAt))
        try document.check(currentVersion: 0, now: expiresAt - 1)
        #expect(throws: PinSetDocumentError.expired(expiresAt: expiresAt)) {
            try document.check(currentVersion: 0, now: expiresAt)
        }
        let early = try CTLogListDocument(json: Self.json(issuedAt: Self.now + 3600))
        #expect(throws: PinSetDocumentError.notYetValid(issuedAt: Self.now + 3600)) {
            try early.check(currentVersion: 0, now: Self.now)
        }
        let long = try CTLogListDocument(json: Self.json(expiresAt: Self.now + 200 * 86_400))
        #expect(throws: PinSetDocumentError.validityTooLong(days: 201, maximumDays: 180)) {
            try long.check(currentVersion: 0, now: Self.now)
        }
    }

    @Test func eachKindOfJWSRefusesTheOthersTyp() throws {
        let signature = [UInt8](repeating: 7, count: 64)
        let logList = CompactJWS.serialize(payload: Self.json(), keyID: "current", kind: .ctLogList) { _ in signature }
        let pins = CompactJWS.serialize(payload: [0x7B, 0x7D], keyID: "current") { _ in signature }
        #expect(throws: PinSetDocumentError.wrongType("shopkit-ct-log-list+jws")) { try CompactJWS(parsing: logList) }
        #expect(throws: PinSetDocumentError.wrongLogListType("shopkit-pins+jws")) {
            try CompactJWS(parsing: pins, kind: .ctLogList)
        }
        #expect(try CompactJWS(parsing: logList, kind: .ctLogList).payload == Self.json())
        #expect(try CompactJWS(parsing: pins).keyID == "current")
        #expect(PinSetDocumentError.wrongType("shopkit-ct-log-list+jws").description.contains("it is a CT log-list document, never read as pins"))
        #expect(PinSetDocumentError.wrongLogListType("shopkit-pins+jws").description.contains("this is a pin-set document, never read as a log list"))
    }

    /// The log-list document's error: the same reason, a message naming the CT log-list document, one printable line.
    @Test func theLogListErrorNamesItsDocumentInOnePrintableLine() {
        let error = CTLogListDocumentError(reason: .wrongAudience(document: "com.example.other\n\u{1B}[2J", app: "com.example.shop"))
        #expect(error.description.hasPrefix("the CT log-list document is for audience \"com.example.other"))
        #expect(error.description.contains(#"\u{1B}"#) && !error.description.contains("\u{1B}") && !error.description.contains("\n"))
        #expect(PinSetDocumentError.wrongAudience(document: nil, app: "a").description.hasPrefix("the pin-set document is for"))
        #expect(CTLogListDocumentError(reason: .expired(expiresAt: Self.now)) == CTLogListDocumentError(reason: .expired(expiresAt: Self.now)))
        #expect(CTLogListDocumentError(reason: .validityTooLong(days: 201, maximumDays: 180)).description
            == "the CT log-list document is valid for 201 days, more than the app's maximum of 180 (publisher): publish one "
            + "with an earlier expiresAt (pin-check log-list-document --valid-days)")
    }
}

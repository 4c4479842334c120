import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// `PinSetVerifier.verifyLogList`: signed CT log-list documents, with the pin-set keys and rules, under their own
/// `typ`.
@Suite(.timeLimit(.minutes(3))) struct PinSetVerifierLogListTests {
    let signer = try! DocumentSigner()
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let logList = #"{"version":"1","log_list_timestamp":"2026-11-01T00:00:00Z","operators":[{"name":"One","logs":[{"description":"Log A","log_id":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","key":"MFkw","state":{"usable":{"timestamp":"2025-01-01T00:00:00Z"}}}]}]}"#

    func document(
        version: Int = 3, issuedAt: Date? = nil, expiresAt: Date? = nil, audience: String? = DocumentSigner.audience
    ) throws -> String {
        try CTLogListDocument.json(
            version: version, issuedAt: issuedAt ?? now - 3600, expiresAt: expiresAt ?? now + 86_400, audience: audience,
            logList: Data(Self.logList.utf8))
    }

    func signLogList(_ json: String, kid: String = "current", key: OpenSSLKey? = nil) throws -> String {
        let key = key ?? (kid == "backup" ? signer.backup : signer.current)
        return try CompactJWS.serialize(payload: Array(json.utf8), keyID: kid, kind: .ctLogList) { try key.signEd25519($0) }
    }

    @Test func aLogListSignedByEitherKeyIsAccepted() throws {
        for kid in ["current", "backup"] {
            let document = try signer.verifier.verifyLogList(try signLogList(document(), kid: kid), currentVersion: 2, now: now)
            #expect(document.version == 3)
            #expect(document.logList.logs.map(\.description) == ["Log A"])
            #expect(document.logList.logs.first?.logID == [UInt8](repeating: 1, count: 32))
        }
    }

    @Test func aPinSetDocumentIsNeverReadAsALogList() throws {
        let pins = try signer.sign(signer.document(version: 3, now: now), kid: "current")
        #expect(throws: CTLogListDocumentError(reason: .wrongLogListType("shopkit-pins+jws"))) {
            try signer.verifier.verifyLogList(pins, currentVersion: 0, now: now)
        }
        // Nor a log-list payload signed under the pin-set typ.
        let mislabelled = try signer.sign(document(), kid: "current")
        #expect(throws: CTLogListDocumentError(reason: .wrongLogListType("shopkit-pins+jws"))) {
            try signer.verifier.verifyLogList(mislabelled, currentVersion: 0, now: now)
        }
    }

    @Test func aLogListIsNeverReadAsPins() throws {
        let logList = try signLogList(document())
        let baseline = PinningPolicy(pinSets: [try PinSet(hostPattern: HostPattern("api.example.com"), pins: [DocumentSigner.pin(1), DocumentSigner.pin(2)])])
        #expect(throws: PinSetDocumentError.wrongType("shopkit-ct-log-list+jws")) {
            try signer.verifier.verify(logList, baseline: baseline, currentVersion: 0, now: now)
        }
        // Nor a pin-set payload signed under the log-list typ.
        let mislabelled = try signLogList(signer.document(version: 3, now: now))
        #expect { try signer.verifier.verifyLogList(mislabelled, currentVersion: 0, now: now) } throws: { error in
            guard case .malformedLogListDocument(let problem) = (error as? CTLogListDocumentError)?.reason else { return false }
            return problem.hasPrefix("unknown field")
        }
    }

    @Test func rollbackExpiryAudienceAndSignatureAreChecked() throws {
        let jws = try signLogList(document(version: 5))
        #expect(throws: CTLogListDocumentError(reason: .notNewer(version: 5, current: 5))) {
            try signer.verifier.verifyLogList(jws, currentVersion: 5, now: now)
        }
        let expiring = try signLogList(document(expiresAt: now + 60))
        #expect(throws: CTLogListDocumentError(reason: .expired(expiresAt: now + 60))) {
            try signer.verifier.verifyLogList(expiring, currentVersion: 0, now: now + 60)
        }
        let otherApp = try signLogList(document(audience: "com.example.other"))
        #expect(throws: CTLogListDocumentError(reason: .wrongAudience(document: "com.example.other", app: DocumentSigner.audience))) {
            try signer.verifier.verifyLogList(otherApp, currentVersion: 0, now: now)
        }
        let stranger = try signLogList(document(), key: try OpenSSLKey.generate(.ed25519))
        #expect(throws: CTLogListDocumentError(reason: .badSignature(keyID: "current"))) {
            try signer.verifier.verifyLogList(stranger, currentVersion: 0, now: now)
        }
    }
}

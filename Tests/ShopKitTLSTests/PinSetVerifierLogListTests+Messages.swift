import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// What an app printing a refused log-list document's error reads: the CT log-list document, never a pin-set
/// document (`PinSetDocumentError`'s own description), whichever check refused it.
extension PinSetVerifierLogListTests {
    /// A JWS of `payload` under the JSON `header`, signed by the current key (headers `CompactJWS.serialize` never
    /// writes).
    func signed(header: String, payload: String) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        return input + "." + Base64URL.encode(try signer.current.signEd25519(Array(input.utf8)))
    }

    @Test func everyRefusalOfALogListDocumentNamesTheLogListDocument() throws {
        let pins = try signer.sign(signer.document(version: 3, now: now), kid: "current")
        let deep = #"{"logList":"# + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}"
        let header = { (alg: String, typ: String) in #"{"alg":"\#(alg)","kid":"current","typ":"\#(typ)"}"# }
        // (what, the JWS, the floor, the time, the refusal)
        let refusals: [(String, String, Int, Date, PinSetDocumentError)] = [
            ("bad JWS", "not-a-jws", 0, now,
             .malformedJWS("1 dot-separated parts; a compact JWS has three (header.payload.signature)")),
            ("alg none", try signed(header: header("none", "shopkit-ct-log-list+jws"), payload: document()), 0, now,
             .algorithmNotAllowed("none")),
            ("unknown key", try signLogList(document(), kid: "retired", key: try OpenSSLKey.generate(.ed25519)), 0, now,
             .unknownKey("retired")),
            ("bad signature", try signLogList(document(), key: try OpenSSLKey.generate(.ed25519)), 0, now,
             .badSignature(keyID: "current")),
            ("pin-set typ", pins, 0, now, .wrongLogListType("shopkit-pins+jws")),
            ("JWT typ", try signed(header: header("EdDSA", "JWT"), payload: document()), 0, now, .wrongLogListType("JWT")),
            ("malformed payload", try signLogList("{}"), 0, now, .malformedLogListDocument(#"missing field "version""#)),
            ("too deep", try signLogList(deep), 0, now, .nestedTooDeeply(maximumDepth: CTLogListDocument.maximumDepth)),
            ("expired", try signLogList(document(expiresAt: now + 60)), 0, now + 60, .expired(expiresAt: now + 60)),
            ("not yet valid", try signLogList(document(issuedAt: now + 3600)), 0, now,
             .notYetValid(issuedAt: now + 3600)),
            ("not newer", try signLogList(document(version: 5)), 5, now, .notNewer(version: 5, current: 5)),
            ("wrong audience", try signLogList(document(audience: "com.example.other")), 0, now,
             .wrongAudience(document: "com.example.other", app: DocumentSigner.audience)),
            ("validity too long", try signLogList(document(expiresAt: now + 200 * 86_400)), 0, now,
             .validityTooLong(days: 201, maximumDays: 180)),
            ("version too far", try signLogList(document(version: 1_004)), 3, now,
             .versionTooFar(version: 1_004, current: 3, maximumStep: 1_000)),
        ]
        for (what, jws, floor, at, reason) in refusals {
            let error = #expect(throws: CTLogListDocumentError.self, "\(what)") {
                try signer.verifier.verifyLogList(jws, currentVersion: floor, now: at)
            }
            guard let error else { continue }
            #expect(error.reason == reason, "\(what)")
            #expect(error.description.contains("CT log-list document"), "\(what): \(error)")
            // pin-check's hints are the log-list commands', never the pin-set ones.
            #expect(!error.description.contains("sign-pins") && !error.description.contains("pins-document"), "\(what): \(error)")
            if what == "alg none" { #expect(error.description.hasSuffix("sign it with pin-check sign-log-list"), "\(error)") }
            if what == "validity too long" {
                #expect(error.description.hasSuffix("(pin-check log-list-document --valid-days)"), "\(error)")
            }
            if what == "pin-set typ" {
                // The one message that says "pin-set document": the token is one.
                #expect(error.description.contains("this is a pin-set document, never read as a log list"))
            } else {
                #expect(!error.description.contains("pin-set"), "\(what): \(error)")
            }
        }
    }

    /// An app that prints what `verifyLogList` threw, as `"\(error)"`, without knowing its type.
    @Test func anErrorOfVerifyLogListPrintsAsTheLogListDocuments() throws {
        let expiring = try signLogList(document(expiresAt: now + 60))
        var printed = ""
        do {
            _ = try signer.verifier.verifyLogList(expiring, currentVersion: 0, now: now + 60)
        } catch {
            let untyped: any Error = error
            printed = "\(untyped)"
        }
        #expect(printed == "the CT log-list document expired at 2027-01-15T08:01:00Z (publisher): publish a fresh one")
        // PinSetDocumentError's own description is the pin-set document's.
        #expect("\(PinSetDocumentError.expired(expiresAt: now + 60))".hasPrefix("the pin-set document expired at"))
    }
}

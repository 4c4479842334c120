import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Issue 38, defect 6: a `typ` of ShopKit's own, an audience checked against the app's, a maximum validity and a
/// bounded version step.
@Suite(.timeLimit(.minutes(3))) struct PinSetVerifierRulesTests {
    let signer = try! DocumentSigner()
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var baseline: PinningPolicy {
        PinningPolicy(pinSets: [try! PinSet(hostPattern: HostPattern("api.example.com"), pins: [pin(1), pin(2)])])
    }

    /// `payload` signed by the current key under `header` as given.
    func sign(_ payload: String, header: String) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        return input + "." + Base64URL.encode(try signer.current.signEd25519(Array(input.utf8)))
    }

    /// The signer's document with `change` applied to its JSON object.
    func document(_ change: (inout [String: Any]) -> Void) -> String {
        var object = try! JSONSerialization.jsonObject(with: Data(signer.document(version: 3, now: now).utf8)) as! [String: Any]
        change(&object)
        return String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func onlyShopKitsOwnTypIsAccepted() throws {
        let payload = signer.document(version: 3, now: now)
        let cases: [(String, String?)] = [
            (#"{"alg":"EdDSA","kid":"current","typ":"JWT"}"#, "JWT"),
            (#"{"alg":"EdDSA","kid":"current","typ":"jose"}"#, "jose"),
            (#"{"alg":"EdDSA","kid":"current"}"#, nil),
        ]
        for (header, typ) in cases {
            #expect(throws: PinSetDocumentError.wrongType(typ)) {
                try signer.verifier.verify(sign(payload, header: header), baseline: baseline, currentVersion: 0, now: now)
            }
        }
        for typ in ["shopkit-pins+jws", "application/shopkit-pins+jws", "ShopKit-Pins+JWS"] {
            let jws = try sign(payload, header: #"{"alg":"EdDSA","kid":"current","typ":"\#(typ)"}"#)
            #expect(try signer.verifier.verify(jws, baseline: baseline, currentVersion: 0, now: now).version == 3)
        }
        // Found by the adversarial review: b64 (RFC 7797) without crit was ignored.
        for b64 in ["false", "true"] {
            let unencoded = try sign(payload, header: #"{"alg":"EdDSA","b64":\#(b64),"kid":"current","typ":"shopkit-pins+jws"}"#)
            #expect(throws: PinSetDocumentError.malformedHeader("b64 is not supported (RFC 7797); the payload is base64url")) {
                try signer.verifier.verify(unencoded, baseline: baseline, currentVersion: 0, now: now)
            }
        }
        // Found by the adversarial review: a non-ASCII letter that lowercases to an ASCII one (the Kelvin sign).
        let kelvin = try sign(payload, header: #"{"alg":"EdDSA","kid":"current","typ":"shop\u212Ait-pins+jws"}"#)
        #expect(throws: PinSetDocumentError.wrongType("shop\u{212A}it-pins+jws")) {
            try signer.verifier.verify(kelvin, baseline: baseline, currentVersion: 0, now: now)
        }
        // What ShopKit signs carries it.
        let header = try #require(signer.sign(payload, kid: "current").split(separator: ".").first)
        #expect(String(decoding: Base64URL.decode(header)!, as: UTF8.self).contains(#""typ":"shopkit-pins+jws""#))
    }

    @Test func aDocumentForAnotherAppOrForNoAppIsRefused() throws {
        let other = try signer.sign(document { $0["audience"] = "com.example.other" }, kid: "current")
        #expect(throws: PinSetDocumentError.wrongAudience(document: "com.example.other", app: "com.example.shop")) {
            try signer.verifier.verify(other, baseline: baseline, currentVersion: 0, now: now)
        }
        let none = try signer.sign(document { $0["audience"] = nil }, kid: "current")
        #expect(throws: PinSetDocumentError.wrongAudience(document: nil, app: "com.example.shop")) {
            try signer.verifier.verify(none, baseline: baseline, currentVersion: 0, now: now)
        }
        // Found by the adversarial review: an audience equal only by Unicode equivalence is another app's.
        for (app, spelled) in [("com.example.Kit", "com.example.\u{212A}it"), ("com.ex\u{E1}mple.shop", "com.exa\u{301}mple.shop")] {
            let verifier = try PinSetVerifier(publicKeys: try keys(), audience: app)
            let near = try signer.sign(document { $0["audience"] = spelled }, kid: "current")
            #expect(throws: PinSetDocumentError.wrongAudience(document: spelled, app: app)) {
                try verifier.verify(near, baseline: baseline, currentVersion: 0, now: now)
            }
        }
        #expect { try PinSetVerifier(publicKeys: try keys(), audience: " ") } throws: { error in
            guard case .signingKeys(let problem) = error as? PinSetDocumentError else { return false }
            return problem.contains("audience")
        }
    }

    @Test func aDocumentValidForLongerThanTheMaximumIsRefused() throws {
        let long = try signer.sign(signer.document(version: 3, now: now, issuedAt: now, expiresAt: now + 200 * 86_400), kid: "current")
        #expect(throws: PinSetDocumentError.validityTooLong(days: 200, maximumDays: 180)) {
            try signer.verifier.verify(long, baseline: baseline, currentVersion: 0, now: now)
        }
        let absurd = try signer.sign(signer.document(version: 3, now: now, expiresAt: Date(timeIntervalSince1970: 99_999_999_999)), kid: "current")
        #expect { try signer.verifier.verify(absurd, baseline: baseline, currentVersion: 0, now: now) } throws: { error in
            if case .validityTooLong = error as? PinSetDocumentError { return true }
            return false
        }
        let longer = try PinSetVerifier(publicKeys: try keys(), audience: "com.example.shop", maximumValidity: .seconds(365 * 86_400))
        #expect(try longer.verify(long, baseline: baseline, currentVersion: 0, now: now).version == 3)
    }

    @Test func absurdVersionsAreRefused() throws {
        let huge = try signer.sign(signer.document(version: Int.max, now: now), kid: "current")
        #expect { try signer.verifier.verify(huge, baseline: baseline, currentVersion: 0, now: now) } throws: { error in
            guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.contains("9007199254740991")
        }
        let jump = try signer.sign(signer.document(version: 1_004, now: now), kid: "current")
        #expect(throws: PinSetDocumentError.versionTooFar(version: 1_004, current: 3, maximumStep: 1_000)) {
            try signer.verifier.verify(jump, baseline: baseline, currentVersion: 3, now: now)
        }
        #expect(try signer.verifier.verify(jump, baseline: baseline, currentVersion: 4, now: now).version == 1_004)
        let wider = try PinSetVerifier(publicKeys: try keys(), audience: "com.example.shop", maximumVersionStep: 10_000)
        #expect(try wider.verify(jump, baseline: baseline, currentVersion: 3, now: now).version == 1_004)
        // Found by the adversarial review: a version in force near Int.min trapped on the step's subtraction.
        #expect(throws: PinSetDocumentError.versionTooFar(version: 1_004, current: Int.min, maximumStep: 1_000)) {
            try signer.verifier.verify(jump, baseline: baseline, currentVersion: Int.min, now: now)
        }
    }

    func keys() throws -> [String: String] {
        ["current": try signer.current.publicKeyPEM, "backup": try signer.backup.publicKeyPEM]
    }
}

private func pin(_ seed: UInt8) -> SPKIPin { DocumentSigner.pin(seed) }

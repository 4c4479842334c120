import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Signed pin-set documents: each refusal, with documents signed by Ed25519 keys OpenSSL generates here.
@Suite(.timeLimit(.minutes(3))) struct PinSetVerifierTests {
    let signer = try! DocumentSigner()
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var baseline: PinningPolicy {
        PinningPolicy(pinSets: [try! PinSet(hostPattern: HostPattern("api.example.com"), pins: [pin(1), pin(2)])])
    }

    @Test func aDocumentSignedByEitherConfiguredKeyIsAccepted() throws {
        for kid in ["current", "backup"] {
            let jws = try signer.sign(signer.document(version: 3, now: now), kid: kid)
            let document = try signer.verifier.verify(jws, baseline: baseline, currentVersion: 2, now: now)
            #expect(document.version == 3)
            #expect(document.policy.version == 3)
            #expect(document.policy.pinSet(for: "api.example.com")?.pins == [pin(1), pin(3)])
            #expect(document.policy.unpinnedHosts == .refuse)
        }
    }

    @Test func aSignatureByAnotherKeyIsRefused() throws {
        let stranger = try OpenSSLKey.generate(.ed25519)
        let jws = try signer.sign(signer.document(version: 3, now: now), kid: "current", key: stranger)
        #expect(throws: PinSetDocumentError.badSignature(keyID: "current")) {
            try signer.verifier.verify(jws, baseline: baseline, currentVersion: 0, now: now)
        }
    }

    @Test func anUnknownKeyIDIsRefused() throws {
        let jws = try signer.sign(signer.document(version: 3, now: now), kid: "retired", key: signer.current)
        #expect(throws: PinSetDocumentError.unknownKey("retired")) {
            try signer.verifier.verify(jws, baseline: baseline, currentVersion: 0, now: now)
        }
    }

    @Test func algNoneIsRefusedWithOrWithoutASignature() throws {
        let payload = Base64URL.encode(Array(signer.document(version: 3, now: now).utf8))
        let header = Base64URL.encode(Array(#"{"alg":"none","kid":"current"}"#.utf8))
        for jws in ["\(header).\(payload).", "\(header).\(payload).\(Base64URL.encode([UInt8](repeating: 7, count: 64)))"] {
            #expect(throws: PinSetDocumentError.algorithmNotAllowed("none")) {
                try signer.verifier.verify(jws, baseline: baseline, currentVersion: 0, now: now)
            }
        }
    }

    @Test func hs256KeyedWithThePublicKeyIsRefused() async throws {
        // The classic JOSE confusion: an attacker MACs the document with the (public) verification key as the
        // HMAC secret, hoping the verifier uses the key bytes whatever the alg says. The MAC is made by the
        // openssl command, as an attacker would.
        let publicPEM = try signer.current.publicKeyPEM
        let header = Base64URL.encode(Array(#"{"alg":"HS256","kid":"current","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode(Array(signer.document(version: 3, now: now).utf8))
        let hexKey = publicPEM.utf8.map { String(format: "%02x", $0) }.joined()
        let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))
        let mac = try await openssl.run(
            ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(hexKey)", "-binary"], stdin: "\(header).\(payload)")
        #expect(mac.status == 0)
        let jws = "\(header).\(payload).\(Base64URL.encode(Array(mac.stdout.utf8)))"
        #expect(throws: PinSetDocumentError.algorithmNotAllowed("HS256")) {
            try signer.verifier.verify(jws, baseline: baseline, currentVersion: 0, now: now)
        }
    }

    @Test func aVersionNotAboveTheOneInForceIsRefused() throws {
        let jws = try signer.sign(signer.document(version: 5, now: now), kid: "current")
        for current in [5, 9] {
            #expect(throws: PinSetDocumentError.notNewer(version: 5, current: current)) {
                try signer.verifier.verify(jws, baseline: baseline, currentVersion: current, now: now)
            }
        }
    }

    @Test func anExpiredOrNotYetValidDocumentIsRefused() throws {
        let expired = try signer.sign(
            signer.document(version: 3, issuedAt: now - 7200, expiresAt: now - 60), kid: "current")
        #expect(throws: PinSetDocumentError.expired(expiresAt: now - 60)) {
            try signer.verifier.verify(expired, baseline: baseline, currentVersion: 0, now: now)
        }
        let future = try signer.sign(
            signer.document(version: 3, issuedAt: now + 3600, expiresAt: now + 7200), kid: "current")
        #expect(throws: PinSetDocumentError.notYetValid(issuedAt: now + 3600)) {
            try signer.verifier.verify(future, baseline: baseline, currentVersion: 0, now: now)
        }
    }

    @Test func droppingABaselineHostIsRefusedUnlessTheDocumentSaysSo() throws {
        let other = [["host": "shop.example.com", "pins": [pin(4).description, pin(5).description]]]
        let dropping = try signer.sign(signer.document(version: 3, now: now, pinSets: other), kid: "current")
        #expect(throws: PinSetDocumentError.dropsBaselineHost("api.example.com")) {
            try signer.verifier.verify(dropping, baseline: baseline, currentVersion: 0, now: now)
        }
        let explicit = try signer.sign(
            signer.document(version: 3, now: now, pinSets: other, unpinning: ["api.example.com"]), kid: "current")
        let document = try signer.verifier.verify(explicit, baseline: baseline, currentVersion: 0, now: now)
        #expect(document.policy.pinSet(for: "api.example.com") == nil)
    }

    @Test func aTruncatedMissingOrAlteredSignatureIsRefused() throws {
        let jws = try signer.sign(signer.document(version: 3, now: now), kid: "current")
        let parts = jws.split(separator: ".").map(String.init)
        let truncated = "\(parts[0]).\(parts[1]).\(Base64URL.encode(Array(Base64URL.decode(parts[2])!.dropLast(3))))"
        let missing = "\(parts[0]).\(parts[1])."
        let forged = try signer.sign(signer.document(version: 4, now: now), kid: "current").split(separator: ".")
        let spliced = "\(parts[0]).\(forged[1]).\(parts[2])"
        for text in [truncated, missing, spliced] {
            #expect(throws: PinSetDocumentError.badSignature(keyID: "current")) {
                try signer.verifier.verify(text, baseline: baseline, currentVersion: 0, now: now)
            }
        }
    }

    @Test func malformedTextAndHeadersAreRefusedWithTheirReason() throws {
        let payload = Base64URL.encode(Array(signer.document(version: 3, now: now).utf8))
        let crit = Base64URL.encode(Array(#"{"alg":"EdDSA","kid":"current","crit":["b64"],"b64":false}"#.utf8))
        let noKid = Base64URL.encode(Array(#"{"alg":"EdDSA"}"#.utf8))
        let signature = Base64URL.encode([UInt8](repeating: 1, count: 64))
        #expect(throws: PinSetDocumentError.unsupportedCritical(["b64"])) {
            try signer.verifier.verify("\(crit).\(payload).\(signature)", baseline: baseline, currentVersion: 0, now: now)
        }
        #expect(throws: PinSetDocumentError.missingKeyID) {
            try signer.verifier.verify("\(noKid).\(payload).\(signature)", baseline: baseline, currentVersion: 0, now: now)
        }
        for text in ["", "a.b", "a.b.c.d", "\(noKid)=.\(payload).\(signature)", "\(noKid).\(payload)+.\(signature)"] {
            #expect {
                try signer.verifier.verify(text, baseline: baseline, currentVersion: 0, now: now)
            } throws: { error in
                if case .malformedJWS = error as? PinSetDocumentError { return true }
                return false
            }
        }
    }

    @Test func aSignedButInvalidDocumentNamesTheField() throws {
        let cases: [(String, String)] = [
            (#"{"version":3,"issuedAt":"2027-01-15T08:00:00Z","expiresAt":"2027-02-15T08:00:00Z","pinSets":[],"extra":1}"#, "unknown field \"extra\""),
            (#"{"version":"3","issuedAt":"2027-01-15T08:00:00Z","expiresAt":"2027-02-15T08:00:00Z","pinSets":[]}"#, "version must be an integer"),
            (#"{"version":3,"issuedAt":"yesterday","expiresAt":"2027-02-15T08:00:00Z","pinSets":[]}"#, "issuedAt \"yesterday\""),
            (#"{"version":3,"issuedAt":"2027-01-15T08:00:00Z","expiresAt":"2027-02-15T08:00:00Z","pinSets":[{"host":"a.example","pins":["\#(pin(1))"]}]}"#, "single pin"),
            (#"{"version":3,"issuedAt":"2027-01-15T08:00:00Z","expiresAt":"2027-02-15T08:00:00Z","pinSets":[{"host":"a.example","pins":["\#(pin(1))","\#(pin(2))"],"reportonly":true}]}"#, "unknown field \"reportonly\""),
        ]
        for (json, expected) in cases {
            let jws = try signer.sign(json, kid: "current")
            #expect {
                try signer.verifier.verify(jws, baseline: PinningPolicy(), currentVersion: 0, now: now)
            } throws: { error in
                guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
                return problem.contains(expected)
            }
        }
    }

    @Test func theAppMustConfigureTwoDistinctEd25519Keys() throws {
        let one = try signer.current.publicKeyPEM
        #expect { try PinSetVerifier(publicKeys: ["current": one], audience: "app") } throws: { isSigningKeys($0) }
        #expect { try PinSetVerifier(publicKeys: ["current": one, "again": one], audience: "app") } throws: { isSigningKeys($0) }
        let ecdsa = try OpenSSLKey.generate(.ecdsaP256).publicKeyPEM
        #expect { try PinSetVerifier(publicKeys: ["current": one, "ec": ecdsa], audience: "app") } throws: { isSigningKeys($0) }
    }

    private func isSigningKeys(_ error: any Error) -> Bool {
        if case .signingKeys = error as? PinSetDocumentError { return true }
        return false
    }
}

private func pin(_ seed: UInt8) -> SPKIPin { DocumentSigner.pin(seed) }

import Foundation
import ShopKitAPI
import Testing

@testable import ShopKitCredentials

/// The keyring item's secret body: compact, versioned, and strict when decoding.
@Suite(.timeLimit(.minutes(3))) struct KeyringItemBodyTests {
    let credential = StoredCredential(
        tokens: AuthTokens(accessToken: "a\nb", refreshToken: "r", expiresAt: Date(timeIntervalSince1970: 1_900_000_000)),
        policy: AccessPolicy(access: .userPresence(reuseSeconds: 30), thisDeviceOnly: true))

    @Test func encodesWithoutRawNewlinesAndRoundTrips() throws {
        let body = KeyringItemBody(credential, device: "machine")
        let bytes = [UInt8](try body.encoded())
        #expect(!bytes.contains(0x0A) && !bytes.contains(0x0D))
        let decoded = try KeyringItemBody.decode(bytes)
        #expect(try decoded.credential() == credential)
        #expect(decoded.device == "machine")
        #expect(decoded.v == 1)
    }

    @Test func knownBytesDecode() throws {
        let json = #"{"access":"afterFirstUnlock","accessToken":"t","thisDeviceOnly":false,"v":1}"#
        let decoded = try KeyringItemBody.decode(Array(json.utf8)).credential()
        #expect(decoded == StoredCredential(tokens: AuthTokens(accessToken: "t"), policy: .afterFirstUnlock))
    }

    @Test func rejectsWhatItDoesNotKnow() {
        let bad = [
            "not json",
            #"{"access":"afterFirstUnlock","accessToken":"t","thisDeviceOnly":false,"v":2}"#,
            #"{"access":"sometimes","accessToken":"t","thisDeviceOnly":false,"v":1}"#,
            #"{"access":"userPresence","accessToken":"t","thisDeviceOnly":false,"v":1}"#,
        ]
        for text in bad {
            do {
                _ = try KeyringItemBody.decode(Array(text.utf8)).credential()
                Issue.record("accepted \(text)")
            } catch {
                guard let why = failureReason(of: error, ifIs: .corrupt) else { Issue.record("expected corrupt, got \(error)"); continue }
                #expect(!why.contains("\"t\""))
            }
        }
    }
}

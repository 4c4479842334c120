import ShopKitCredentials
import Testing

/// `CredentialError` as callers use it: switch on its code, compare and hash it, read its reason; the messages and
/// retry classes are today's.
@Suite struct CredentialErrorTests {
    /// A caller's switch: kinds match by `==`, with a `default` for kinds added later.
    static func handling(_ error: CredentialError) -> String {
        switch error.code {
        case .locked: return "unlock"
        case .wrongPassphrase, .passphraseRejected: return "ask again"
        case .unavailable: return "use the file"
        default: return "other"
        }
    }

    @Test func callersSwitchOnTheCode() {
        #expect(Self.handling(.locked("the prompt was dismissed")) == "unlock")
        #expect(Self.handling(.wrongPassphrase) == "ask again")
        #expect(Self.handling(.passphraseRejected("too short")) == "ask again")
        #expect(Self.handling(.unavailable("no session bus")) == "use the file")
        #expect(Self.handling(.corrupt("bad tag")) == "other")
        #expect(Self.handling(.wrongDevice) == "other")
        // A bare static member matches the error itself by `==` too, and typed throws still take `.kind(...)`.
        let thrown = Result { () throws(CredentialError) in throw .wrongDevice }
        switch thrown {
        case .failure(.wrongDevice): break
        default: Issue.record("\(thrown) must match .wrongDevice")
        }
    }

    @Test func equalityAndHashingTakeTheReason() {
        #expect(CredentialError.io("disk full") == .io("disk full"))
        #expect(CredentialError.io("disk full") != .io("read-only"))
        #expect(CredentialError.io("x") != .tooLarge("x"))
        #expect(CredentialError.wrongPassphrase != .wrongDevice)
        let set: Set<CredentialError> = [.wrongPassphrase, .wrongPassphrase, .corrupt("a"), .corrupt("a"), .corrupt("b")]
        #expect(set.count == 3)
    }

    @Test func theReasonIsAProperty() {
        #expect(CredentialError.unsafeFile("a symbolic link").reason == "a symbolic link")
        #expect(CredentialError.insecurePermissions("chmod 600 tokens").reason == "chmod 600 tokens")
        #expect(CredentialError.outcomeUnknown("timed out").reason == "timed out")
        #expect(CredentialError.wrongPassphrase.reason == nil && CredentialError.wrongDevice.reason == nil)
        #expect(CredentialError.accessDenied("no presence").code == .accessDenied)
        #expect(CredentialError.Code.invalidConfiguration.description == "invalidConfiguration")
    }

    /// The messages are today's, word for word.
    @Test func descriptionsAreUnchanged() {
        let expected: [(CredentialError, String)] = [
            (.locked("w"), "keyring is locked: w"), (.unavailable("w"), "no Secret Service available: w"),
            (.wrongPassphrase, "wrong passphrase for the token file"),
            (.corrupt("w"), "token file is corrupt or was tampered with: w"),
            (.insecurePermissions("w"), "token file location is not private: w"),
            (.wrongDevice, "this credential is bound to another device"), (.accessDenied("w"), "access denied: w"),
            (.policyUnsupported("w"), "access policy cannot be honoured here: w"),
            (.io("w"), "token store I/O failed: w"), (.tooLarge("w"), "token store would be too large: w"),
            (.unsafeFile("w"), "token store path is not a plain, single-named file: w"),
            (.invalidConfiguration("w"), "invalid token store configuration: w"),
            (.outcomeUnknown("w"), "the outcome of the operation is unknown: w"),
            (.passphraseRejected("w"), "passphrase refused: w"),
        ]
        for (error, description) in expected { #expect(error.description == description) }
        #expect(Set(expected.map { $0.0.code }).count == 14)
    }

    @Test func onlyUnavailableIsRetryable() {
        let others: [CredentialError] = [
            .locked("w"), .wrongPassphrase, .corrupt("w"), .insecurePermissions("w"), .wrongDevice,
            .accessDenied("w"), .policyUnsupported("w"), .io("w"), .tooLarge("w"), .unsafeFile("w"),
            .invalidConfiguration("w"), .outcomeUnknown("w"), .passphraseRejected("w"),
        ]
        #expect(others.allSatisfy { !$0.isRetryable })
        #expect(CredentialError.unavailable("w").isRetryable)
    }
}

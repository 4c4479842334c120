import Foundation

/// A presence verifier backed by a closure: for GUI prompts, hardware keys, or tests.
public struct ClosurePresenceVerifier: PresenceVerifier {
    /// Whether the closure can be asked (e.g. a prompt can be shown).
    public let canVerify: Bool
    private let verify: @Sendable (_ reason: String) async -> Bool

    /// `verify` returns `true` when the user proved presence for `reason`, `false` when they refused.
    public init(canVerify: Bool = true, verify: @escaping @Sendable (_ reason: String) async -> Bool) {
        self.canVerify = canVerify
        self.verify = verify
    }

    /// Calls the closure; `false` becomes `.accessDenied`.
    public func verifyPresence(reason: String) async throws(CredentialError) {
        guard await verify(reason) else { throw .accessDenied("the user did not confirm presence") }
    }
}

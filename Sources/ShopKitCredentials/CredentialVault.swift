import Foundation
import Logging
import ShopKitAPI

/// Proves that the user is present (typed a passphrase, touched a key) before a protected read.
public protocol PresenceVerifier: Sendable {
    /// Whether a proof can be asked for here (a terminal is attached, a prompt is possible).
    var canVerify: Bool { get }
    /// Asks for a proof; returns normally when the user is present, throws `CredentialError.accessDenied` when not.
    func verifyPresence(reason: String) async throws(CredentialError)
}

/// The front door to stored credentials: a backend plus the access policy's presence check.
///
/// Reads of `userPresence` items need a proof from the verifier no older than the item's reuse window, measured
/// on `CLOCK_BOOTTIME` (monotonic, counting suspend: never the wall clock); with no verifier able to run, the
/// read fails closed. A proof is shared only as far as each item's own window allows: a proof given for an item
/// with a window of 0 is used for that one read and never makes any other item readable.
///
/// Writes refuse a policy this machine cannot honour: `thisDeviceOnly` on a backend that cannot bind, or
/// `userPresence` with no verifier able to run (the item could never be read back), as the Keychain refuses
/// passcode-bound items on a device without a passcode.
///
/// - Warning: The presence check is enforced by this API. Any process running as the same user can still ask
///   the keyring directly, or try passphrases against the file: the policy protects against a careless caller
///   and an unattended session, not against malware running as the user.
public actor CredentialVault {
    /// The backend holding the items.
    package nonisolated let backend: any CredentialBackend
    private let presenceVerifier: (any PresenceVerifier)?
    /// Ages presence proofs.
    nonisolated let clock: any PresenceClock
    let logger: Logger
    /// When (on ``clock``) the user last proved presence through this vault for a read that allows reuse.
    private var lastPresence: Duration?
    /// The prompt in progress, if any; concurrent protected reads wait for it instead of prompting again.
    private var pendingVerification: Task<Result<Void, CredentialError>, Never>?
    /// How many reads waited for another read's prompt (for tests).
    private(set) var joinedVerifications = 0 {
        didSet { resumeJoinWaiters() }
    }
    /// Callers of ``joinedVerifications(atLeast:)`` still waiting.
    private var joinWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// A vault over `backend`; `presenceVerifier` is required for `userPresence` items. Presence proofs age on
    /// `CLOCK_BOOTTIME`, which only moves forward and counts suspended time.
    public init(
        backend: any CredentialBackend,
        presenceVerifier: (any PresenceVerifier)? = nil,
        logger: Logger = Logger(label: "ShopKitCredentials")
    ) {
        self.init(backend: backend, presenceVerifier: presenceVerifier, clock: BootTimeClock(), logger: logger)
    }

    /// The same with the presence clock injected (tests step time).
    package init(
        backend: any CredentialBackend,
        presenceVerifier: (any PresenceVerifier)?,
        clock: any PresenceClock,
        logger: Logger = Logger(label: "ShopKitCredentials")
    ) {
        self.backend = backend
        self.presenceVerifier = presenceVerifier
        self.clock = clock
        self.logger = logger
    }

    /// Reads the tokens for `key`, enforcing the item's policy; `nil` when there is no item.
    ///
    /// Throws `.accessDenied` when a `userPresence` item has no fresh proof and none can be obtained, or when
    /// `key` names a client key (read those with `clientIdentity(certificateChainPEM:keyItem:)`, never as tokens),
    /// plus whatever the backend throws (`.wrongDevice`, `.locked`, `.wrongPassphrase`, `.corrupt`, …).
    public func read(_ key: CredentialKey) async throws(CredentialError) -> AuthTokens? {
        try Self.requireTokens(key)
        return try await readItem(key)?.tokens
    }

    /// Refuses a key that does not name tokens: a client key never leaves the vault as tokens.
    static func requireTokens(_ key: CredentialKey) throws(CredentialError) {
        guard key.kind == .tokens else {
            throw .accessDenied("\(key) is a client key item: it is read with clientIdentity(certificateChainPEM:"
                + "keyItem:) and stored with storeClientIdentity, never as tokens")
        }
    }

    /// Reads the item for `key` of any kind, enforcing its policy; `nil` when there is none.
    func readItem(_ key: CredentialKey) async throws(CredentialError) -> StoredCredential? {
        guard let item = try await backend.read(key) else {
            logger.debug("no credential", metadata: ["key": "\(key)", "backend": "\(backend.name)"])
            return nil
        }
        try await enforce(item.policy, for: key)
        return item
    }

    /// Allows a read of `key` stored under `policy`: at once, or after a fresh proof of presence.
    func enforce(_ policy: AccessPolicy, for key: CredentialKey) async throws(CredentialError) {
        switch policy.access {
        case .afterFirstUnlock:
            logger.debug("read allowed: afterFirstUnlock", metadata: ["key": "\(key)"])
        case .userPresence(let reuseSeconds):
            try await requirePresence(for: key, reuseSeconds: reuseSeconds)
        }
    }

    /// Stores `tokens` for `key` under `policy`; refuses (`.policyUnsupported`) a policy this machine cannot honour,
    /// and (`.accessDenied`) a key that names a client key item.
    public func write(_ tokens: AuthTokens, for key: CredentialKey, policy: AccessPolicy = AccessPolicy())
        async throws(CredentialError)
    {
        try Self.requireTokens(key)
        try await writeItem(tokens, for: key, policy: policy)
    }

    /// Stores an item of any kind under `policy`, refusing a policy this machine cannot honour.
    func writeItem(_ tokens: AuthTokens, for key: CredentialKey, policy: AccessPolicy) async throws(CredentialError) {
        try checkHonoured(policy, for: key)
        try await backend.write(StoredCredential(tokens: tokens, policy: policy), for: key)
        logger.debug("credential stored", metadata: ["key": "\(key)", "backend": "\(backend.name)"])
    }

    /// Refuses (`.policyUnsupported`) a policy this machine cannot honour for `key`.
    func checkHonoured(_ policy: AccessPolicy, for key: CredentialKey) throws(CredentialError) {
        if policy.thisDeviceOnly && !backend.canBindToDevice {
            logger.warning("write refused: backend cannot bind to this device", metadata: ["key": "\(key)"])
            throw .policyUnsupported(
                "the \(backend.name) store cannot bind items to this device (no machine id); "
                    + "store the item without thisDeviceOnly or configure a device id")
        }
        if case .userPresence(let reuseSeconds) = policy.access {
            guard reuseSeconds >= 0 else { throw .policyUnsupported("userPresence reuseSeconds must not be negative") }
            guard presenceVerifier?.canVerify == true else {
                logger.warning("write refused: no presence verifier can run", metadata: ["key": "\(key)"])
                throw .policyUnsupported(
                    "a userPresence item needs a PresenceVerifier that can run here (none can, so the item could "
                        + "never be read); pass one to CredentialVault or store it as afterFirstUnlock")
            }
        }
    }

    /// Deletes the item for `key` (no presence needed: deleting reveals nothing).
    public func delete(_ key: CredentialKey) async throws(CredentialError) {
        try await backend.delete(key)
        logger.debug("credential deleted", metadata: ["key": "\(key)", "backend": "\(backend.name)"])
    }

    /// Forgets the last proof of presence, so the next protected read asks again (e.g. on screen lock).
    public func forgetPresence() {
        lastPresence = nil
    }

    /// Returns once at least `count` reads have waited for another read's prompt (for tests: an event to wait
    /// for instead of polling).
    func joinedVerifications(atLeast count: Int) async {
        guard joinedVerifications < count else { return }
        await withCheckedContinuation { joinWaiters.append((count, $0)) }
    }

    private func resumeJoinWaiters() {
        let ready = joinWaiters.filter { $0.count <= joinedVerifications }
        joinWaiters.removeAll { $0.count <= joinedVerifications }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Whether the last proof is fresh for a window of `reuseSeconds`, measured from the proof's time (0 is never
    /// fresh; a clock that went backwards does not count as fresh).
    private func isFresh(_ reuseSeconds: Int) -> Bool {
        guard let proof = lastPresence, reuseSeconds > 0 else { return false }
        let age = clock.now() - proof
        return age >= .zero && age <= .seconds(reuseSeconds)
    }

    private func requirePresence(for key: CredentialKey, reuseSeconds: Int) async throws(CredentialError) {
        if isFresh(reuseSeconds) {
            logger.debug("read allowed: presence proven within the reuse window", metadata: ["key": "\(key)"])
            return
        }
        guard let verifier = presenceVerifier else {
            logger.notice("read denied: userPresence item and no presence verifier", metadata: ["key": "\(key)"])
            throw .accessDenied("\(key) requires user presence and no PresenceVerifier is configured")
        }
        guard verifier.canVerify else {
            logger.notice("read denied: presence verifier cannot run here", metadata: ["key": "\(key)"])
            throw .accessDenied("\(key) requires user presence and the verifier cannot run here (no terminal?)")
        }
        // One prompt at a time: a read arriving during another read's prompt waits for that outcome. A refusal
        // answers every waiting read; a proof serves them when their window allows (a window of 0 asks again).
        while let pending = pendingVerification {
            joinedVerifications += 1
            if case .failure(let error) = await pending.value {
                logger.notice("read denied: presence not proven", metadata: ["key": "\(key)"])
                throw error
            }
            if isFresh(reuseSeconds) {
                logger.debug("read allowed: presence proven by a concurrent prompt", metadata: ["key": "\(key)"])
                return
            }
        }
        // The task is isolated to this actor, so the proof is recorded before any waiter sees the outcome. A proof
        // for a window of 0 was asked for this one read only: it is not recorded, so it serves no other item.
        let verification = Task<Result<Void, CredentialError>, Never> {
            defer { self.pendingVerification = nil }
            do throws(CredentialError) {
                try await verifier.verifyPresence(reason: "read the credential \(key)")
            } catch {
                return .failure(error)
            }
            if reuseSeconds > 0 { self.lastPresence = self.clock.now() }
            return .success(())
        }
        pendingVerification = verification
        if case .failure(let error) = await verification.value {
            logger.notice("read denied: presence not proven", metadata: ["key": "\(key)"])
            throw error
        }
        logger.info("read allowed: presence proven", metadata: ["key": "\(key)"])
    }
}

import Foundation
import ShopKitAPI
import Testing
import TestSupport
@testable import ShopKitCredentials

/// The access policy over a real file store; only the presence prompt and the clock are stubbed.
@Suite(.timeLimit(.minutes(3))) struct CredentialVaultTests {
    static let presence = AccessPolicy(access: .userPresence(reuseSeconds: 30))

    private func vault(
        _ dir: TempDirectory, verifier: (any PresenceVerifier)?, clock: TestClock = TestClock()
    ) -> CredentialVault {
        CredentialVault(backend: makeStore(dir.storeURL), presenceVerifier: verifier, clock: clock)
    }

    private func counting(_ counter: PromptCounter, answer: Bool = true, canVerify: Bool = true) -> ClosurePresenceVerifier {
        ClosurePresenceVerifier(canVerify: canVerify) { _ in
            counter.record()
            return answer
        }
    }

    @Test func afterFirstUnlockReadsWithoutAnyVerifier() async throws {
        try await withTempDirectory { dir in
            let vault = vault(dir, verifier: nil)
            try await vault.write(aliceTokens, for: aliceKey)
            #expect(try await vault.read(aliceKey) == aliceTokens)
            #expect(try await vault.read(bobKey) == nil)
        }
    }

    @Test func presenceIsReusedWithinTheWindowAndAskedAgainAfterIt() async throws {
        try await withTempDirectory { dir in
            let clock = TestClock(), prompts = PromptCounter()
            let vault = vault(dir, verifier: counting(prompts), clock: clock)
            try await vault.write(aliceTokens, for: aliceKey, policy: Self.presence)
            #expect(prompts.count == 0)  // writing needs no presence
            #expect(try await vault.read(aliceKey) == aliceTokens)
            #expect(prompts.count == 1)
            clock.advance(10)
            #expect(try await vault.read(aliceKey) == aliceTokens)
            clock.advance(20)  // exactly 30 s old: still within the window
            #expect(try await vault.read(aliceKey) == aliceTokens)
            #expect(prompts.count == 1)
            clock.advance(1)  // 31 s: too old
            #expect(try await vault.read(aliceKey) == aliceTokens)
            #expect(prompts.count == 2)
            // The new proof restarts the window; a clock that jumps backwards does not count as fresh.
            clock.advance(-5)
            #expect(try await vault.read(aliceKey) == aliceTokens)
            #expect(prompts.count == 3)
            await vault.forgetPresence()
            _ = try await vault.read(aliceKey)
            #expect(prompts.count == 4)
        }
    }

    @Test func zeroReuseAsksEveryTime() async throws {
        try await withTempDirectory { dir in
            let prompts = PromptCounter()
            let vault = vault(dir, verifier: counting(prompts))
            try await vault.write(aliceTokens, for: aliceKey, policy: AccessPolicy(access: .userPresence(reuseSeconds: 0)))
            for _ in 0..<3 { _ = try await vault.read(aliceKey) }
            #expect(prompts.count == 3)
        }
    }

    /// A proof given for a window-0 item is for that read only: it never makes a window-3600 item readable, and a
    /// window-0 read always prompts. A proof for a reusable item serves each item as far as that item's own
    /// window allows, measured from the proof's time.
    @Test func proofsServeOnlyWhatTheirWindowsAllow() async throws {
        try await withTempDirectory { dir in
            let clock = TestClock(), prompts = PromptCounter()
            let vault = vault(dir, verifier: counting(prompts), clock: clock)
            let everyTime = AccessPolicy(access: .userPresence(reuseSeconds: 0))
            let hourly = AccessPolicy(access: .userPresence(reuseSeconds: 3600))
            try await vault.write(aliceTokens, for: aliceKey, policy: everyTime)
            try await vault.write(bobTokens, for: bobKey, policy: hourly)
            #expect(try await vault.read(aliceKey) == aliceTokens)
            #expect(prompts.count == 1)
            #expect(try await vault.read(bobKey) == bobTokens)
            #expect(prompts.count == 2, "a proof for a window-0 item must not open a window-3600 item")
            clock.advance(60)
            #expect(try await vault.read(bobKey) == bobTokens)  // its own proof, 60 s old
            #expect(try await vault.read(aliceKey) == aliceTokens)  // window 0: asks again
            #expect(prompts.count == 3)
            // Alice's proof did not refresh Bob's: his window runs from his own proof.
            clock.advance(3541)
            #expect(try await vault.read(bobKey) == bobTokens)
            #expect(prompts.count == 4)
        }
    }

    /// The default clock is CLOCK_BOOTTIME, which the wall clock cannot step back.
    @Test func defaultClockIsBootTime() async throws {
        try await withTempDirectory { dir in
            let vault = CredentialVault(backend: makeStore(dir.storeURL))
            #expect(vault.clock is BootTimeClock)
        }
        func boottime() -> Duration {
            var time = timespec()
            clock_gettime(CLOCK_BOOTTIME, &time)
            return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
        }
        let before = boottime()
        let now = BootTimeClock().now()
        let after = boottime()
        #expect(before <= now && now <= after)
        // Not the wall clock: seconds since boot, decades away from seconds since 1970.
        #expect(abs(Date().timeIntervalSince1970 - Double(now.components.seconds)) > 365 * 86_400)
    }

    @Test func refusingVerifierDeniesTheRead() async throws {
        try await withTempDirectory { dir in
            let prompts = PromptCounter()
            let vault = vault(dir, verifier: counting(prompts, answer: false))
            try await vault.write(aliceTokens, for: aliceKey, policy: Self.presence)
            #expect(await caughtError { () async throws(CredentialError) in try await vault.read(aliceKey) }
                == .accessDenied("the user did not confirm presence"))
            // A refusal is not a proof: the next read asks again.
            _ = await caughtError { () async throws(CredentialError) in try await vault.read(aliceKey) }
            #expect(prompts.count == 2)
        }
    }

    @Test func noVerifierOrOneThatCannotRunFailsClosed() async throws {
        try await withTempDirectory { dir in
            let prompts = PromptCounter()
            try await vault(dir, verifier: counting(prompts)).write(aliceTokens, for: aliceKey, policy: Self.presence)
            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await vault(dir, verifier: nil).read(aliceKey)
            }), ifIs: .accessDenied) else { Issue.record("no verifier must deny"); return }
            #expect(why.contains("no PresenceVerifier"))
            guard let reason = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await vault(dir, verifier: counting(prompts, canVerify: false)).read(aliceKey)
            }), ifIs: .accessDenied) else { Issue.record("a verifier that cannot run must deny"); return }
            #expect(reason.contains("cannot run"))
            #expect(prompts.count == 0)
            // Reading the backend directly still works: the policy is the vault's job (documented limit).
            #expect(try await makeStore(dir.storeURL).read(aliceKey)?.tokens == aliceTokens)
        }
    }

    @Test func writesThatCannotBeHonouredAreRefused() async throws {
        try await withTempDirectory { dir in
            for verifier in [nil, ClosurePresenceVerifier(canVerify: false) { _ in true }] as [ClosurePresenceVerifier?] {
                guard failureCode(of: await caughtError({ () async throws(CredentialError) in
                    try await vault(dir, verifier: verifier).write(aliceTokens, for: aliceKey, policy: Self.presence)
                })) == .policyUnsupported else { Issue.record("userPresence without a usable verifier must be refused"); return }
            }
            let unbindable = CredentialVault(backend: UnbindableBackend(inner: makeStore(dir.storeURL)))
            guard failureCode(of: await caughtError({ () async throws(CredentialError) in
                try await unbindable.write(aliceTokens, for: aliceKey, policy: AccessPolicy(thisDeviceOnly: true))
            })) == .policyUnsupported else { Issue.record("thisDeviceOnly on a backend that cannot bind must be refused"); return }
            let remaining = try await makeStore(dir.storeURL).keys()
            #expect(remaining.isEmpty)
        }
    }

    @Test func vaultTokenStoreSavesLoadsAndSignsOut() async throws {
        try await withTempDirectory { dir in
            let store: any TokenStore = VaultTokenStore(vault: vault(dir, verifier: nil), key: aliceKey)
            #expect(try await store.loadTokens() == nil)
            try await store.saveTokens(aliceTokens)
            #expect(try await store.loadTokens() == aliceTokens)
            try await store.saveTokens(bobTokens)
            #expect(try await store.loadTokens() == bobTokens)
            try await store.clearTokens()
            #expect(try await store.loadTokens() == nil)
            #expect(try await makeStore(dir.storeURL).keys().isEmpty)
        }
    }

    @Test func migrateMovesOnlyWhenAsked() async throws {
        try await withTempDirectory { dir in
            let source = makeStore(dir.storeURL)
            let destination = makeStore(dir.url.appendingPathComponent("other/tokens.skt"), passphrase: "other passphrase")
            let bound = AccessPolicy(access: .userPresence(reuseSeconds: 5), thisDeviceOnly: true)
            try await source.write(StoredCredential(tokens: aliceTokens, policy: bound), for: aliceKey)
            #expect(try await migrate(bobKey, from: source, to: destination) == false)
            #expect(try await migrate(aliceKey, from: source, to: destination) == true)
            #expect(try await source.read(aliceKey) == nil)
            #expect(try await destination.read(aliceKey) == StoredCredential(tokens: aliceTokens, policy: bound))
            // A device-bound item is not moved to a backend that cannot bind; the source keeps it.
            let unbindable = UnbindableBackend(inner: makeStore(dir.url.appendingPathComponent("third/tokens.skt")))
            guard failureCode(of: await caughtError({ () async throws(CredentialError) in
                try await migrate(aliceKey, from: destination, to: unbindable)
            })) == .policyUnsupported else { Issue.record("expected policyUnsupported"); return }
            #expect(try await destination.read(aliceKey) != nil)
        }
    }

    /// Reads arriving while a prompt is open wait for it: one prompt, one answer for all of them.
    @Test(arguments: [true, false]) func concurrentReadsShareOnePrompt(answer: Bool) async throws {
        try await withTempDirectory { dir in
            let gate = PresenceGate()
            let vault = vault(dir, verifier: ClosurePresenceVerifier { _ in await gate.ask() })
            try await vault.write(aliceTokens, for: aliceKey, policy: Self.presence)
            async let first = caughtError { () async throws(CredentialError) in try await vault.read(aliceKey) }
            try await gate.waitUntilAsked()
            async let second = caughtError { () async throws(CredentialError) in try await vault.read(aliceKey) }
            try await withDeadline("a second read to join the first one's prompt") {
                await vault.joinedVerifications(atLeast: 1)
            }
            gate.answerAll(answer)
            let outcomes = await [first, second]
            #expect(gate.asked == 1)
            #expect(outcomes == (answer ? [nil, nil] : Array(repeating: .accessDenied("the user did not confirm presence"), count: 2)))
        }
    }
}

/// A presence prompt the test answers: `ask` waits until `answerAll`; `waitUntilAsked` returns once it is asked.
/// Both waits have deadlines: a prompt never answered denies presence, and a prompt never asked fails the test.
private final class PresenceGate: Sendable {
    private struct State: Sendable, CustomStringConvertible {
        var asked = 0
        var answer: Bool?
        var description: String { "asked \(asked) times, answer \(answer.map { "\($0)" } ?? "none yet")" }
    }

    private let state = WaitableState(State())

    var asked: Int { state.withLockedValue { $0.asked } }

    func ask() async -> Bool {
        state.withLockedValue { $0.asked += 1 }
        do {
            try await state.wait(until: { $0.answer != nil }, for: "the test to answer the presence prompt")
        } catch {
            return false
        }
        return state.withLockedValue { $0.answer! }
    }

    /// Returns once the prompt has been asked at least once.
    func waitUntilAsked() async throws {
        try await state.wait(until: { $0.asked > 0 }, for: "the presence prompt to be asked")
    }

    func answerAll(_ answer: Bool) {
        state.withLockedValue { $0.answer = answer }
    }
}

import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// Issue 38, review round F12: what is in force at the instant a document expires, and which document is in
/// force when a stored one has the baseline's own version.
extension PinUpdatesTests {
    /// A document whose set for 127.0.0.1 (a baseline host) expires at `setExpiresIn` from now.
    /// `strictHosts`: false gives a lax document (the baseline here is lax too).
    func document(
        _ version: Int, expiresIn: TimeInterval, setExpiresIn: TimeInterval, strictHosts: Bool = true
    ) throws -> String {
        let now = clock.withLockedValue { $0 }
        let pins = ["leaf-localhost-ecdsa", "intermediate-1"].map { TestCertificates.pin($0).description }
        let set: [String: Any] = ["host": "127.0.0.1", "pins": pins, "expiration": PinSetDocument.timestamp(now + setExpiresIn)]
        var json = signer.document(version: version, now: now, expiresAt: now + expiresIn, pinSets: [set])
        if !strictHosts { json = json.replacingOccurrences(of: "\"strictHosts\":true", with: "\"strictHosts\":false") }
        return try signer.sign(json, kid: "current")
    }

    /// At the instant the document expires its expiry timer may not have run yet; a baseline host's set that
    /// expired at that same instant left the host unpinned until it did. Such a document is refused; a set that
    /// outlives the document keeps the host pinned until the baseline is back.
    @Test func noInstantLeavesABaselineHostUnpinnedWhileTheExpiryTimerIsDue() async throws {
        let server = try await startServer()
        let transport = try transport(Self.baseline(Self.matching))
        let (requested, released, seen) = (WaitableState<[Date]>([]), WaitableState(false), WaitableState<[String]>([]))
        let updates = timedUpdates(transport, port: server.port, requested: requested, released: released, seen: seen)

        served.withLockedValue { $0 = try! document(3, expiresIn: 1800, setExpiresIn: 1800) }
        await #expect { try await updates.update() } throws: { error in
            guard case .weakensBaselineHost("127.0.0.1", let reason) = error as? PinSetDocumentError else { return false }
            return reason.contains("when the document does")
        }
        #expect(transport.pinning.version == 0)

        served.withLockedValue { $0 = try! document(3, expiresIn: 1800, setExpiresIn: 1801) }
        #expect(try await updates.update() == 3)
        try await requested.wait(until: { !$0.isEmpty }, for: "the expiry timer to start")
        // The document's instant comes; its timer has not run yet (the test holds it).
        let expiry = Self.start + 1800
        clock.withLockedValue { $0 = expiry }
        let set = try #require(transport.pinning.pinSet(for: "127.0.0.1", at: expiry))
        #expect(!set.isExpired(at: expiry), "the host is unpinned until the timer runs")
        released.withLockedValue { $0 = true }
        try await seen.wait(until: { $0.contains { $0.contains("version 3 expired") } }, for: "the expiry event")
        #expect(transport.pinning.version == 0)
        await transport.shutdown()
        await server.stop()
    }

    /// The expiry timer can run late (a busy machine, a suspended laptop), past the document's sets too. A lax
    /// document whose set for a baseline host outlived it by one second (the least the rule allows) then left that
    /// host unpinned, with the document still in force: a chain carrying only an attacker's key connected. From
    /// `expiresAt` on every evaluation uses the baseline, whenever the timer runs.
    @Test func aLateExpiryTimerNeverLeavesABaselineHostUnpinned() async throws {
        let server = try await startServer()
        let transport = try transport(Self.baseline(Self.matching))
        let (requested, released, seen) = (WaitableState<[Date]>([]), WaitableState(false), WaitableState<[String]>([]))
        let updates = timedUpdates(transport, port: server.port, requested: requested, released: released, seen: seen)
        let lax = try document(3, expiresIn: 1800, setExpiresIn: 1801, strictHosts: false)
        served.withLockedValue { $0 = lax }
        #expect(try await updates.update() == 3)
        try await requested.wait(until: { !$0.isEmpty }, for: "the expiry timer to start")

        // Chains as OpenSSL would have verified them (only their keys' pins matter to the policy).
        func chain(_ names: String...) -> VerifiedChain {
            VerifiedChain(verifiedCertificates: names.map { name in
                CertificateInfo(
                    spkiPin: TestCertificates.pin(name), subject: "CN=\(name)", issuer: "CN=issuer", subjectAlternativeNames: [],
                    notBefore: Self.start - 86_400, notAfter: Self.start + 10 * 86_400, keyDescription: "ECDSA P-256",
                    signatureAlgorithm: "ecdsa-with-SHA256")
            })
        }
        let attacker = chain("other-intermediate", "other-root")
        let genuine = chain("leaf-localhost-ecdsa", "intermediate-1")
        // While the document is in force, its set applies: the attacker's chain is refused, the server's accepted.
        let before = Self.start + 1799
        #expect(transport.pinning.evaluate(host: "127.0.0.1", chain: attacker, now: before).allowsConnection == false)
        #expect(transport.pinning.evaluate(host: "127.0.0.1", chain: genuine, now: before).allowsConnection)
        // Past the document and its set, with the timer not run yet (the test holds it): the baseline applies.
        for late in [Self.start + 1800, Self.start + 1801, Self.start + 86_400] {
            #expect(transport.pinning.version == 3)
            let verdict = transport.pinning.evaluate(host: "127.0.0.1", chain: attacker, now: late)
            guard case .mismatch(let report) = verdict else {
                Issue.record("at expiresAt + \(late.timeIntervalSince(Self.start) - 1800) s: \(verdict), not the baseline's mismatch")
                continue
            }
            #expect(report.policyVersion == 0)
            #expect(report.configuredPins == Self.matching.map(TestCertificates.pin))
            #expect(transport.pinning.evaluate(host: "127.0.0.1", chain: genuine, now: late).allowsConnection)
            #expect(transport.pinning.pinSet(for: "127.0.0.1", at: late)?.pins == Self.matching.map(TestCertificates.pin))
        }
        clock.withLockedValue { $0 = Self.start + 86_400 }
        released.withLockedValue { $0 = true }
        try await seen.wait(until: { $0.contains { $0.contains("version 3 expired") } }, for: "the expiry event")
        #expect(transport.pinning.version == 0)
        await transport.shutdown()
        await server.stop()
    }

    /// A stored document with the baseline's own version was taken for one already in force: `documentInForce`
    /// named it while the baseline's pins applied, and its expiry would have "ended" the baseline. A document is in
    /// force only above the baseline's version; one at it is stale (the release carries its successor).
    @Test func aStoredDocumentAtTheBaselinesVersionIsNotInForce() async throws {
        let server = try await startServer()
        try TokenFileIO.atomicReplace(storePath, with: Array((try document(3) + "\n").utf8))
        var baseline = Self.baseline(Self.matching)
        baseline.version = 3
        let transport = try transport(baseline)
        let updates = updates(transport, port: server.port)
        await updates.start()
        #expect(updates.documentInForce == nil)
        #expect(transport.pinning.version == 3)
        #expect(transport.pinning.pinSet(for: "127.0.0.1")?.pins == Self.matching.map(TestCertificates.pin))
        #expect(reported == ["stored pin-set document ignored, the baseline pins apply: \(PinSetDocumentError.notNewer(version: 3, current: 3))"])

        // The document in force is the one applied above the baseline.
        served.withLockedValue { $0 = try! document(4) }
        #expect(try await updates.update() == 4)
        #expect(updates.documentInForce?.version == 4)
        await transport.shutdown()
        await server.stop()
    }
}

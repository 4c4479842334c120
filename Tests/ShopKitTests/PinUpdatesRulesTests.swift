import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// Issue 38 in `PinUpdates`: expiry by a timer, an expiring document never undoing a newer one, an unchanged
/// document reported as up to date, and a rollback floor that outlives the stored document.
extension PinUpdatesTests {
    /// `PinUpdates` whose expiry timer waits on the test: it records the instant it waits for, then returns once
    /// `released` is true (the test moves the clock first).
    func timedUpdates(
        _ transport: HTTPSTransport, port: Int, requested: WaitableState<[Date]>, released: WaitableState<Bool>,
        seen: WaitableState<[String]>
    ) -> PinUpdates {
        let (events, clock) = (self.events, self.clock)
        return PinUpdates(
            transport: transport, documentURL: URL(string: "https://127.0.0.1:\(port)/pins.jws")!,
            verifier: signer.verifier, storePath: storePath, interval: .seconds(3600),
            onEvent: { event in
                events.withLockedValue { $0.append("\(event)") }
                seen.withLockedValue { $0.append("\(event)") }
            },
            now: { clock.withLockedValue { $0 } }, sleep: { _ in }, random: { 0.5 },
            sleepUntil: { date in
                requested.withLockedValue { $0.append(date) }
                try await released.wait(until: { $0 }, for: "the test to move the clock past the expiry")
            })
    }

    @Test func expiryIsEnforcedByATimerWithoutAnotherCall() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3, expiresIn: 1800) }
        let transport = try transport(Self.baseline(Self.matching))
        let (requested, released, seen) = (WaitableState<[Date]>([]), WaitableState(false), WaitableState<[String]>([]))
        let updates = timedUpdates(transport, port: server.port, requested: requested, released: released, seen: seen)
        try await updates.update()
        #expect(transport.pinning.version == 3)
        try await requested.wait(until: { !$0.isEmpty }, for: "the expiry timer to start")
        #expect(requested.withLockedValue { $0 } == [Self.start + 1800])

        // Time passes; nobody calls update() or run(): the timer alone puts the baseline back.
        clock.withLockedValue { $0 += 3600 }
        released.withLockedValue { $0 = true }
        try await seen.wait(until: { $0.contains { $0.contains("version 3 expired") } }, for: "the expiry event")
        #expect(transport.pinning.version == 0)
        #expect(transport.pinning.pinSet(for: "127.0.0.1")?.pins == Self.matching.map(TestCertificates.pin))
        #expect(updates.documentInForce == nil)
        await transport.shutdown()
        await server.stop()
    }

    @Test func anExpiringDocumentNeverUndoesANewerOne() async throws {
        let server = try await startServer()
        let transport = try transport(Self.baseline(Self.matching))
        served.withLockedValue { $0 = try! document(3, expiresIn: 1800) }
        let first = updates(transport, port: server.port)
        try await first.update()
        // Another updater of the same transport (a second instance, as the README's walkthrough makes) applies v4.
        served.withLockedValue { $0 = try! document(4) }
        #expect(try await updates(transport, port: server.port).update() == 4)
        clock.withLockedValue { $0 += 3600 }
        first.fallBackIfExpired()
        #expect(transport.pinning.version == 4)
        #expect(!reported.contains { $0.contains("expired") })
        await transport.shutdown()
        await server.stop()
    }

    @Test func anUnchangedDocumentIsUpToDateNotRefused() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.matching))
        let updates = updates(transport, port: server.port)
        #expect(try await updates.update() == 3)
        #expect(try await updates.update() == 3)
        #expect(reported == ["pin-set document version 3 applied", "pin-set document version 3 is up to date"])
        #expect(updates.documentInForce?.version == 3)
        #expect(updates.documentInForce?.policy.pinSet(for: "127.0.0.1")?.pins.contains(TestCertificates.pin("intermediate-1")) == true)
        await transport.shutdown()
        await server.stop()
    }

    @Test func theRollbackFloorSurvivesTheLossOfTheStoredDocument() async throws {
        let server = try await startServer()
        let older = try document(2)
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.matching))
        try await updates(transport, port: server.port).update()
        await transport.shutdown()

        // The stored document is lost; a new process starts, and the older (still valid) document is served.
        try FileManager.default.removeItem(atPath: storePath)
        let restarted = try self.transport(Self.baseline(Self.matching))
        let updates = updates(restarted, port: server.port)
        await updates.start()
        served.withLockedValue { $0 = older }
        await #expect(throws: PinSetDocumentError.notNewer(version: 2, current: 3)) { try await updates.update() }
        #expect(restarted.pinning.version == 0)
        await restarted.shutdown()
        await server.stop()
    }

    @Test func aCorruptFloorIsReportedAndTheStoredDocumentStillApplies() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.matching))
        try await updates(transport, port: server.port).update()
        await transport.shutdown()
        try TokenFileIO.atomicReplace(storePath + ".floor", with: Array("three\n".utf8))
        events.withLockedValue { $0 = [] }
        let restarted = try self.transport(Self.baseline(Self.matching))
        let updates = updates(restarted, port: server.port)
        await updates.start()
        #expect(restarted.pinning.version == 3)
        #expect(reported.first?.hasPrefix("stored pin-set document ignored") == true)
        #expect(reported.last == "pin-set document version 3 applied")
        // The stored document's version is the floor: an older document is still refused.
        served.withLockedValue { $0 = try! document(2) }
        await #expect(throws: PinSetDocumentError.notNewer(version: 2, current: 3)) { try await updates.update() }
        await restarted.shutdown()
        await server.stop()
    }

    @Test func aDocumentWhoseVersionCannotBeRecordedIsNotApplied() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        // A store directory others can read: the token store's file rules refuse every write there.
        #expect(chmod(directory, 0o755) == 0)
        defer { _ = chmod(directory, 0o700) }
        let transport = try transport(Self.baseline(Self.matching))
        await #expect(throws: CredentialError.self) { try await updates(transport, port: server.port).update() }
        #expect(transport.pinning.version == 0)
        #expect(reported.count == 1)
        #expect(reported.first?.hasPrefix("pin-set document version 3 not applied: its version cannot be recorded") == true)
        await transport.shutdown()
        await server.stop()
    }

    /// Issue 38, defect 9: the document is fetched with the chain and the host name verified but without the
    /// pins (its signature carries the trust), so pins that broke can still be fixed by the next document.
    @Test func aDocumentIsFetchedEvenWhenThePinsInForceFailTheServer() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.other))
        let updates = updates(transport, port: server.port)
        #expect(try await updates.update() == 3)
        #expect(transport.pinning.pinSet(for: "127.0.0.1")?.pins.contains(TestCertificates.pin("intermediate-1")) == true)
        // The app's own requests run under the document's pins now: the server passes them.
        let response = try await transport.send(
            .init(method: .get, scheme: nil, authority: nil, path: "/"), body: nil,
            baseURL: URL(string: "https://127.0.0.1:\(server.port)")!, operationID: "t")
        #expect(response.0.status == .ok)

        // Still no document from a server whose chain does not verify, or with a signature that does not.
        let stranger = try OpenSSLKey.generate(.ed25519)
        served.withLockedValue { $0 = try! signer.sign(signer.document(version: 4, now: Self.start), kid: "current", key: stranger) }
        await #expect(throws: PinSetDocumentError.badSignature(keyID: "current")) { try await updates.update() }
        let untrusting = try HTTPSTransport(
            configuration: .init(tls: TLSClientConfiguration(pinning: Self.baseline(Self.matching)), timeouts: .wide(), httpVersion: .http1Only))
        await #expect { try await self.updates(untrusting, port: server.port).update() } throws: { error in
            !(error is PinSetDocumentError)
        }
        #expect(untrusting.pinning.version == 0)
        await untrusting.shutdown()
        await transport.shutdown()
        await server.stop()
    }
}

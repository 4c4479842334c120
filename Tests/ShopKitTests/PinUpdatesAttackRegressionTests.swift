import NIOConcurrencyHelpers
import Foundation
import HTTPTypes
import ShopKitCore
import ShopKitCredentials
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// Issue 38's second adversarial pass, each break kept as a test (the clock injected, so load cannot move an
/// expiry): a restart that only calls `update()`, a second updater of one store, connections kept in the pool past
/// a document's expiry while its timer is late or its updater gone.
extension PinUpdatesTests {
    /// A transport whose pin checks read the test's clock (OpenSSL still verifies the chain on the real one).
    func clockedTransport(_ baseline: PinningPolicy, httpVersion: HTTPSTransport.HTTPVersionPolicy = .http1Only) throws
        -> HTTPSTransport
    {
        let clock = self.clock
        return try HTTPSTransport(
            configuration: .init(
                tls: TLSClientConfiguration(
                    trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false), pinning: baseline),
                timeouts: .wide(), httpVersion: httpVersion),
            now: { clock.withLockedValue { $0 } })
    }

    /// A restart that calls `update()` without `start()`: the floor file said 5, and an older (valid) document
    /// served then was applied. `update()` reads the floor from its file every time.
    @Test func anUpdateWithoutStartNeverGoesBelowTheStoredFloor() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(5) }
        let first = try transport(Self.baseline(Self.matching))
        #expect(try await updates(first, port: server.port).update() == 5)
        await first.shutdown()

        let older = try document(2)
        served.withLockedValue { $0 = older }
        let restarted = try transport(Self.baseline(Self.matching))
        await #expect(throws: PinSetDocumentError.notNewer(version: 2, current: 5)) {
            try await updates(restarted, port: server.port).update()
        }
        #expect(restarted.pinning.version == 0)
        await restarted.shutdown()
        await server.stop()
    }

    /// Two updaters of one transport and store, both started: the first applies 5, which expires; the second,
    /// whose floor in memory was older, then applied 2. The floor is read from its file at every update.
    @Test func aSecondUpdaterNeverAppliesAnOlderDocument() async throws {
        let server = try await startServer()
        let transport = try transport(Self.baseline(Self.matching))
        let first = updates(transport, port: server.port)
        let second = updates(transport, port: server.port)
        await first.start()
        await second.start()
        let older = try document(2)
        served.withLockedValue { $0 = try! document(5, expiresIn: 1800) }
        #expect(try await first.update() == 5)
        clock.withLockedValue { $0 += 3600 }
        first.fallBackIfExpired()
        #expect(transport.pinning.version == 0)
        served.withLockedValue { $0 = older }
        await #expect(throws: PinSetDocumentError.notNewer(version: 2, current: 5)) { try await second.update() }
        #expect(transport.pinning.version == 0)
        await transport.shutdown()
        await server.stop()
    }

    /// A connection verified under a document's pins, kept in the pool, carried requests after the document's
    /// `expiresAt` until its expiry timer ran (late, or never: the updater was released), against a baseline whose
    /// pins refuse the server. From `expiresAt` on, the pool checks its connections against the baseline at the
    /// next lease: the request goes to a new connection, which the baseline refuses, and reaches nobody.
    @Test(arguments: [(false, true), (false, false), (true, true), (true, false)])
    func aPooledConnectionCarriesNoRequestPastTheDocumentsExpiry(http2: Bool, updaterKept: Bool) async throws {
        let served = self.served
        let http1Server = http2 ? nil : try await startServer()
        let http2Server = http2 ? try await LoopbackHTTP2Server.start { request in
            .respond(body: request.path == "/pins.jws" ? Array(served.withLockedValue { $0 }.utf8) : Array("ok".utf8))
        } : nil
        let port = http1Server?.port ?? http2Server!.port
        let base = URL(string: "https://127.0.0.1:\(port)")!
        let transport = try clockedTransport(Self.baseline(Self.other), httpVersion: http2 ? .automatic : .http1Only)
        let (requested, released, seen) = (WaitableState<[Date]>([]), WaitableState(false), WaitableState<[String]>([]))
        var updates: PinUpdates? = timedUpdates(transport, port: port, requested: requested, released: released, seen: seen)
        served.withLockedValue { $0 = try! document(3, expiresIn: 1800) }
        #expect(try await updates?.update() == 3)
        if !updaterKept { updates = nil }

        func get() async throws -> Int {
            let (head, _) = try await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/data"), body: nil, baseURL: base,
                operationID: "get")
            return head.status.code
        }
        // Under the document the server passes, and its connection stays in the pool.
        #expect(try await get() == 200)
        let requestsBefore = http1Server?.counts.requests ?? http2Server!.counts.requests
        let connectionsBefore = http1Server?.counts.accepted ?? http2Server!.counts.connections

        // Past expiresAt; the expiry timer has not run (held by the test, or gone with its updater).
        clock.withLockedValue { $0 = Self.start + 1801 }
        await #expect {
            _ = try await get()
        } throws: { error in
            guard let report = (error as? TLSError)?.pinFailureReport else { return false }
            return report.policyVersion == 0
        }
        #expect((http1Server?.counts.requests ?? http2Server!.counts.requests) == requestsBefore)
        #expect((http1Server?.counts.accepted ?? http2Server!.counts.connections) > connectionsBefore)
        released.withLockedValue { $0 = true }
        withExtendedLifetime(updates) {}
        await transport.shutdown()
        await http1Server?.stop()
        try await http2Server?.shutdown()
    }
}

extension PinsFileWatcherTests {
    /// The watcher applies a local file under the verifier's standard limits too: a version 5000 above the one in
    /// force, and a validity of 400 days, were applied.
    @Test func theWatcherKeepsTheVersionStepAndTheMaximumValidity() async throws {
        try write(version: 5000)
        let transport = try transport()
        let watcher = watcher(transport) { _ in }
        await #expect(throws: PinSetDocumentError.versionTooFar(version: 5000, current: 0, maximumStep: 1000)) {
            try await watcher.reload()
        }
        try write(version: 2, expiresIn: 400 * 86_400)
        await #expect(throws: PinSetDocumentError.validityTooLong(days: 401, maximumDays: 180)) {
            try await watcher.reload()
        }
        #expect(transport.pinning.version == 0)
        await transport.shutdown()
    }
}

import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// Signed CT log-list updates (issue 41) fetched from an in-process TLS server, applied to a real transport's log
/// list, stored in a real 0600 file, with an injected clock, sleeper and expiry timer.
@Suite(.timeLimit(.minutes(3))) struct CTLogListUpdatesTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    let signer = try! DocumentSigner()
    let clock = NIOLockedValueBox(CTLogListUpdatesTests.start)
    let events = NIOLockedValueBox<[String]>([])
    let served = NIOLockedValueBox("")
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ct-updates-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    /// In a directory the store creates (0700).
    var storePath: String { directory + "/store/ct-log-list.jws" }

    /// The test logs (TestCerts/ct), as the app's configuration ships them: the baseline.
    static let baseline = try! CTLogList(json: TestCertificates.ctData("test-log-list.json"))

    /// The test logs without log D, published at `timestamp`: the list a document carries.
    static func publishedList(timestamp: String = "2027-01-10T00:00:00Z") throws -> Data {
        var object = try JSONSerialization.jsonObject(with: TestCertificates.ctData("test-log-list.json")) as! [String: Any]
        object["log_list_timestamp"] = timestamp
        object["operators"] = (object["operators"] as! [[String: Any]]).filter { $0["name"] as? String != "ShopKit Test Operator Three" }
        return try JSONSerialization.data(withJSONObject: object)
    }

    /// A log-list document of `version`, issued an hour ago, signed under the log-list `typ`.
    func document(_ version: Int, expiresIn: TimeInterval = 86_400, logList: Data? = nil) throws -> String {
        let now = clock.withLockedValue { $0 }
        let json = try CTLogListDocument.json(
            version: version, issuedAt: now - 3600, expiresAt: now + expiresIn, audience: DocumentSigner.audience,
            logList: logList ?? Self.publishedList())
        return try CompactJWS.serialize(payload: Array(json.utf8), keyID: "current", kind: .ctLogList) {
            try signer.current.signEd25519($0)
        }
    }

    func startServer() async throws -> LoopbackHTTPServer {
        try await PinUpdatesTests.documentServer(serving: served, at: "/ct.jws")
    }

    func transport() throws -> HTTPSTransport {
        var tls = TLSClientConfiguration(trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false))
        tls.certificateTransparency = CertificateTransparencyPolicy(defaultMode: .reportOnly, logList: Self.baseline)
        return try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide(), httpVersion: .http1Only))
    }

    func updates(
        _ transport: HTTPSTransport, port: Int,
        sleepUntil: @escaping @Sendable (Date) async throws -> Void = { _ in try await Task.sleep(for: .seconds(3600)) }
    ) -> CTLogListUpdates {
        let (events, clock) = (self.events, self.clock)
        return CTLogListUpdates(
            transport: transport, documentURL: URL(string: "https://127.0.0.1:\(port)/ct.jws")!,
            verifier: signer.verifier, storePath: storePath, interval: .seconds(3600),
            onEvent: { event in events.withLockedValue { $0.append("\(event)") } }, now: { clock.withLockedValue { $0 } },
            sleep: { _ in }, random: { 0.5 }, sleepUntil: sleepUntil)
    }

    var reported: [String] { events.withLockedValue { $0 } }

    func mode(_ path: String) throws -> Int? { try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int }

    @Test func aFetchedLogListIsAppliedLiveAndStored() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport()
        #expect(transport.certificateTransparencyLogList == Self.baseline)
        let updates = updates(transport, port: server.port)
        #expect(try await updates.update() == 3)
        let published = try CTLogList(json: Self.publishedList())
        #expect(transport.certificateTransparencyLogList == published)
        #expect(transport.certificateTransparencyLogList.logs.count == 3)
        #expect(updates.documentInForce?.version == 3)
        #expect(try mode(storePath) == 0o600)
        #expect(try mode(storePath + ".floor") == 0o600)
        #expect(try mode((storePath as NSString).deletingLastPathComponent) == 0o700)
        #expect(try String(contentsOfFile: storePath + ".floor", encoding: .utf8) == "3\n")
        // The same document again: up to date, not refused.
        #expect(try await updates.update() == 3)
        #expect(reported == ["CT log-list document version 3 applied", "CT log-list document version 3 is up to date"])
        await transport.shutdown()
        await server.stop()
    }

    @Test func rollbackExpiredAndPinSetDocumentsAreRefused() async throws {
        let server = try await startServer()
        let transport = try transport()
        let updates = updates(transport, port: server.port)
        served.withLockedValue { $0 = try! document(3) }
        try await updates.update()
        let stored = try String(contentsOfFile: storePath, encoding: .utf8)
        let inForce = transport.certificateTransparencyLogList

        let pinSet = try signer.sign(signer.document(version: 4, now: clock.withLockedValue { $0 }), kid: "current")
        let refused: [(String, CTLogListDocumentError)] = [
            (try document(2), CTLogListDocumentError(reason: .notNewer(version: 2, current: 3))),
            (try document(4, expiresIn: 0), CTLogListDocumentError(reason: .expired(expiresAt: clock.withLockedValue { $0 }))),
            (pinSet, CTLogListDocumentError(reason: .wrongLogListType("shopkit-pins+jws"))),
        ]
        for (text, expected) in refused {
            served.withLockedValue { $0 = text }
            await #expect(throws: expected) { try await updates.update() }
            #expect(transport.certificateTransparencyLogList == inForce)
            #expect(updates.documentInForce?.version == 3)
            #expect(try String(contentsOfFile: storePath, encoding: .utf8) == stored)
        }
        let refusals = reported.filter { $0.hasPrefix("CT log-list document refused, log list unchanged") }
        #expect(refusals.count == 3)
        #expect(refusals.last?.contains("this is a pin-set document, never read as a log list") == true)
        #expect(refusals.first?.contains("the CT log-list document has version 2, not above the version in force (3)") == true)
        #expect(refusals.dropFirst().first?.contains("the CT log-list document expired at") == true)
        await transport.shutdown()
        await server.stop()
    }

    @Test func aListWhoseLogKeysDoNotLoadIsRefusedAndTheListInForceKept() async throws {
        let server = try await startServer()
        let transport = try transport()
        let updates = updates(transport, port: server.port)
        // Well-formed, signed, but its log's key is no key (and its id not the key's SHA-256): OpenSSL cannot load it.
        let unusable = #"{"log_list_timestamp":"2027-01-10T00:00:00Z","operators":[{"name":"One","logs":[{"description":"Log X","log_id":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","key":"MFkw","state":{"usable":{"timestamp":"2025-01-01T00:00:00Z"}}}]}]}"#
        served.withLockedValue { $0 = try! document(3, logList: Data(unusable.utf8)) }
        await #expect { try await updates.update() } throws: { error in
            guard case .malformedLogListDocument(let problem) = (error as? CTLogListDocumentError)?.reason else { return false }
            return problem.contains("does not load")
        }
        #expect(transport.certificateTransparencyLogList == Self.baseline)
        #expect(updates.documentInForce == nil)
        #expect(!FileManager.default.fileExists(atPath: storePath))
        #expect(reported.count == 1 && reported[0].hasPrefix("CT log-list document refused, log list unchanged"))
        await transport.shutdown()
        await server.stop()
    }

    @Test func theStoredDocumentIsAppliedAgainByStartAfterARestart() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let first = try transport()
        try await updates(first, port: server.port).update()
        await first.shutdown()
        let port = server.port
        await server.stop()

        // A restart: a new transport with the configuration's list, and the stored document, without any fetch.
        let restarted = try transport()
        #expect(restarted.certificateTransparencyLogList == Self.baseline)
        let updates = updates(restarted, port: port)
        await updates.start()
        #expect(restarted.certificateTransparencyLogList == (try CTLogList(json: Self.publishedList())))
        #expect(updates.documentInForce?.version == 3)
        #expect(reported.last == "CT log-list document version 3 applied")
        await restarted.shutdown()
    }

    @Test func theFloorFileSurvivesALostDocument() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let first = try transport()
        try await updates(first, port: server.port).update()
        await first.shutdown()
        try FileManager.default.removeItem(atPath: storePath)

        let restarted = try transport()
        let updates = updates(restarted, port: server.port)
        await updates.start()
        #expect(restarted.certificateTransparencyLogList == Self.baseline)
        #expect(updates.documentInForce == nil)
        // The old document, replayed: below the floor the lost document left.
        served.withLockedValue { $0 = try! document(2) }
        await #expect(throws: CTLogListDocumentError(reason: .notNewer(version: 2, current: 3))) { try await updates.update() }
        #expect(restarted.certificateTransparencyLogList == Self.baseline)
        served.withLockedValue { $0 = try! document(4) }
        #expect(try await updates.update() == 4)
        await restarted.shutdown()
        await server.stop()
    }

    /// From the document's expiry every handshake uses the baseline list, whether or not the updater (or its
    /// timer) still runs: here its timer never fires, and the transport reads the same clock.
    @Test func fromItsExpiryTheBaselineListAppliesWithoutTheUpdater() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3, expiresIn: 1800) }
        var tls = TLSClientConfiguration(trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false))
        tls.certificateTransparency = CertificateTransparencyPolicy(defaultMode: .reportOnly, logList: Self.baseline)
        let clock = self.clock
        let transport = try HTTPSTransport(
            configuration: .init(tls: tls, timeouts: .wide(), httpVersion: .http1Only), now: { clock.withLockedValue { $0 } })
        try await updates(transport, port: server.port, sleepUntil: { _ in try await Task.sleep(for: .seconds(3600)) })
            .update()
        #expect(transport.certificateTransparencyLogList != Self.baseline)
        clock.withLockedValue { $0 += 1799 }
        #expect(transport.certificateTransparencyLogList != Self.baseline, "still in force a second before its expiry")
        clock.withLockedValue { $0 += 1 }
        #expect(transport.certificateTransparencyLogList == Self.baseline)
        await transport.shutdown()
        await server.stop()
    }

    @Test func expiryFallsBackToTheBaselineList() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3, expiresIn: 1800) }
        let transport = try transport()
        let (requested, released) = (WaitableState<[Date]>([]), WaitableState(false))
        let seen = WaitableState<[String]>([])
        let (events, clock) = (self.events, self.clock)
        let updates = CTLogListUpdates(
            transport: transport, documentURL: URL(string: "https://127.0.0.1:\(server.port)/ct.jws")!,
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
        try await updates.update()
        #expect(transport.certificateTransparencyLogList != Self.baseline)
        try await requested.wait(until: { !$0.isEmpty }, for: "the expiry timer to start")
        #expect(requested.withLockedValue { $0 } == [Self.start + 1800])
        // run()'s next fetch is due no later than the expiry.
        #expect(updates.nextDelay(interval: .seconds(3600), random: 0.5) == .seconds(1800))

        clock.withLockedValue { $0 += 1800 }
        released.withLockedValue { $0 = true }
        try await seen.wait(until: { $0.contains("CT log-list document version 3 expired with no newer one: the baseline log list applies again") })
        #expect(transport.certificateTransparencyLogList == Self.baseline)
        #expect(updates.documentInForce == nil)

        // After a restart, the stored document, expired, is reported and never applied.
        let restarted = try self.transport()
        await self.updates(restarted, port: server.port).start()
        #expect(restarted.certificateTransparencyLogList == Self.baseline)
        #expect(reported.last == "CT log-list document version 3 expired with no newer one: the baseline log list applies again")
        await restarted.shutdown()
        await transport.shutdown()
        await server.stop()
    }
}

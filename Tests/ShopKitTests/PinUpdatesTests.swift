import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitOpenSSL
import ShopKitPinning
import TestSupport
import Testing
@testable import ShopKit

/// Signed pin-set updates fetched through the pinned transport they update, against an in-process TLS server,
/// stored in a real 0600 file, with an injected clock and sleeper.
@Suite(.timeLimit(.minutes(3))) struct PinUpdatesTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    let signer = try! DocumentSigner()
    let clock = NIOLockedValueBox(PinUpdatesTests.start)
    let events = NIOLockedValueBox<[String]>([])
    let served = NIOLockedValueBox("")
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pin-updates-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    var storePath: String { directory + "/pins.jws" }

    /// The server's chain matches `matching` (leaf and backup intermediate); `other` pins a foreign CA.
    static let matching = ["leaf-localhost-ecdsa", "backup-intermediate"]
    static let other = ["other-root", "other-intermediate"]

    static func baseline(_ pins: [String]) -> PinningPolicy {
        PinningPolicy(pinSets: [try! PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins.map(TestCertificates.pin))])
    }

    /// A document of `version` pinning 127.0.0.1 to the leaf and intermediate-1 (the server's chain matches).
    func document(_ version: Int, expiresIn: TimeInterval = 86_400, kid: String = "current") throws -> String {
        let now = clock.withLockedValue { $0 }
        let pins = ["leaf-localhost-ecdsa", "intermediate-1"].map { TestCertificates.pin($0).description }
        return try signer.sign(
            signer.document(version: version, now: now, expiresAt: now + expiresIn, pinSets: [["host": "127.0.0.1", "pins": pins]]),
            kid: kid)
    }

    func startServer() async throws -> LoopbackHTTPServer { try await Self.documentServer(serving: served, at: "/pins.jws") }

    /// A loopback TLS server (the standard chain, leaf-localhost-ecdsa) answering `path` with what `served` holds
    /// (and 200 with no body elsewhere): the document host of `PinUpdates` and `CTLogListUpdates` tests.
    static func documentServer(serving served: NIOLockedValueBox<String>, at path: String) async throws -> LoopbackHTTPServer {
        let tls = try TLSServerContext(
            certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))
        return try await LoopbackHTTPServer.start(
            extraHandlers: { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(tls.makeHandler(), position: .first)
                }
            },
            script: { request in
                request.uri == path ? .ok(Array(served.withLockedValue { $0 }.utf8)) : .ok()
            })
    }

    func transport(_ baseline: PinningPolicy) throws -> HTTPSTransport {
        try HTTPSTransport(
            configuration: .init(
                tls: TLSClientConfiguration(
                    trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false), pinning: baseline), timeouts: .wide(),
                httpVersion: .http1Only))
    }

    func updates(
        _ transport: HTTPSTransport, port: Int, sleep: @escaping @Sendable (Duration) async throws -> Void = { _ in },
        random: @escaping @Sendable () -> Double = { 0.5 }, fetch: PinUpdates.DocumentFetch = .unpinned
    ) -> PinUpdates {
        let (events, clock) = (self.events, self.clock)
        return PinUpdates(
            transport: transport, documentURL: URL(string: "https://127.0.0.1:\(port)/pins.jws")!,
            verifier: signer.verifier, storePath: storePath, interval: .seconds(3600),
            onEvent: { event in events.withLockedValue { $0.append("\(event)") } }, now: { clock.withLockedValue { $0 } },
            sleep: sleep, random: random, fetch: fetch)
    }

    var reported: [String] { events.withLockedValue { $0 } }

    @Test func aFetchedDocumentIsAppliedStoredAndSurvivesARestart() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.matching))
        let version = try await updates(transport, port: server.port).update()
        #expect(version == 3)
        #expect(transport.pinning.version == 3)
        let mode = try FileManager.default.attributesOfItem(atPath: storePath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(reported == ["pin-set document version 3 applied"])
        await transport.shutdown()

        // A restart: a new transport with the baseline compiled in, and the stored document, without any fetch.
        let port = server.port
        await server.stop()
        let restarted = try self.transport(Self.baseline(Self.matching))
        #expect(restarted.pinning.version == 0)
        await updates(restarted, port: port).start()
        #expect(restarted.pinning.version == 3)
        #expect(restarted.pinning.pinSet(for: "127.0.0.1")?.pins.contains(TestCertificates.pin("intermediate-1")) == true)
        #expect(reported.last == "pin-set document version 3 applied")
        await restarted.shutdown()
    }

    /// Certificate Transparency enforced for every host, the tests' root public, and a document host whose
    /// certificate carries no SCT: a pinned fetch (through the app's transport) is refused by CT; the default,
    /// unpinned fetch leaves CT unchecked as it leaves the pins, since the signature carries the trust.
    @Test func anUnpinnedFetchLeavesCertificateTransparencyUncheckedAndAPinnedOneDoesNot() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        var tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false), pinning: Self.baseline(Self.matching))
        tls.certificateTransparency = CertificateTransparencyPolicy(
            defaultMode: .enforced, logList: try CTLogList(json: TestCertificates.ctData("test-log-list.json")),
            maximumLogListAge: 100 * 365 * 86_400,  // enforced whatever the day the test runs
            publicRoots: .spkiPins([TestCertificates.pin("root")]))
        let transport = try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide(), httpVersion: .http1Only))
        await #expect {
            try await updates(transport, port: server.port, fetch: .pinned).update()
        } throws: { error in
            (error as? TLSError)?.code == .certificateTransparency
        }
        #expect(transport.pinning.version == 0)
        let version = try await updates(transport, port: server.port).update()
        #expect(version == 3)
        #expect(transport.pinning.version == 3)
        await transport.shutdown()
        await server.stop()
    }

    @Test func aFetchThroughAServerWhoseChainFailsThePinsIsRefused() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.other))
        await #expect {
            // An app that chose to fetch under its pins (the default fetches without them: PinUpdatesRulesTests).
            try await updates(transport, port: server.port, fetch: .pinned).update()
        } throws: { error in
            guard let report = (error as? TLSError)?.pinFailureReport else { return false }
            return report.policyVersion == 0
        }
        #expect(transport.pinning.version == 0)
        #expect(transport.pinning.pinSet(for: "127.0.0.1")?.pins == Self.other.map(TestCertificates.pin))
        #expect(server.counts.requests == 0)
        #expect(!FileManager.default.fileExists(atPath: storePath))
        #expect(reported.count == 1 && reported[0].hasPrefix("pin-set document fetch failed, pins unchanged"))
        await transport.shutdown()
        await server.stop()
    }

    @Test func aRefusedDocumentChangesNothing() async throws {
        let server = try await startServer()
        let transport = try transport(Self.baseline(Self.matching))
        let updates = updates(transport, port: server.port)
        served.withLockedValue { $0 = try! document(3) }
        try await updates.update()
        let stored = try String(contentsOfFile: storePath, encoding: .utf8)

        let stranger = try OpenSSLKey.generate(.ed25519)
        let refused: [(String, PinSetDocumentError)] = [
            (try document(2), .notNewer(version: 2, current: 3)),
            // Another document of the version in force (the very same one is "up to date": PinUpdatesRulesTests).
            (try document(3, expiresIn: 7200), .notNewer(version: 3, current: 3)),
            (try signer.sign(signer.document(version: 4, now: clock.withLockedValue { $0 }), kid: "current", key: stranger),
             .badSignature(keyID: "current")),
        ]
        for (text, expected) in refused {
            served.withLockedValue { $0 = text }
            await #expect(throws: expected) { try await updates.update() }
            #expect(transport.pinning.version == 3)
            #expect(try String(contentsOfFile: storePath, encoding: .utf8) == stored)
        }
        #expect(reported.filter { $0.hasPrefix("pin-set document refused, pins unchanged") }.count == 3)
        await transport.shutdown()
        await server.stop()
    }

    @Test func anOlderStoredDocumentNeverRollsBackTheOneInForce() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.matching))
        try await updates(transport, port: server.port).update()
        try TokenFileIO.atomicReplace(storePath, with: Array(try document(2).utf8))
        await updates(transport, port: server.port).start()
        #expect(transport.pinning.version == 3)
        #expect(reported.last?.contains("not above the version in force (3)") == true)
        await transport.shutdown()
        await server.stop()
    }

    @Test func aCorruptOrTamperedStoredDocumentFallsBackToTheBaselineWithAReport() async throws {
        let valid = try document(3)
        let parts = valid.split(separator: ".")
        let tampered = "\(parts[0]).\(Base64URL.encode(Array(signer.document(version: 9, now: clock.withLockedValue { $0 }).utf8))).\(parts[2])"
        for (contents, reason) in [("{not a jws", "not a compact JWS"), (tampered, "does not verify")] {
            try TokenFileIO.atomicReplace(storePath, with: Array(contents.utf8))
            events.withLockedValue { $0 = [] }
            let transport = try transport(Self.baseline(Self.matching))
            await updates(transport, port: 1).start()
            #expect(transport.pinning.version == 0)
            #expect(transport.pinning.pinSet(for: "127.0.0.1")?.pins == Self.matching.map(TestCertificates.pin))
            #expect(reported.count == 1)
            #expect(reported.first?.hasPrefix("stored pin-set document ignored, the baseline pins apply") == true)
            #expect(reported.first?.contains(reason) == true)
            await transport.shutdown()
        }
    }

    @Test func anExpiredDocumentFallsBackToTheBaselineNeverToNoPins() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3, expiresIn: 1800) }
        let transport = try transport(Self.baseline(Self.matching))
        try await updates(transport, port: server.port).update()
        #expect(transport.pinning.version == 3)

        // run(): the first sleep is capped by the expiry; the clock then passes it; the second sleep ends the run.
        let (clock, delays) = (self.clock, NIOLockedValueBox<[Duration]>([]))
        let running = updates(transport, port: server.port) { delay in
            let count = delays.withLockedValue { $0.append(delay); return $0.count }
            guard count == 1 else { throw CancellationError() }
            clock.withLockedValue { $0 += 3600 }
        }
        // A new instance starts from the store: the same document, in force.
        await running.start()
        await running.run()
        #expect(delays.withLockedValue { $0.first } == .seconds(1800))
        #expect(transport.pinning.version == 0)
        #expect(transport.pinning.pinSet(for: "127.0.0.1")?.pins == Self.matching.map(TestCertificates.pin))
        #expect(reported.contains("pin-set document version 3 expired with no newer one: the baseline pins apply again"))
        // The expired document served again is refused (not above the version once applied): baseline stays.
        #expect(reported.last?.hasPrefix("pin-set document refused") == true)

        // A restart with only the expired document stored: the baseline, with the report.
        events.withLockedValue { $0 = [] }
        let restarted = try self.transport(Self.baseline(Self.matching))
        await updates(restarted, port: server.port).start()
        #expect(restarted.pinning.version == 0)
        #expect(reported == ["pin-set document version 3 expired with no newer one: the baseline pins apply again"])
        await transport.shutdown()
        await restarted.shutdown()
        await server.stop()
    }

    @Test func runFetchesEveryIntervalWithJitter() async throws {
        let server = try await startServer()
        served.withLockedValue { $0 = try! document(3) }
        let transport = try transport(Self.baseline(Self.matching))
        let (served, delays, randoms) = (self.served, NIOLockedValueBox<[Duration]>([]), NIOLockedValueBox([0.0, 1.0, 0.5]))
        let next = try document(4)
        let updates = updates(
            transport, port: server.port,
            sleep: { delay in
                let count = delays.withLockedValue { $0.append(delay); return $0.count }
                if count == 2 { served.withLockedValue { $0 = next } }
                if count == 3 { throw CancellationError() }
            },
            random: { randoms.withLockedValue { $0.removeFirst() } })
        await updates.run()
        #expect(delays.withLockedValue { $0 } == [.seconds(3240), .seconds(3960), .seconds(3600)])
        #expect(transport.pinning.version == 4)
        #expect(reported == ["pin-set document version 3 applied", "pin-set document version 4 applied"])
        await transport.shutdown()
        await server.stop()
    }
}

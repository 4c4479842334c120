import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(3))) struct SessionResumptionTests {
    @Test func resumedConnectionCarriesTheVerifiedChainAndVerdictOfItsSession() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(configuration: Probe.configuration(pins: ["intermediate-1", "backup-intermediate"]))

        let first = try await Probe.get(context: context, port: server.port)
        #expect(!first.info.resumed)
        #expect(context.sessionCache.count == 1)
        let second = try await Probe.get(context: context, port: server.port)

        #expect(second.info.resumed)
        #expect(second.info.presentedChain == nil)
        #expect(second.info.verifiedChain == first.info.verifiedChain)
        #expect(second.info.pinVerdict == first.info.pinVerdict)
        #expect(second.info.pinVerdict == .matched(pin: TestCertificates.pin("intermediate-1"), certificateIndex: 2))
        #expect(server.fullHandshakes == 1)
        #expect(server.resumptions == 1)
    }

    @Test func tls12SessionsAreCachedAfterThePinCheckAndResume() async throws {
        // TLS 1.2 hands the session out during the handshake, before the pin check: it must wait for it.
        let server = try await LoopbackTLSServer.start(
            chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa", maximumVersion: .tls12)
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(configuration: Probe.configuration(pins: ["leaf-localhost-ecdsa", "root"]))
        let first = try await Probe.get(context: context, port: server.port)
        #expect(first.info.protocolVersion == "TLSv1.2")
        let second = try await Probe.get(context: context, port: server.port)
        #expect(second.info.resumed)
        #expect(second.info.verifiedChain == first.info.verifiedChain)
        #expect(server.fullHandshakes == 1)
        #expect(server.resumptions == 1)
    }

    @Test func withResumptionOffEveryConnectionIsAFullHandshake() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        var configuration = try Probe.configuration(pins: ["intermediate-1", "backup-intermediate"])
        configuration.sessionResumption = false
        let context = try TLSClientContext(configuration: configuration)

        let first = try await Probe.get(context: context, port: server.port)
        let second = try await Probe.get(context: context, port: server.port)

        #expect(!first.info.resumed)
        #expect(!second.info.resumed)
        #expect(second.info.presentedChain != nil)
        #expect(context.sessionCache.count == 0)
        #expect(server.fullHandshakes == 2)
        #expect(server.resumptions == 0)
    }

    @Test func sessionsAreNotCachedWhenThePinCheckFails() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(configuration: Probe.configuration(pins: ["other-root", "other-intermediate"]))
        await #expect(throws: TLSError.self) { try await Probe.get(context: context, port: server.port) }
        await #expect(throws: TLSError.self) { try await Probe.get(context: context, port: server.port) }
        #expect(context.sessionCache.count == 0)
        #expect(server.resumptions == 0)
    }

    @Test func sessionMadeUnderOnePinSetIsNotResumedUnderAnother() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let shared = TLSSessionCache()
        let good = try TLSClientContext(
            configuration: Probe.configuration(pins: ["leaf-localhost-ecdsa", "root"]), sessionCache: shared)
        let wrong = try TLSClientContext(
            configuration: Probe.configuration(pins: ["other-root", "other-intermediate"]), sessionCache: shared)

        _ = try await Probe.get(context: good, port: server.port)
        #expect(shared.count == 1)
        // The other pin set checks a fresh chain and refuses it. (The server's own count of that handshake is
        // not read: the client closes as soon as the pins fail, before the server may have finished.)
        await #expect {
            try await Probe.get(context: wrong, port: server.port)
        } throws: { error in
            guard (error as? TLSError)?.code == .pinMismatch else { return false }
            return true
        }
        #expect(server.resumptions == 0)

        // The server would have resumed: the session is still there for the pin set that made it.
        let again = try await Probe.get(context: good, port: server.port)
        #expect(again.info.resumed)
        #expect(server.resumptions == 1)
    }
}

/// Replacing a context's pins: sessions cached under the old pin set are not resumed.
@Suite(.timeLimit(.minutes(3))) struct ReplacedPinsSessionTests {
    @Test func sessionsCachedUnderTheOldPinSetAreNotResumed() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(configuration: Probe.configuration(pins: ["intermediate-1", "backup-intermediate"]))
        _ = try await Probe.get(context: context, port: server.port)
        #expect(try await Probe.get(context: context, port: server.port).info.resumed)
        #expect(context.sessionCache.count == 1)

        // A new set that the chain still matches: the cached session (keyed by the old set) is not offered.
        let newSet = try PinSet(
            hostPattern: HostPattern("localhost"), pins: ["leaf-localhost-ecdsa", "backup-intermediate"].map(TestCertificates.pin))
        context.replacePinning(PinningPolicy(pinSets: [newSet], version: 2))
        let afterSwap = try await Probe.get(context: context, port: server.port)
        #expect(!afterSwap.info.resumed)
        #expect(afterSwap.info.pinVerdict == .matched(pin: TestCertificates.pin("leaf-localhost-ecdsa"), certificateIndex: 0))
        #expect(server.fullHandshakes == 2)
        #expect(server.resumptions == 1)

        // Sessions made under the new set resume under it.
        #expect(try await Probe.get(context: context, port: server.port).info.resumed)
        #expect(server.resumptions == 2)
    }

    @Test func aHandshakeUsesThePolicyInForceWhenItsHandlerWasMade() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let context = try TLSClientContext(configuration: Probe.configuration(pins: ["intermediate-1", "backup-intermediate"]))
        let refusing = try PinSet(hostPattern: HostPattern("localhost"), pins: ["other-root", "other-intermediate"].map(TestCertificates.pin))
        context.replacePinning(PinningPolicy(pinSets: [refusing], version: 9))
        #expect(context.pinning.version == 9)
        await #expect {
            _ = try await Probe.get(context: context, port: server.port)
        } throws: { error in
            guard let report = (error as? TLSError)?.pinFailureReport else { return false }
            return report.policyVersion == 9
        }
    }
}

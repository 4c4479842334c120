import Foundation
import NIOConcurrencyHelpers
import ShopKitTLS
import TestSupport
import Testing

/// Issue 25, defect 4: resumption is bounded. A session (and every ticket that resumed connections receive for
/// it) is offered only until `maximumSessionAge` after its first full handshake, and never past the earliest
/// `notAfter` of the verified chain cached with it (RFC 8446 §4.6.1). The clock is injected (`now`), no sleeps.
@Suite(.timeLimit(.minutes(3))) struct SessionAgeTests {
    static let start = Date()

    static func context(clock: NIOLockedValueBox<Date>, maximumAge: Duration? = nil) throws -> TLSClientContext {
        var configuration = try Probe.configuration(pins: ["intermediate-1", "backup-intermediate"])
        if let maximumAge { configuration.maximumSessionAge = maximumAge }
        return try TLSClientContext(configuration: configuration, now: { clock.withLockedValue { $0 } })
    }

    /// TLS 1.3: every resumed connection receives new tickets, which OpenSSL dates afresh.
    @Test func aSessionIsNotOfferedPastItsTotalAgeEvenAfterResumptions() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let clock = NIOLockedValueBox(Self.start)
        let context = try Self.context(clock: clock)
        #expect(TLSClientConfiguration().maximumSessionAge == .seconds(24 * 60 * 60))

        #expect(try await !Probe.get(context: context, port: server.port).info.resumed)
        // Each resumption stores the new ticket it receives; its age still counts from the first full handshake.
        for hours in [1, 12, 23] {
            clock.withLockedValue { $0 = Self.start.addingTimeInterval(Double(hours) * 3_600) }
            #expect(try await Probe.get(context: context, port: server.port).info.resumed, "after \(hours) h")
        }
        clock.withLockedValue { $0 = Self.start.addingTimeInterval(24 * 3_600) }
        let late = try await Probe.get(context: context, port: server.port)
        #expect(!late.info.resumed, "a session 24 h after its full handshake must not be offered")
        #expect(late.info.presentedChain != nil)
        #expect(server.fullHandshakes == 2)
        // The new full handshake starts a new 24 h.
        clock.withLockedValue { $0 = Self.start.addingTimeInterval(25 * 3_600) }
        #expect(try await Probe.get(context: context, port: server.port).info.resumed)
    }

    @Test(arguments: [TLSClientConfiguration.MinimumVersion.tls12, .tls13])
    func theMaximumAgeIsConfigurable(version: TLSClientConfiguration.MinimumVersion) async throws {
        let server = try await LoopbackTLSServer.start(
            chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa", maximumVersion: version)
        defer { Task { try? await server.shutdown() } }
        let clock = NIOLockedValueBox(Self.start)
        let context = try Self.context(clock: clock, maximumAge: .seconds(60))
        _ = try await Probe.get(context: context, port: server.port)
        clock.withLockedValue { $0 = Self.start.addingTimeInterval(59) }
        #expect(try await Probe.get(context: context, port: server.port).info.resumed)
        clock.withLockedValue { $0 = Self.start.addingTimeInterval(60) }
        #expect(try await !Probe.get(context: context, port: server.port).info.resumed)
    }

    @Test func aSessionIsNotOfferedPastTheEarliestNotAfterOfItsChain() async throws {
        let server = try await LoopbackTLSServer.start(chain: PinnedHandshakeTests.standard, key: "leaf-localhost-ecdsa")
        defer { Task { try? await server.shutdown() } }
        let clock = NIOLockedValueBox(Self.start)
        // An age bound far beyond the chain's validity, so only notAfter decides.
        let context = try Self.context(clock: clock, maximumAge: .seconds(100 * 365 * 24 * 3_600))
        let first = try await Probe.get(context: context, port: server.port)
        let notAfter = try #require(first.info.verifiedChain.certificates.map(\.notAfter).min())

        clock.withLockedValue { $0 = notAfter.addingTimeInterval(-1) }
        #expect(try await Probe.get(context: context, port: server.port).info.resumed)
        clock.withLockedValue { $0 = notAfter }
        #expect(context.sessionCache.count == 1)
        // Past notAfter the cached chain is expired: no resumption; OpenSSL verifies the chain again (the real
        // clock still accepts it, the injected one only decides what is offered).
        let late = try await Probe.get(context: context, port: server.port)
        #expect(!late.info.resumed)
        #expect(server.fullHandshakes == 2)
    }
}

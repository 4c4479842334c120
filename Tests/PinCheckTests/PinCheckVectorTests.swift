import Foundation
import NIOPosix
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport
import Testing

/// Every security-review vector of `TestCerts/vectors.json`, on a real loopback server, twice: through the
/// library — its `HTTPSTransport` with the pins enforced, and `ServerInspector` — and through the built `pin-check`
/// binary (exit status and JSON verdict).
@Suite("PinCheck vectors", .timeLimit(.minutes(3)))
struct PinCheckVectorTests {
    @Test("vector", arguments: PinCheckVector.all)
    func vector(_ vector: PinCheckVector) async throws {
        let server = try await VectorServer.start(for: vector)
        let caFile = try PinCheckBinary.temporaryFile(vector.trustPEM)
        defer { try? FileManager.default.removeItem(at: caFile) }
        // The two vectors that wait for a timeout get a short one, with room for a loaded machine's slow loopback
        // connect (the inspector's one clock starts once the connect has started on its loop). The others never
        // wait for it: 60 s only bounds a handshake that a machine running every suite at once on two cores has
        // delayed (5 s, then 15 s under load, were seen to run out there).
        let timeout = ["silent", "mute"].contains(vector.server) ? 3 : 60

        // The library's clients run on a loop of their own. A loop shared with every other suite can be held up
        // for seconds on a loaded machine, and NIO runs the timers that came due meanwhile before it polls for I/O
        // again: a connect that had completed ended as a connect timeout (seen twice, on the mute server).
        // Both inspections run before any expectation, so that the group is shut down on every path (a set-up
        // failure that throws included): `defer` cannot await.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let inspector = ServerInspector(
            address: ServerAddress(host: "127.0.0.1", port: server.port), serverName: vector.servername,
            pins: vector.resolvedPins, trustAnchorsPEM: vector.trustPEM, timeout: .seconds(timeout))
        let inspected: Result<ServerReport, any Error>
        do { inspected = .success(try await inspector.inspect(group: group)) } catch { inspected = .failure(error) }
        let transported: Result<TransportVerdict.Outcome, any Error>
        do {
            transported = .success(
                try await TransportVerdict.run(vector, port: server.port, timeout: .seconds(timeout), group: group))
        } catch {
            transported = .failure(error)
        }
        try await group.shutdownGracefully()
        let report = try inspected.get()
        #expect(report.verdict.rawValue == vector.verdict, "library: \(report.reason ?? "")")
        #expect(report.verdict.exitCode == vector.exit)
        if let reason = vector.reason {
            #expect(report.reason?.contains(reason) == true, "library reason: \(report.reason ?? "none")")
        }
        // The chain the server sent is shown for every TLS verdict (captured from a failed handshake too),
        // and a pin is never marked as matching it.
        if report.verdict != .connectFailed {
            #expect(report.presentedChain.count == vector.presents?.count)
        }
        #expect(report.presentedChain.allSatisfy { !$0.matched })
        if report.verdict == .ok || report.verdict == .pinMismatch {
            #expect(!report.verifiedChain.isEmpty)
        } else {
            #expect(report.verifiedChain.isEmpty)
            #expect(report.matchedPin == nil)
        }

        let viaTransport = try transported.get()
        #expect(viaTransport.verdict == vector.verdict, "transport: \(viaTransport.reason)")
        if let reason = vector.reason {
            #expect(viaTransport.reason.contains(reason), "transport reason: \(viaTransport.reason)")
        }

        var arguments = ["127.0.0.1:\(server.port)", "--json", "--ca-file", caFile.path, "--timeout", "\(timeout)"]
        if let name = vector.servername { arguments += ["--servername", name] }
        for pin in vector.resolvedPins { arguments += ["--pin", pin.description] }
        let outcome = try await PinCheckBinary.run(arguments)
        await server.stop()
        #expect(outcome.status == vector.exit, "pin-check: \(outcome.stderr)")
        #expect(outcome.verdict == vector.verdict, "pin-check stdout: \(outcome.stdout)")
        if let reason = vector.reason {
            #expect(outcome.reason?.contains(reason) == true, "pin-check reason: \(outcome.reason ?? "none")")
        }
    }

    /// Every verdict but `ct-not-compliant`, which needs `--ct enforced`, a log list and a CT leaf that a vector
    /// does not carry: `PinCheckCertificateTransparencyTests` covers it against s_server.
    @Test("vectors cover every verdict")
    func coverage() {
        let verdicts = Set(PinCheckVector.all.map(\.verdict))
        #expect(verdicts == Set(ServerReport.Verdict.allCases.map(\.rawValue)).subtracting(["ct-not-compliant"]))
    }
}

import Foundation
import HTTPTypes
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing
@testable import ShopKitHTTPS

/// Every request ends, whatever happens around it: the paths a loaded machine takes (handshakes and held requests
/// timing out), pins replaced while requests run, held responses released in bursts, and callers cancelling at
/// random points, over HTTP/1.1 and HTTP/2. A request that waited on something nothing resumes, with no timer
/// armed and deaf to cancellation, would hang its caller: each run has a deadline of its own.
///
/// The choices (timeouts, pool size, which request is cancelled, the delays between the events) come from the
/// case's seed; the delays are jitter that moves the events against each other, not waits for anything.
@Suite(.timeLimit(.minutes(3))) struct EveryRequestEndsTests {
    /// 24 requests (every third answered at once, the others held), a third of them cancelled after a random
    /// delay, while the pins change twice and the held responses are released in three bursts.
    static func run(seed: Int, baseURL: URL, httpVersion: HTTPSTransport.HTTPVersionPolicy, release: @escaping @Sendable () -> Void) async throws {
        var random = SeededRandom(seed: UInt64(seed))
        var tls = loopbackClientTLS
        tls.pinning = LivePinningTests.policy(LivePinningTests.pinsA, version: 1)
        let transport = try HTTPSTransport(
            configuration: .init(
                tls: tls,
                timeouts: .wide(
                    handshake: .milliseconds(Int.random(in: 1...60, using: &random)),
                    idleRead: .milliseconds(Int.random(in: 20...400, using: &random)), request: .seconds(5)),
                pool: .init(maxConnectionsPerHost: Int.random(in: 1...8, using: &random)), httpVersion: httpVersion))
        let cancelAfter = (0..<24).map { i in i % 3 == 1 ? Int.random(in: 0...50, using: &random) : nil }
        let pauses = (0..<4).map { _ in Int.random(in: 0...200, using: &random) }
        try await withDeadline("all 24 requests to end", timeout: .seconds(60)) {
            await withTaskGroup(of: Void.self) { group in
                for (i, cancelAfter) in cancelAfter.enumerated() {
                    group.addTask {
                        let request = Task { _ = try? await transport.fetch(.get, i % 3 == 0 ? "/" : "/hold", baseURL: baseURL) }
                        if let cancelAfter {
                            try? await Task.sleep(for: .milliseconds(cancelAfter))
                            request.cancel()
                        }
                        await request.value
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(pauses[0]))
                    transport.replacePinning(LivePinningTests.policy(LivePinningTests.pinsB, version: 2))
                    try? await Task.sleep(for: .milliseconds(pauses[1]))
                    release()
                    try? await Task.sleep(for: .milliseconds(pauses[2]))
                    release()
                    transport.replacePinning(LivePinningTests.policy(LivePinningTests.pinsA, version: 3))
                    try? await Task.sleep(for: .milliseconds(pauses[3]))
                    release()
                }
            }
        }
        await transport.shutdown()
    }

    @Test(arguments: 0..<16) func overHTTP1(seed: Int) async throws {
        let server = try await LoopbackHTTPServer.startTLS { request in request.uri == "/hold" ? .hold : .ok() }
        try await Self.run(seed: seed, baseURL: server.baseURL, httpVersion: .http1Only) { server.releaseHeld() }
        await server.stop()
    }

    @Test(arguments: 0..<16) func overHTTP2(seed: Int) async throws {
        let server = try await LoopbackHTTP2Server.start { request in request.path == "/hold" ? .hold : .respond(body: []) }
        try await Self.run(seed: seed, baseURL: URL(string: "https://127.0.0.1:\(server.port)")!, httpVersion: .automatic) {
            server.releaseHeld()
        }
        try await server.shutdown()
    }
}

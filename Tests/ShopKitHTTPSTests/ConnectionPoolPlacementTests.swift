import Foundation
import NIOCore
import NIOPosix
import Testing
import TestSupport
@testable import ShopKitHTTPS

/// The pool puts new connections on the group's loops as ``LoopPlacement`` decides, over real connections.
@Suite struct ConnectionPoolPlacementTests {
    @Test func concurrentConnectionsSpreadOverTheLoopsAndOneAtATimeKeepsToOne() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = HTTPSTransport(
            configuration: .init(eventLoopGroup: group), security: realSecurity())
        let target = try RequestTarget(baseURL: server.baseURL)
        let deadline = NIODeadline.now() + .seconds(30)
        // Three held at once: one per loop.
        let held = try await withThrowingTaskGroup(of: ConnectionPool.Lease.self) { tasks in
            for _ in 0..<3 { tasks.addTask { try await transport.pool.lease(target, deadline: deadline) } }
            return try await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(held.map { ObjectIdentifier($0.connection.channel.eventLoop) }).count == 3)
        for lease in held { transport.pool.release(lease, reusable: false) }
        // One at a time, each closed before the next: always the same loop.
        var loops: Set<ObjectIdentifier> = []
        for _ in 0..<4 {
            let lease = try await transport.pool.lease(target, deadline: deadline)
            #expect(!lease.reused)
            loops.insert(ObjectIdentifier(lease.connection.channel.eventLoop))
            transport.pool.release(lease, reusable: false)
        }
        #expect(loops.count == 1)
        await transport.shutdown()
        await server.stop()
        try await group.shutdownGracefully()
    }
}

import Foundation
import Logging
import NIOEmbedded
import NIOCore
import NIOPosix
import Testing
import TestSupport
@testable import ShopKitHTTPS

/// The pool puts new connections on the group's loops as ``LoopPlacement`` decides, over real connections.
@Suite(.timeLimit(.minutes(3))) struct ConnectionPoolPlacementTests {
    @Test func concurrentConnectionsSpreadOverTheLoopsAndOneAtATimeKeepsToOne() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = HTTPSTransport(
            configuration: .init(timeouts: .wide(), eventLoopGroup: group), security: realSecurity())
        let target = try RequestTarget(baseURL: server.baseURL)
        let deadline = NIODeadline.now() + .seconds(120)
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

/// The pool object with a fake connection opener on embedded event loops: no sockets, and time is the loops'
/// clock, moved by the test. The pool only carries out its machine's actions; these check that it does.
@Suite(.timeLimit(.minutes(3))) struct ConnectionPoolWithFakeConnectionsTests {
    /// Opens "connections" that are embedded channels on the loop the pool asks for; counts them.
    final class FakeOpener: ConnectionOpener, @unchecked Sendable {
        // @unchecked Sendable: the test runs synchronously on one thread, the embedded loops' own.
        var opened: [EmbeddedChannel] = []
        /// When set, the next connect fails with this error.
        var failNext: (any Error)?

        func connect(
            to target: RequestTarget, on loop: any EventLoop, events: @escaping @Sendable () -> HTTP2Connection.Events
        ) -> EventLoopFuture<(PooledConnection, stillTrusted: @Sendable () -> Bool)> {
            if let error = failNext {
                failNext = nil
                return loop.makeFailedFuture(error)
            }
            let channel = EmbeddedChannel(loop: loop as! EmbeddedEventLoop)
            _ = channel.connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: 443))
            opened.append(channel)
            let connection = PooledConnection.http1(HTTPClientConnection(channel: channel, handler: HTTP1ConnectionHandler()))
            return loop.makeSucceededFuture((connection, stillTrusted: { true }))
        }
    }

    /// What a lease handler received.
    final class Outcomes: @unchecked Sendable {
        // @unchecked Sendable: as above, one thread.
        var results: [Result<ConnectionPool.Lease, any Error>] = []
        var handler: ConnectionPool.LeaseHandler { { self.results.append($0) } }
        var leases: [ConnectionPool.Lease] { results.compactMap { try? $0.get() } }
    }

    let target = try! RequestTarget(baseURL: URL(string: "https://pool.test")!)

    /// Ends a test: the pool shuts down, every channel is finished and every loop shut down (which drops the
    /// timers still scheduled), so nothing is left holding the pool.
    func tearDown(_ pool: ConnectionPool, _ opener: FakeOpener, loops: [EmbeddedEventLoop]) throws {
        pool.shutDown()
        for channel in opener.opened { _ = try? channel.finish(acceptAlreadyClosed: true) }
        for loop in loops {
            loop.run()
            try loop.syncShutdownGracefully()
        }
    }

    func pool(_ opener: FakeOpener, loops: [EmbeddedEventLoop], maxPerHost: Int = 1) -> ConnectionPool {
        ConnectionPool(
            opener: opener, loops: loops, offersHTTP2: false, maxPerHost: maxPerHost, idleTimeout: .seconds(60),
            logger: Logger(label: "test"))
    }

    @Test func aWaiterEndsAtItsDeadlineAndTheFreedConnectionIsParkedNotHandedToIt() throws {
        let loop = EmbeddedEventLoop()
        let opener = FakeOpener()
        let pool = pool(opener, loops: [loop])
        let first = Outcomes(), second = Outcomes()
        #expect(pool.lease(target, deadline: loop.now + .seconds(30), handler: first.handler) != nil)
        loop.run()
        #expect(first.leases.count == 1 && opener.opened.count == 1)
        _ = pool.lease(target, deadline: loop.now + .seconds(5), handler: second.handler)
        loop.advanceTime(by: .seconds(4))
        #expect(second.results.isEmpty)
        loop.advanceTime(by: .seconds(1))
        #expect(second.results.count == 1)
        if case .failure(let error) = second.results.first {
            #expect(error as? HTTPSTransportError == .timeout(.request))
        } else {
            Issue.record("the waiter must end at its deadline with a request timeout")
        }
        pool.release(first.leases[0], reusable: true)
        #expect(second.results.count == 1)  // resumed once
        // The parked connection serves the next requester at once.
        let third = Outcomes()
        #expect(pool.lease(target, deadline: loop.now + .seconds(5), handler: third.handler) == nil)
        #expect(third.leases.first?.reused == true && opener.opened.count == 1)
        try tearDown(pool, opener, loops: [loop])
    }

    @Test func anIdleConnectionClosesAfterTheIdleTimeoutNotBefore() throws {
        let loop = EmbeddedEventLoop()
        let opener = FakeOpener()
        let pool = pool(opener, loops: [loop])
        let first = Outcomes()
        _ = pool.lease(target, deadline: loop.now + .seconds(30), handler: first.handler)
        loop.run()
        pool.release(first.leases[0], reusable: true)
        loop.advanceTime(by: .seconds(59))
        #expect(opener.opened[0].isActive)
        loop.advanceTime(by: .seconds(1))
        #expect(!opener.opened[0].isActive)
        // The next requester gets a new connection.
        let second = Outcomes()
        _ = pool.lease(target, deadline: loop.now + .seconds(30), handler: second.handler)
        loop.run()
        #expect(second.leases.first?.reused == false && opener.opened.count == 2)
        try tearDown(pool, opener, loops: [loop])
    }

    @Test func newConnectionsGoOnTheLoopsTheMachineChose() throws {
        let loops = [EmbeddedEventLoop(), EmbeddedEventLoop()]
        let opener = FakeOpener()
        let pool = pool(opener, loops: loops, maxPerHost: 2)
        let outcomes = Outcomes()
        for _ in 0..<2 { _ = pool.lease(target, deadline: loops[0].now + .seconds(30), handler: outcomes.handler) }
        for loop in loops { loop.run() }
        #expect(outcomes.leases.count == 2)
        #expect(opener.opened.map { ObjectIdentifier($0.eventLoop) } == loops.map { ObjectIdentifier($0) })
        try tearDown(pool, opener, loops: loops)
    }

    @Test func aFailedConnectionFailsItsWaiterAndTheNextOneIsOpenedAgain() throws {
        let loop = EmbeddedEventLoop()
        let opener = FakeOpener()
        opener.failNext = HTTPSTransportError.connectionClosed
        let pool = pool(opener, loops: [loop])
        let first = Outcomes(), second = Outcomes()
        _ = pool.lease(target, deadline: loop.now + .seconds(30), handler: first.handler)
        loop.run()
        #expect(first.leases.isEmpty && first.results.count == 1)
        _ = pool.lease(target, deadline: loop.now + .seconds(30), handler: second.handler)
        loop.run()
        #expect(second.leases.count == 1 && opener.opened.count == 1)
        try tearDown(pool, opener, loops: [loop])
    }
}

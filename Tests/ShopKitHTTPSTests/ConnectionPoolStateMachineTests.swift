import NIOCore
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

@Suite(.timeLimit(.minutes(3))) struct ConnectionPoolStateMachineTests: PoolMachineFixture {
    @Test func createsUpToTheLimitThenQueues() {
        var machine = Machine(maxPerKey: 2)
        #expect(machine.lease(key: "a", for: w(1)) == .create(new(c(1), w(1))))
        #expect(machine.lease(key: "a", for: w(2)) == .create(new(c(2), w(2))))
        #expect(machine.lease(key: "a", for: w(3)) == .wait)
        #expect(machine.counts(key: "a") == (idle: 0, leased: 2, waiting: 1))
    }

    @Test func limitIsPerKey() {
        var machine = Machine(maxPerKey: 1)
        #expect(machine.lease(key: "a", for: w(1)) == .create(new(c(1), w(1))))
        #expect(machine.lease(key: "b", for: w(2)) == .create(new(c(2), w(2))))
        #expect(machine.lease(key: "a", for: w(3)) == .wait)
    }

    @Test func reusableReleaseParksThenReusesMostRecentFirst() {
        var machine = Machine(maxPerKey: 4)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
        #expect(machine.release(key: "a", connection: c(2), reusable: true, now: t0) == parked(c(2)))
        #expect(machine.lease(key: "a", for: w(3)) == .use(c(2)))
        #expect(machine.lease(key: "a", for: w(4)) == .use(c(1)))
        #expect(machine.counts(key: "a") == (idle: 0, leased: 2, waiting: 0))
    }

    @Test func leaseIdleTakesAnIdleConnectionWithoutQueueingOrCreating() {
        var machine = Machine(maxPerKey: 1)
        #expect(machine.leaseIdle(key: "a") == nil)
        #expect(machine.counts(key: "a") == (idle: 0, leased: 0, waiting: 0))
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.leaseIdle(key: "a") == nil)
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
        #expect(machine.isIdle(key: "a", connection: c(1)))
        #expect(machine.leaseIdle(key: "a") == c(1))
        #expect(!machine.isIdle(key: "a", connection: c(1)))
        #expect(machine.counts(key: "a") == (idle: 0, leased: 1, waiting: 0))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parkedAgain(c(1)))
        _ = machine.shutDown()
        #expect(machine.leaseIdle(key: "a") == nil)
    }

    @Test func reusableReleaseGoesToTheFirstWaiter() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        _ = machine.lease(key: "a", for: w(3))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .handOver(c(1), to: w(2)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .handOver(c(1), to: w(3)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
    }

    @Test func nonReusableReleaseClosesAndOpensAReplacementForAWaiter() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.release(key: "a", connection: c(1), reusable: false, now: t0) == .closeAndCreate(c(1), create: new(c(2), w(2))))
        #expect(machine.release(key: "a", connection: c(2), reusable: false, now: t0) == .close(c(2)))
        #expect(machine.counts(key: "a") == (idle: 0, leased: 0, waiting: 0))
    }

    @Test func failedCreationFreesTheSlotForAWaiter() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.creationFailed(key: "a", connection: c(1)) == .create(new(c(2), w(2))))
        #expect(machine.creationFailed(key: "a", connection: c(2)) == .none)
        #expect(machine.lease(key: "a", for: w(3)) == .create(new(c(3), w(3))))
    }

    @Test func unknownOrDoubleReleaseDoesNothing() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .none)
        #expect(machine.release(key: "a", connection: c(9), reusable: false, now: t0) == .none)
        #expect(machine.release(key: "zzz", connection: c(1), reusable: false, now: t0) == .none)
    }

    @Test func idleTimeoutClosesOnlyIdleConnections() {
        var machine = Machine(maxPerKey: 2)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(60)) == .close(c(1)))
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(60)) == .none)
        #expect(machine.idleTimerFired(key: "a", connection: c(2), now: t0 + .seconds(60)) == .none)  // leased: a late timer must not close it
        #expect(machine.counts(key: "a") == (idle: 0, leased: 1, waiting: 0))
    }

    @Test func serverClosedIdleConnectionLeavesThePool() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        #expect(machine.connectionClosed(key: "a", connection: c(1)) == .none)
        #expect(machine.isUnknown(key: "a", connection: c(1)))
        #expect(machine.lease(key: "a", for: w(2)) == .create(new(c(2), w(2))))
    }

    @Test func closedLeasedConnectionStaysCountedUntilReleased() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.connectionClosed(key: "a", connection: c(1)) == .none)
        #expect(!machine.isUnknown(key: "a", connection: c(1)))
        #expect(machine.lease(key: "a", for: w(2)) == .wait)
        #expect(machine.release(key: "a", connection: c(1), reusable: false, now: t0) == .closeAndCreate(c(1), create: new(c(2), w(2))))
    }

    @Test func removedWaiterIsNotServed() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        let removed = machine.removeWaiter(key: "a", waiter: w(2))
        let removedAgain = machine.removeWaiter(key: "a", waiter: w(2))
        #expect(removed)
        #expect(!removedAgain)
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
    }

    @Test func shutDownClosesIdleFailsWaitersAndClosesLeasedOnRelease() {
        var machine = Machine(maxPerKey: 2)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        _ = machine.lease(key: "a", for: w(3))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)  // handed to w(3)
        _ = machine.release(key: "a", connection: c(2), reusable: true, now: t0)  // parked
        #expect(machine.lease(key: "a", for: w(4)) == .use(c(2)))
        _ = machine.release(key: "a", connection: c(2), reusable: true, now: t0)
        _ = machine.lease(key: "a", for: w(5))  // c(2) again
        _ = machine.lease(key: "a", for: w(6))  // waits
        #expect(machine.shutDown() == .shutDown(close: [], fail: [w(6)]))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .close(c(1)))
        #expect(machine.lease(key: "a", for: w(7)) == .failShutDown)
    }
}

/// The decisions the pool object used to make itself: idle timers, event-loop choice, where a deadline runs.
@Suite(.timeLimit(.minutes(3))) struct ConnectionPoolTimerAndLoopDecisionTests: PoolMachineFixture {
    @Test func anIdleTimerClosesOnlyAfterAWholeIdlePeriodSinceTheLastPark() {
        var machine = Machine(maxPerKey: 1, idleTimeout: .seconds(60))
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .park(c(1), armIdleTimer: t0 + .seconds(60)))
        // Reused and parked again at +30 s: the pending timer is kept (no timer work per request)...
        #expect(machine.lease(key: "a", for: w(2)) == .use(c(1)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0 + .seconds(30)) == .park(c(1), armIdleTimer: nil))
        // ...and when it fires it is armed again for the rest of that period, then closes.
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(60)) == .armIdleTimer(c(1), t0 + .seconds(90)))
        #expect(machine.isIdle(key: "a", connection: c(1)))
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(90)) == .close(c(1)))
        #expect(machine.isUnknown(key: "a", connection: c(1)))
    }

    @Test func aTimerThatFiresWhileTheConnectionIsInUseStopsUntilTheNextPark() {
        var machine = Machine(maxPerKey: 1, idleTimeout: .seconds(60))
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        #expect(machine.lease(key: "a", for: w(2)) == .use(c(1)))
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(60)) == .none)
        // The next park arms a new timer.
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0 + .seconds(70)) == .park(c(1), armIdleTimer: t0 + .seconds(130)))
    }

    @Test func aClosedConnectionsTimerFindsNothing() {
        var machine = Machine(maxPerKey: 1, idleTimeout: .seconds(60))
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        #expect(machine.connectionClosed(key: "a", connection: c(1)) == .none)
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(60)) == .none)
    }

    @Test func concurrentConnectionsSpreadOverTheLoopsAndOneAtATimeKeepsToOne() {
        var machine = Machine(maxPerKey: 4, loops: 3)
        #expect(machine.lease(key: "a", for: w(1)) == .create(.init(id: c(1), waiter: w(1), loop: 0)))
        #expect(machine.lease(key: "a", for: w(2)) == .create(.init(id: c(2), waiter: w(2), loop: 1)))
        #expect(machine.lease(key: "a", for: w(3)) == .create(.init(id: c(3), waiter: w(3), loop: 2)))
        #expect((0..<3).map { machine.connections(onLoop: $0) } == [1, 1, 1])
        // Closing frees the loop; one connection at a time then stays on the loop chosen last.
        for id in 1...3 { #expect(machine.release(key: "a", connection: c(id), reusable: false, now: t0) == .close(c(id))) }
        #expect((0..<3).map { machine.connections(onLoop: $0) } == [0, 0, 0])
        for id in 4...6 {
            #expect(machine.lease(key: "a", for: w(id)) == .create(.init(id: c(id), waiter: w(id), loop: 2)))
            _ = machine.release(key: "a", connection: c(id), reusable: false, now: t0)
        }
    }

    @Test func aFailedConnectionFreesItsLoop() {
        var machine = Machine(maxPerKey: 2, loops: 2)
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.connections(onLoop: 0) == 1)
        _ = machine.creationFailed(key: "a", connection: c(1))
        #expect(machine.connections(onLoop: 0) == 0)
    }

    /// Where a requester's deadline runs is the machine's call: on the loop of the connection opened for it, or,
    /// when it waits, anywhere.
    @Test func aRequesterThatWaitsIsToldSo() {
        var machine = Machine(maxPerKey: 1)
        guard case .create = machine.lease(key: "a", for: w(1)) else {
            Issue.record("the first requester opens a connection")
            return
        }
        #expect(machine.lease(key: "a", for: w(2)) == .wait)
    }
}

/// Pins replaced while connections are open: a connection the new pins refuse is never handed out again, and a
/// request running on it finishes there.
@Suite(.timeLimit(.minutes(3))) struct ConnectionPoolDistrustTests: PoolMachineFixture {
    @Test func anIdleConnectionClosesAndAWaiterGetsANewOne() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        #expect(machine.distrust(key: "a", connection: c(1)) == .close(c(1)))
        #expect(machine.lease(key: "a", for: w(2)) == .create(.init(id: c(2), waiter: w(2), loop: 0)))
    }

    @Test func aLeasedConnectionFinishesItsRequestThenClosesInsteadOfServingTheNext() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.lease(key: "a", for: w(2)) == .wait)
        #expect(machine.distrust(key: "a", connection: c(1)) == .none)  // its request runs on
        // Released as reusable by its request: closed all the same, and the waiter gets a new connection.
        #expect(
            machine.release(key: "a", connection: c(1), reusable: true, now: t0)
                == .closeAndCreate(c(1), create: .init(id: c(2), waiter: w(2), loop: 0)))
        // The replacement is trusted: it parks as usual.
        #expect(machine.release(key: "a", connection: c(2), reusable: true, now: t0) == .park(c(2), armIdleTimer: t0 + .seconds(60)))
    }

    @Test func anHTTP2ConnectionTakesNoNewStreamsAndClosesAfterItsLast() {
        var machine = Machine(maxPerKey: 4, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 100)
        #expect(machine.lease(key: "a", for: w(2)) == .use(c(1)))
        #expect(machine.distrust(key: "a", connection: c(1)) == .none)
        // A new requester does not get a stream on it.
        #expect(machine.lease(key: "a", for: w(3)) == .create(.init(id: c(2), waiter: w(3), loop: 0)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .none)
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .close(c(1)))
    }

    @Test func anUnknownConnectionIsIgnored() {
        var machine = Machine(maxPerKey: 1)
        #expect(machine.distrust(key: "a", connection: c(9)) == .none)
    }

    /// A connection opened while the pins were replaced is never used: another takes its place for the same
    /// requester, at the limit too, and requesters waiting behind it keep waiting for it.
    @Test func aConnectionBeingOpenedIsReplacedForTheSameRequester() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.lease(key: "a", for: w(2)) == .wait)
        #expect(machine.reopen(key: "a", connection: c(1), for: w(1)) == .init(id: c(2), waiter: w(1), loop: 0))
        #expect(machine.isUnknown(key: "a", connection: c(1)))
        #expect(machine.counts(key: "a") == (idle: 0, leased: 1, waiting: 1))
        // The replacement speaks HTTP/2: the waiter gets a stream on it.
        #expect(machine.established(key: "a", connection: c(2), streamCapacity: 100) == .handOverStreams(c(2), to: [w(2)]))
        // Only a connection being opened is replaced; none after shutdown.
        #expect(machine.reopen(key: "a", connection: c(2), for: w(1)) == nil)
        _ = machine.lease(key: "b", for: w(3))
        _ = machine.shutDown()
        #expect(machine.reopen(key: "b", connection: c(3), for: w(3)) == nil)
    }
}

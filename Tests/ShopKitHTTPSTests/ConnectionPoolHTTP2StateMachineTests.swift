import NIOCore
import Testing
@testable import ShopKitHTTPS

/// The pool's HTTP/2 transitions, pure: one connection for many requesters, its stream capacity, GOAWAY, and
/// HTTP/1.1 after all.
@Suite(.timeLimit(.minutes(3))) struct ConnectionPoolHTTP2StateMachineTests: PoolMachineFixture {
    @Test func requestersWaitForTheConnectionBeingOpenedThenShareItsStreams() {
        var machine = Machine(maxPerKey: 8, offersHTTP2: true)
        #expect(machine.lease(key: "a", for: w(1)) == .create(new(c(1), w(1))))
        #expect(machine.lease(key: "a", for: w(2)) == .wait)
        #expect(machine.lease(key: "a", for: w(3)) == .wait)
        #expect(machine.established(key: "a", connection: c(1), streamCapacity: 100) == .handOverStreams(c(1), to: [w(2), w(3)]))
        #expect(machine.streams(key: "a", connection: c(1))! == (inUse: 3, capacity: 100, draining: false))
        #expect(machine.lease(key: "a", for: w(4)) == .use(c(1)))
        #expect(machine.leaseIdle(key: "a") == c(1))
    }

    @Test func withoutHTTP2OnOfferEveryRequesterOpensItsOwn() {
        var machine = Machine(maxPerKey: 8)
        #expect(machine.lease(key: "a", for: w(1)) == .create(new(c(1), w(1))))
        #expect(machine.lease(key: "a", for: w(2)) == .create(new(c(2), w(2))))
    }

    @Test func http1AfterAllOpensConnectionsForTheWaiters() {
        var machine = Machine(maxPerKey: 3, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2))
        _ = machine.lease(key: "a", for: w(3))
        _ = machine.lease(key: "a", for: w(4))
        #expect(machine.established(key: "a", connection: c(1), streamCapacity: nil) == .createEach([new(c(2), w(2)), new(c(3), w(3))]))
        // Known HTTP/1.1 now: no more waiting for connections being opened.
        #expect(machine.counts(key: "a") == (idle: 0, leased: 3, waiting: 1))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .handOver(c(1), to: w(4)))
    }

    @Test func aFullConnectionQueuesThenAnotherOpensForTheRest() {
        var machine = Machine(maxPerKey: 2, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        #expect(machine.established(key: "a", connection: c(1), streamCapacity: 2) == .none)
        #expect(machine.lease(key: "a", for: w(2)) == .use(c(1)))
        #expect(machine.lease(key: "a", for: w(3)) == .create(new(c(2), w(3))))
        #expect(machine.lease(key: "a", for: w(4)) == .wait)
        #expect(machine.openForWaiters(key: "a") == .none)  // one is being opened already
        #expect(machine.established(key: "a", connection: c(2), streamCapacity: 2) == .handOverStreams(c(2), to: [w(4)]))
    }

    /// New streams go to the busiest connection that has room, so a quieter one can go idle and time out.
    @Test func aNewStreamGoesToTheBusiestConnectionWithRoom() {
        var machine = Machine(maxPerKey: 3, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 3)
        _ = machine.lease(key: "a", for: w(2))
        _ = machine.lease(key: "a", for: w(3))  // c1 full: 3 streams
        #expect(machine.lease(key: "a", for: w(4)) == .create(new(c(2), w(4))))
        _ = machine.established(key: "a", connection: c(2), streamCapacity: 3)
        #expect(machine.lease(key: "a", for: w(5)) == .use(c(2)))  // the only one with room
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)  // c1: 1 stream, c2: 2
        #expect(machine.lease(key: "a", for: w(6)) == .use(c(2)))
        #expect(machine.leaseIdle(key: "a") == c(1))  // c2 full now
        #expect(machine.streams(key: "a", connection: c(1))! == (inUse: 2, capacity: 3, draining: false))
        #expect(machine.streams(key: "a", connection: c(2))! == (inUse: 3, capacity: 3, draining: false))
    }

    @Test func releasedStreamsGoToWaitersThenTheConnectionParksWhenIdle() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 1)
        #expect(machine.lease(key: "a", for: w(2)) == .wait)
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .handOver(c(1), to: w(2)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
        #expect(machine.isIdle(key: "a", connection: c(1)))
        #expect(machine.idleTimerFired(key: "a", connection: c(1), now: t0 + .seconds(60)) == .close(c(1)))
        #expect(machine.isUnknown(key: "a", connection: c(1)))
    }

    @Test func aLargerLimitFromTheServerServesWaiters() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 1)
        _ = machine.lease(key: "a", for: w(2))
        _ = machine.lease(key: "a", for: w(3))
        #expect(machine.streamCapacityChanged(key: "a", connection: c(1), to: 3) == .handOverStreams(c(1), to: [w(2), w(3)]))
    }

    @Test func goAwayDrainsAndTheLastStreamClosesTheConnection() {
        var machine = Machine(maxPerKey: 2, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 10)
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.goAway(key: "a", connection: c(1)) == .none)
        // No new streams on a draining connection: a new one is opened.
        #expect(machine.lease(key: "a", for: w(3)) == .create(new(c(2), w(3))))
        #expect(machine.release(key: "a", connection: c(1), reusable: false, now: t0) == .none)
        #expect(machine.release(key: "a", connection: c(1), reusable: false, now: t0) == .close(c(1)))
        #expect(machine.isUnknown(key: "a", connection: c(1)))
    }

    @Test func goAwayOnAnIdleConnectionClosesItAndServesAWaiter() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 1)
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .handOver(c(1), to: w(2)))
        _ = machine.lease(key: "a", for: w(3))
        // A draining connection does not count against the limit: the waiter gets a new connection at once, not
        // when the draining one's last stream ends.
        #expect(machine.goAway(key: "a", connection: c(1)) == .create(new(c(2), w(3))))
        #expect(machine.release(key: "a", connection: c(1), reusable: false, now: t0) == .close(c(1)))
    }

    /// With one connection per host, requests retried after a GOAWAY (or new ones) never queue behind a slow
    /// stream of the draining connection: the server asked for a new connection.
    @Test func aDrainingConnectionsSlowStreamNeverHoldsTheNextConnectionBack() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 10)
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.goAway(key: "a", connection: c(1)) == .none)  // nobody waits
        #expect(machine.lease(key: "a", for: w(3)) == .create(new(c(2), w(3))))
        #expect(machine.lease(key: "a", for: w(4)) == .wait)  // for c2, being opened
        #expect(machine.established(key: "a", connection: c(2), streamCapacity: 10) == .handOverStreams(c(2), to: [w(4)]))
        // The limit still holds for connections that take streams: c2 is the one.
        #expect(machine.lease(key: "a", for: w(5)) == .use(c(2)))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .none)
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .close(c(1)))
        #expect(machine.isUnknown(key: "a", connection: c(1)))
    }

    @Test func aClosedHTTP2ConnectionLeavesThePoolAndItsLateReleasesAreIgnored() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 4)
        _ = machine.lease(key: "a", for: w(2))
        #expect(machine.connectionClosed(key: "a", connection: c(1)) == .none)
        #expect(machine.release(key: "a", connection: c(1), reusable: false, now: t0) == .none)
        #expect(machine.lease(key: "a", for: w(3)) == .create(new(c(2), w(3))))
    }

    @Test func shutDownClosesIdleHTTP2ConnectionsAndDrainsBusyOnes() {
        var machine = Machine(maxPerKey: 2, offersHTTP2: true)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.established(key: "a", connection: c(1), streamCapacity: 4)
        _ = machine.lease(key: "b", for: w(2))
        _ = machine.established(key: "b", connection: c(2), streamCapacity: 4)
        #expect(machine.release(key: "b", connection: c(2), reusable: true, now: t0) == parked(c(2)))
        #expect(machine.shutDown() == .shutDown(close: [c(2)], fail: []))
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .close(c(1)))
    }
}

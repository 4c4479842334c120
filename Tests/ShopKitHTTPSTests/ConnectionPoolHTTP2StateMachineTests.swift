import Testing
@testable import ShopKitHTTPS

/// The pool's HTTP/2 transitions, pure: one connection for many requesters, its stream capacity, GOAWAY, and
/// HTTP/1.1 after all.
@Suite struct ConnectionPoolHTTP2StateMachineTests {
    typealias Machine = ConnectionPoolStateMachine<String>
    typealias C = Machine.ConnectionID
    typealias W = Machine.WaiterID

    func w(_ raw: Int) -> W { W(raw: raw) }
    func c(_ raw: Int) -> C { C(raw: raw) }

    @Test func requestersWaitForTheConnectionBeingOpenedThenShareItsStreams() {
        var machine = Machine(maxPerKey: 8, offersHTTP2: true)
        #expect(machine.lease("a", for: w(1)) == .create(c(1), for: w(1)))
        #expect(machine.lease("a", for: w(2)) == .none)
        #expect(machine.lease("a", for: w(3)) == .none)
        #expect(machine.established("a", c(1), streamCapacity: 100) == .handOverStreams(c(1), to: [w(2), w(3)]))
        #expect(machine.streams("a", c(1))! == (inUse: 3, capacity: 100, draining: false))
        #expect(machine.lease("a", for: w(4)) == .use(c(1), for: w(4)))
        #expect(machine.leaseIdle("a") == c(1))
    }

    @Test func withoutHTTP2OnOfferEveryRequesterOpensItsOwn() {
        var machine = Machine(maxPerKey: 8)
        #expect(machine.lease("a", for: w(1)) == .create(c(1), for: w(1)))
        #expect(machine.lease("a", for: w(2)) == .create(c(2), for: w(2)))
    }

    @Test func http1AfterAllOpensConnectionsForTheWaiters() {
        var machine = Machine(maxPerKey: 3, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        _ = machine.lease("a", for: w(3))
        _ = machine.lease("a", for: w(4))
        #expect(machine.established("a", c(1), streamCapacity: nil) == .createEach([c(2), c(3)], for: [w(2), w(3)]))
        // Known HTTP/1.1 now: no more waiting for connections being opened.
        #expect(machine.counts("a") == (idle: 0, leased: 3, waiting: 1))
        #expect(machine.release("a", c(1), reusable: true) == .handOver(c(1), to: w(4)))
    }

    @Test func aFullConnectionQueuesThenAnotherOpensForTheRest() {
        var machine = Machine(maxPerKey: 2, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        #expect(machine.established("a", c(1), streamCapacity: 2) == .none)
        #expect(machine.lease("a", for: w(2)) == .use(c(1), for: w(2)))
        #expect(machine.lease("a", for: w(3)) == .create(c(2), for: w(3)))
        #expect(machine.lease("a", for: w(4)) == .none)
        #expect(machine.openForWaiters("a") == .none)  // one is being opened already
        #expect(machine.established("a", c(2), streamCapacity: 2) == .handOverStreams(c(2), to: [w(4)]))
    }

    /// New streams go to the busiest connection that has room, so a quieter one can go idle and time out.
    @Test func aNewStreamGoesToTheBusiestConnectionWithRoom() {
        var machine = Machine(maxPerKey: 3, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 3)
        _ = machine.lease("a", for: w(2))
        _ = machine.lease("a", for: w(3))  // c1 full: 3 streams
        #expect(machine.lease("a", for: w(4)) == .create(c(2), for: w(4)))
        _ = machine.established("a", c(2), streamCapacity: 3)
        #expect(machine.lease("a", for: w(5)) == .use(c(2), for: w(5)))  // the only one with room
        _ = machine.release("a", c(1), reusable: true)
        _ = machine.release("a", c(1), reusable: true)  // c1: 1 stream, c2: 2
        #expect(machine.lease("a", for: w(6)) == .use(c(2), for: w(6)))
        #expect(machine.leaseIdle("a") == c(1))  // c2 full now
        #expect(machine.streams("a", c(1))! == (inUse: 2, capacity: 3, draining: false))
        #expect(machine.streams("a", c(2))! == (inUse: 3, capacity: 3, draining: false))
    }

    @Test func releasedStreamsGoToWaitersThenTheConnectionParksWhenIdle() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 1)
        #expect(machine.lease("a", for: w(2)) == .none)
        #expect(machine.release("a", c(1), reusable: true) == .handOver(c(1), to: w(2)))
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
        #expect(machine.isIdle("a", c(1)))
        #expect(machine.idleTimeoutFired("a", c(1)) == .close(c(1)))
        #expect(machine.isUnknown("a", c(1)))
    }

    @Test func aLargerLimitFromTheServerServesWaiters() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 1)
        _ = machine.lease("a", for: w(2))
        _ = machine.lease("a", for: w(3))
        #expect(machine.streamCapacityChanged("a", c(1), to: 3) == .handOverStreams(c(1), to: [w(2), w(3)]))
    }

    @Test func goAwayDrainsAndTheLastStreamClosesTheConnection() {
        var machine = Machine(maxPerKey: 2, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 10)
        _ = machine.lease("a", for: w(2))
        #expect(machine.goAway("a", c(1)) == .none)
        // No new streams on a draining connection: a new one is opened.
        #expect(machine.lease("a", for: w(3)) == .create(c(2), for: w(3)))
        #expect(machine.release("a", c(1), reusable: false) == .none)
        #expect(machine.release("a", c(1), reusable: false) == .close(c(1)))
        #expect(machine.isUnknown("a", c(1)))
    }

    @Test func goAwayOnAnIdleConnectionClosesItAndServesAWaiter() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 1)
        _ = machine.lease("a", for: w(2))
        #expect(machine.release("a", c(1), reusable: true) == .handOver(c(1), to: w(2)))
        _ = machine.lease("a", for: w(3))
        #expect(machine.goAway("a", c(1)) == .none)
        #expect(machine.release("a", c(1), reusable: false) == .closeAndCreate(c(1), create: c(2), for: w(3)))
    }

    @Test func aClosedHTTP2ConnectionLeavesThePoolAndItsLateReleasesAreIgnored() {
        var machine = Machine(maxPerKey: 1, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 4)
        _ = machine.lease("a", for: w(2))
        #expect(machine.connectionClosed("a", c(1)) == .none)
        #expect(machine.release("a", c(1), reusable: false) == .none)
        #expect(machine.lease("a", for: w(3)) == .create(c(2), for: w(3)))
    }

    @Test func shutDownClosesIdleHTTP2ConnectionsAndDrainsBusyOnes() {
        var machine = Machine(maxPerKey: 2, offersHTTP2: true)
        _ = machine.lease("a", for: w(1))
        _ = machine.established("a", c(1), streamCapacity: 4)
        _ = machine.lease("b", for: w(2))
        _ = machine.established("b", c(2), streamCapacity: 4)
        #expect(machine.release("b", c(2), reusable: true) == .park(c(2)))
        #expect(machine.shutDown() == .shutDown(close: [c(2)], fail: []))
        #expect(machine.release("a", c(1), reusable: true) == .close(c(1)))
    }
}

import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

@Suite struct ConnectionPoolStateMachineTests {
    typealias Machine = ConnectionPoolStateMachine<String>
    typealias C = Machine.ConnectionID
    typealias W = Machine.WaiterID

    func w(_ raw: Int) -> W { W(raw: raw) }
    func c(_ raw: Int) -> C { C(raw: raw) }

    @Test func createsUpToTheLimitThenQueues() {
        var machine = Machine(maxPerKey: 2)
        #expect(machine.lease("a", for: w(1)) == .create(c(1), for: w(1)))
        #expect(machine.lease("a", for: w(2)) == .create(c(2), for: w(2)))
        #expect(machine.lease("a", for: w(3)) == .none)
        #expect(machine.counts("a") == (idle: 0, leased: 2, waiting: 1))
    }

    @Test func limitIsPerKey() {
        var machine = Machine(maxPerKey: 1)
        #expect(machine.lease("a", for: w(1)) == .create(c(1), for: w(1)))
        #expect(machine.lease("b", for: w(2)) == .create(c(2), for: w(2)))
        #expect(machine.lease("a", for: w(3)) == .none)
    }

    @Test func reusableReleaseParksThenReusesMostRecentFirst() {
        var machine = Machine(maxPerKey: 4)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
        #expect(machine.release("a", c(2), reusable: true) == .park(c(2)))
        #expect(machine.lease("a", for: w(3)) == .use(c(2), for: w(3)))
        #expect(machine.lease("a", for: w(4)) == .use(c(1), for: w(4)))
        #expect(machine.counts("a") == (idle: 0, leased: 2, waiting: 0))
    }

    @Test func leaseIdleTakesAnIdleConnectionWithoutQueueingOrCreating() {
        var machine = Machine(maxPerKey: 1)
        #expect(machine.leaseIdle("a") == nil)
        #expect(machine.counts("a") == (idle: 0, leased: 0, waiting: 0))
        _ = machine.lease("a", for: w(1))
        #expect(machine.leaseIdle("a") == nil)
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
        #expect(machine.isIdle("a", c(1)))
        #expect(machine.leaseIdle("a") == c(1))
        #expect(!machine.isIdle("a", c(1)))
        #expect(machine.counts("a") == (idle: 0, leased: 1, waiting: 0))
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
        _ = machine.shutDown()
        #expect(machine.leaseIdle("a") == nil)
    }

    @Test func reusableReleaseGoesToTheFirstWaiter() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        _ = machine.lease("a", for: w(3))
        #expect(machine.release("a", c(1), reusable: true) == .handOver(c(1), to: w(2)))
        #expect(machine.release("a", c(1), reusable: true) == .handOver(c(1), to: w(3)))
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
    }

    @Test func nonReusableReleaseClosesAndOpensAReplacementForAWaiter() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        #expect(machine.release("a", c(1), reusable: false) == .closeAndCreate(c(1), create: c(2), for: w(2)))
        #expect(machine.release("a", c(2), reusable: false) == .close(c(2)))
        #expect(machine.counts("a") == (idle: 0, leased: 0, waiting: 0))
    }

    @Test func failedCreationFreesTheSlotForAWaiter() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        #expect(machine.creationFailed("a", c(1)) == .create(c(2), for: w(2)))
        #expect(machine.creationFailed("a", c(2)) == .none)
        #expect(machine.lease("a", for: w(3)) == .create(c(3), for: w(3)))
    }

    @Test func unknownOrDoubleReleaseDoesNothing() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
        #expect(machine.release("a", c(1), reusable: true) == .none)
        #expect(machine.release("a", c(9), reusable: false) == .none)
        #expect(machine.release("zzz", c(1), reusable: false) == .none)
    }

    @Test func idleTimeoutClosesOnlyIdleConnections() {
        var machine = Machine(maxPerKey: 2)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        _ = machine.release("a", c(1), reusable: true)
        #expect(machine.idleTimeoutFired("a", c(1)) == .close(c(1)))
        #expect(machine.idleTimeoutFired("a", c(1)) == .none)
        #expect(machine.idleTimeoutFired("a", c(2)) == .none)  // leased: a late timer must not close it
        #expect(machine.counts("a") == (idle: 0, leased: 1, waiting: 0))
    }

    @Test func serverClosedIdleConnectionLeavesThePool() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        _ = machine.release("a", c(1), reusable: true)
        #expect(machine.connectionClosed("a", c(1)) == .none)
        #expect(machine.isUnknown("a", c(1)))
        #expect(machine.lease("a", for: w(2)) == .create(c(2), for: w(2)))
    }

    @Test func closedLeasedConnectionStaysCountedUntilReleased() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        #expect(machine.connectionClosed("a", c(1)) == .none)
        #expect(!machine.isUnknown("a", c(1)))
        #expect(machine.lease("a", for: w(2)) == .none)
        #expect(machine.release("a", c(1), reusable: false) == .closeAndCreate(c(1), create: c(2), for: w(2)))
    }

    @Test func removedWaiterIsNotServed() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        let removed = machine.removeWaiter("a", w(2))
        let removedAgain = machine.removeWaiter("a", w(2))
        #expect(removed)
        #expect(!removedAgain)
        #expect(machine.release("a", c(1), reusable: true) == .park(c(1)))
    }

    @Test func shutDownClosesIdleFailsWaitersAndClosesLeasedOnRelease() {
        var machine = Machine(maxPerKey: 2)
        _ = machine.lease("a", for: w(1))
        _ = machine.lease("a", for: w(2))
        _ = machine.lease("a", for: w(3))
        _ = machine.release("a", c(1), reusable: true)  // handed to w(3)
        _ = machine.release("a", c(2), reusable: true)  // parked
        #expect(machine.lease("a", for: w(4)) == .use(c(2), for: w(4)))
        _ = machine.release("a", c(2), reusable: true)
        _ = machine.lease("a", for: w(5))  // c(2) again
        _ = machine.lease("a", for: w(6))  // waits
        #expect(machine.shutDown() == .shutDown(close: [], fail: [w(6)]))
        #expect(machine.release("a", c(1), reusable: true) == .close(c(1)))
        #expect(machine.lease("a", for: w(7)) == .failShutDown(w(7)))
    }
}

import NIOCore
import Testing
@testable import ShopKitHTTPS

/// A waiting requester's deadline, decided by the pool's state machine with its other timers: where the timer
/// runs, and what its firing means (a timeout, a timer armed again, or nothing once the requester was served or
/// gave up).
@Suite struct ConnectionPoolWaiterDeadlineTests: PoolMachineFixture {
    var deadline: NIODeadline { t0 + .seconds(30) }

    @Test func aRequesterThatOpensAConnectionHasItsDeadlineOnThatConnectionsLoop() {
        var machine = Machine(maxPerKey: 2, loops: 2)
        _ = machine.lease(key: "a", for: w(1))
        let (action, timer) = machine.lease(key: "a", for: w(2), deadline: deadline)
        #expect(action == .create(.init(id: c(2), waiter: w(2), loop: 1)))
        #expect(timer == .init(waiter: w(2), deadline: deadline, loop: 1))
    }

    @Test func aRequesterThatWaitsHasItsDeadlineOnAnyLoop() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        let (action, timer) = machine.lease(key: "a", for: w(2), deadline: deadline)
        #expect(action == .wait)
        #expect(timer == .init(waiter: w(2), deadline: deadline, loop: nil))
    }

    @Test func aRequesterServedAtOnceHasNoTimer() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.release(key: "a", connection: c(1), reusable: true, now: t0)
        let (action, timer) = machine.lease(key: "a", for: w(2), deadline: deadline)
        #expect(action == .use(c(1)))
        #expect(timer == nil)
        #expect(machine.waiterServed(w(2)) == false)
    }

    @Test func theDeadlineFailsAWaitingRequesterAndItLeavesTheQueue() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2), deadline: deadline)
        #expect(machine.waiterTimerFired(key: "a", waiter: w(2), now: deadline - .milliseconds(1)) == .rearm(deadline))
        #expect(machine.counts(key: "a").waiting == 1)
        #expect(machine.waiterTimerFired(key: "a", waiter: w(2), now: deadline) == .fail)
        #expect(machine.counts(key: "a").waiting == 0)
        // The connection freed next goes to nobody: it is parked.
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == parked(c(1)))
        #expect(machine.waiterTimerFired(key: "a", waiter: w(2), now: deadline) == .none)
    }

    @Test func theDeadlineFailsARequesterWhoseConnectionIsStillBeingOpened() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1), deadline: deadline)
        #expect(machine.waiterTimerFired(key: "a", waiter: w(1), now: deadline) == .fail)
        // The connection, once up, is the pool's (the requester that gave up hands it back).
        #expect(machine.counts(key: "a") == (idle: 0, leased: 1, waiting: 0))
    }

    @Test func aServedRequestersTimerDoesNothing() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2), deadline: deadline)
        #expect(machine.release(key: "a", connection: c(1), reusable: true, now: t0) == .handOver(c(1), to: w(2)))
        #expect(machine.waiterServed(w(2)) == true)
        #expect(machine.waiterServed(w(2)) == false)
        #expect(machine.waiterTimerFired(key: "a", waiter: w(2), now: deadline) == .none)
    }

    @Test func aRequesterThatGaveUpHasNoDeadlineLeft() {
        var machine = Machine(maxPerKey: 1)
        _ = machine.lease(key: "a", for: w(1))
        _ = machine.lease(key: "a", for: w(2), deadline: deadline)
        #expect(machine.removeWaiter(key: "a", waiter: w(2)) == true)
        #expect(machine.waiterTimerFired(key: "a", waiter: w(2), now: deadline) == .none)
        #expect(machine.waiterServed(w(2)) == false)
    }
}

import NIOCore
@testable import ShopKitHTTPS

/// What every test of the pool's state machine names the same way: short ids for connections and requesters, a
/// fixed start time, and the actions a park gives.
protocol PoolMachineFixture {}

extension PoolMachineFixture {
    typealias Machine = ConnectionPoolStateMachine<String>
    typealias C = Machine.ConnectionID
    typealias W = Machine.WaiterID

    func w(_ raw: Int) -> W { W(raw: raw) }
    func c(_ raw: Int) -> C { C(raw: raw) }
    /// Connection `c` opened for `w` on the only loop.
    func new(_ c: C, _ w: W) -> Machine.NewConnection { .init(id: c, waiter: w, loop: 0) }

    var t0: NIODeadline { .uptimeNanoseconds(1_000_000_000) }
    /// A first park at `t0`: the idle timer is armed for the default 60 s.
    func parked(_ c: C) -> Machine.Action { .park(c, armIdleTimer: t0 + .seconds(60)) }
    /// A park while the connection's timer is still pending: nothing to arm.
    func parkedAgain(_ c: C) -> Machine.Action { .park(c, armIdleTimer: nil) }
}

extension ConnectionPoolStateMachine {
    /// A lease whose deadline is not what the test is about (it never passes).
    mutating func lease(key: Key, for waiter: WaiterID) -> LeaseAction {
        lease(key: key, for: waiter, deadline: .distantFuture).action
    }
}

/// The bookkeeping of single-flight work: which callers wait for which in-flight operation.
///
/// A pure state machine (no tasks, no I/O): each event returns the action its owner must carry out. The auth
/// decorator uses it for shared token refreshes and the dedup decorator for shared requests; both keep it inside
/// an actor and resume continuations (the `Waiter`s) as told.
struct SingleFlight<Key: Hashable, Waiter> {
    /// One operation in flight and the callers waiting for it.
    private struct Flight {
        let id: UInt64
        var waiters: [UInt64: Waiter]
    }

    /// What ``join(_:waiterID:waiter:)`` asks the owner to do.
    enum JoinAction: Equatable {
        /// No operation was running for the key: start one, tagged `flightID`, and report its end with it.
        case start(flightID: UInt64)
        /// The waiter was added to the running operation.
        case joined
    }

    /// What ``leave(_:waiterID:cancelWhenEmpty:)`` asks the owner to do.
    enum LeaveAction {
        /// The waiter was not waiting any more (its operation had already ended): nothing.
        case none
        /// Resume the waiter with `CancellationError`.
        case resume(Waiter)
        /// Resume the waiter with `CancellationError` and cancel operation `flightID`: nobody waits for it now.
        case resumeAndCancel(Waiter, flightID: UInt64)
    }

    private var flights: [Key: Flight] = [:]
    private var lastID: UInt64 = 0

    /// A fresh identifier for a waiter.
    mutating func makeWaiterID() -> UInt64 {
        lastID &+= 1
        return lastID
    }

    /// Adds `waiter` to the operation for `key`, starting one when none runs.
    mutating func join(_ key: Key, waiterID: UInt64, waiter: Waiter) -> JoinAction {
        if flights[key] != nil {
            flights[key]?.waiters[waiterID] = waiter
            return .joined
        }
        lastID &+= 1
        flights[key] = Flight(id: lastID, waiters: [waiterID: waiter])
        return .start(flightID: lastID)
    }

    /// Operation `flightID` for `key` ended: evicts it and returns the waiters to resume with its result.
    ///
    /// Returns nothing when that operation was already evicted (cancelled, or replaced by a newer one).
    mutating func finish(_ key: Key, flightID: UInt64) -> [Waiter] {
        guard let flight = flights[key], flight.id == flightID else { return [] }
        flights[key] = nil
        return Array(flight.waiters.values)
    }

    /// Waiter `waiterID` was cancelled. With `cancelWhenEmpty`, the last waiter to leave evicts the operation and
    /// asks for it to be cancelled; without it the operation runs on and later callers can still join it.
    mutating func leave(_ key: Key, waiterID: UInt64, cancelWhenEmpty: Bool) -> LeaveAction {
        guard let waiter = flights[key]?.waiters.removeValue(forKey: waiterID) else { return .none }
        guard cancelWhenEmpty, let flight = flights[key], flight.waiters.isEmpty else { return .resume(waiter) }
        flights[key] = nil
        return .resumeAndCancel(waiter, flightID: flight.id)
    }

    /// Operations in flight.
    var flightCount: Int { flights.count }

    /// Callers waiting, over all operations.
    var waiterCount: Int { flights.values.reduce(0) { $0 + $1.waiters.count } }
}

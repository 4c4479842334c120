/// The bookkeeping of single-flight work: which callers wait for which in-flight operation.
///
/// A pure state machine (no tasks, no I/O): each event returns the action its owner must carry out. The auth
/// decorator uses it for shared token refreshes, keeps it inside its actor and resumes continuations (the
/// `Waiter`s) as told. (The dedup decorator's first caller runs the work itself: ``LeaderFlights``.)
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
    /// Returns nothing when that operation was already evicted (a late or repeated report).
    mutating func finish(_ key: Key, flightID: UInt64) -> [Waiter] {
        guard let flight = flights[key], flight.id == flightID else { return [] }
        flights[key] = nil
        return Array(flight.waiters.values)
    }

    /// Waiter `waiterID` was cancelled: it stops waiting and is returned, to be resumed with `CancellationError`
    /// (`nil` when its operation had already ended). The operation runs on, and later callers can still join it.
    mutating func leave(_ key: Key, waiterID: UInt64) -> Waiter? {
        flights[key]?.waiters.removeValue(forKey: waiterID)
    }

    /// Operations in flight.
    var flightCount: Int { flights.count }

    /// Callers waiting, over all operations.
    var waiterCount: Int { flights.values.reduce(0) { $0 + $1.waiters.count } }
}

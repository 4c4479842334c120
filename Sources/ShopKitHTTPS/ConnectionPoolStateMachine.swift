/// The keep-alive pool's bookkeeping as a pure state machine: events in, actions out, no I/O.
///
/// Per key (host and port of one transport, hence one TLS configuration) it tracks idle connections (reused
/// most recent first), leased ones (including those being opened for a requester) and requesters waiting
/// because the key is at `maxPerKey`. ``ConnectionPool`` carries the actions out.
struct ConnectionPoolStateMachine<Key: Hashable & Sendable>: Sendable {
    /// A connection's identity in the pool.
    struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        let raw: Int
        var description: String { "#\(raw)" }
    }

    /// A requester's identity in the pool.
    struct WaiterID: Hashable, Sendable {
        let raw: Int
    }

    /// What the pool must do next.
    enum Action: Equatable, Sendable {
        /// Nothing to do (for a lease: the requester waits).
        case none
        /// Give the idle connection to the requester (a reused connection: cancel its idle timer).
        case useIdle(ConnectionID, for: WaiterID)
        /// Open a new connection for the requester.
        case create(ConnectionID, for: WaiterID)
        /// Give the released, still open connection to a waiting requester (a reused connection).
        case handOver(ConnectionID, to: WaiterID)
        /// Keep the connection idle and start its idle timer.
        case park(ConnectionID)
        /// Close the connection.
        case close(ConnectionID)
        /// Close the connection, and open a new one for a waiting requester.
        case closeAndCreate(ConnectionID, create: ConnectionID, for: WaiterID)
        /// Refuse the requester: the pool is shut down.
        case failShutDown(WaiterID)
        /// Shut down: close the idle connections and refuse the waiting requesters.
        case shutDown(close: [ConnectionID], fail: [WaiterID])
    }

    private struct KeyState: Sendable {
        var idle: [ConnectionID] = []
        var leased: Set<ConnectionID> = []
        var waiters: [WaiterID] = []
        var total: Int { idle.count + leased.count }
    }

    /// The most connections (idle and leased) per key.
    let maxPerKey: Int
    private var keys: [Key: KeyState] = [:]
    private var nextConnection = 0
    private var isShutDown = false

    init(maxPerKey: Int) {
        precondition(maxPerKey > 0, "maxPerKey must be positive")
        self.maxPerKey = maxPerKey
    }

    /// A requester wants a connection for `key`.
    mutating func lease(_ key: Key, for waiter: WaiterID) -> Action {
        if isShutDown { return .failShutDown(waiter) }
        // Moved out of the dictionary so it is mutated in place (no copy of its collections).
        var state = keys.removeValue(forKey: key) ?? KeyState()
        defer { keys[key] = state }
        if let connection = state.idle.popLast() {
            state.leased.insert(connection)
            return .useIdle(connection, for: waiter)
        }
        if state.total < maxPerKey {
            let connection = makeID()
            state.leased.insert(connection)
            return .create(connection, for: waiter)
        }
        state.waiters.append(waiter)
        return .none
    }

    /// A requester wants a connection for `key` without waiting: the idle connection it now leases, or nil
    /// when none is idle (then it calls ``lease(_:for:)``).
    mutating func leaseIdle(_ key: Key) -> ConnectionID? {
        guard !isShutDown, keys[key]?.idle.isEmpty == false, var state = keys.removeValue(forKey: key) else {
            return nil
        }
        defer { keys[key] = state }
        guard let connection = state.idle.popLast() else { return nil }
        state.leased.insert(connection)
        return connection
    }

    /// A connection opened by ``Action/create(_:for:)`` failed to connect.
    mutating func creationFailed(_ key: Key, _ connection: ConnectionID) -> Action {
        release(key, connection, reusable: false, alreadyClosed: true)
    }

    /// A leased connection is back: `reusable` when the exchange completed on a keep-alive connection.
    mutating func release(_ key: Key, _ connection: ConnectionID, reusable: Bool) -> Action {
        release(key, connection, reusable: reusable, alreadyClosed: false)
    }

    private mutating func release(_ key: Key, _ connection: ConnectionID, reusable: Bool, alreadyClosed: Bool)
        -> Action
    {
        guard keys[key] != nil, var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        guard state.leased.remove(connection) != nil else { return .none }
        if isShutDown { return alreadyClosed ? .none : .close(connection) }
        if reusable {
            if !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                state.leased.insert(connection)
                return .handOver(connection, to: waiter)
            }
            state.idle.append(connection)
            return .park(connection)
        }
        if !state.waiters.isEmpty {
            let waiter = state.waiters.removeFirst()
            let replacement = makeID()
            state.leased.insert(replacement)
            return alreadyClosed ? .create(replacement, for: waiter) : .closeAndCreate(connection, create: replacement, for: waiter)
        }
        return alreadyClosed ? .none : .close(connection)
    }

    /// An idle connection's idle timer fired.
    mutating func idleTimeoutFired(_ key: Key, _ connection: ConnectionID) -> Action {
        guard var state = keys[key], let index = state.idle.firstIndex(of: connection) else { return .none }
        state.idle.remove(at: index)
        keys[key] = state
        return .close(connection)
    }

    /// A connection closed (by the server or an error). An idle one leaves the pool; a leased one is
    /// accounted for when its requester releases it.
    mutating func connectionClosed(_ key: Key, _ connection: ConnectionID) -> Action {
        guard var state = keys[key], let index = state.idle.firstIndex(of: connection) else { return .none }
        state.idle.remove(at: index)
        keys[key] = state
        return .none
    }

    /// A waiting requester gave up (cancelled or timed out). Returns whether it was still waiting.
    mutating func removeWaiter(_ key: Key, _ waiter: WaiterID) -> Bool {
        guard var state = keys[key], let index = state.waiters.firstIndex(of: waiter) else { return false }
        state.waiters.remove(at: index)
        keys[key] = state
        return true
    }

    /// Closes every idle connection, refuses the waiters; leased connections close when released.
    mutating func shutDown() -> Action {
        isShutDown = true
        var close: [ConnectionID] = []
        var fail: [WaiterID] = []
        for key in keys.keys {
            close += keys[key]!.idle
            fail += keys[key]!.waiters
            keys[key]!.idle = []
            keys[key]!.waiters = []
        }
        return .shutDown(close: close, fail: fail)
    }

    /// Counts for one key (for logs and tests).
    func counts(_ key: Key) -> (idle: Int, leased: Int, waiting: Int) {
        let state = keys[key] ?? KeyState()
        return (state.idle.count, state.leased.count, state.waiters.count)
    }

    private mutating func makeID() -> ConnectionID {
        nextConnection += 1
        return ConnectionID(raw: nextConnection)
    }
}

extension ConnectionPoolStateMachine {
    /// Whether `connection` is parked idle under `key`.
    func isIdle(_ key: Key, _ connection: ConnectionID) -> Bool {
        keys[key]?.idle.contains(connection) ?? false
    }

    /// Whether the pool no longer tracks `connection` (neither idle nor leased).
    func isUnknown(_ key: Key, _ connection: ConnectionID) -> Bool {
        guard let state = keys[key] else { return true }
        return !state.idle.contains(connection) && !state.leased.contains(connection)
    }
}

/// The keep-alive pool's bookkeeping as a pure state machine: events in, actions out, no I/O.
///
/// Per key (host and port of one transport, hence one TLS configuration) it tracks idle HTTP/1.1 connections
/// (reused most recent first), leased ones (including those being opened for a requester), multiplexed
/// HTTP/2 connections with their stream capacity and the streams in use, and requesters waiting because the
/// key is at `maxPerKey` (or because an HTTP/2 connection to the key is being opened, which will serve them).
/// ``ConnectionPool`` carries the actions out.
///
/// HTTP/2: a connection opened for a requester is leased like any other until it is established; if it
/// speaks HTTP/2 (``established(_:_:streamCapacity:)``) it becomes multiplexed, serving up to its capacity
/// (the server's `SETTINGS_MAX_CONCURRENT_STREAMS`) at once, and the waiting requesters share it. A key that
/// answered HTTP/2 once is not asked for more connections while one is being opened. After a GOAWAY a
/// connection takes no new streams and closes when its last stream is released.
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
        /// Give the requester a connection already open: an idle HTTP/1.1 connection, or a stream on an HTTP/2
        /// connection with room (which may be busy with other streams). A reused connection: its idle timer stops.
        case use(ConnectionID, for: WaiterID)
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
        /// Give a stream each on the multiplexed connection to these waiting requesters.
        case handOverStreams(ConnectionID, to: [WaiterID])
        /// Open a new connection for each of these waiting requesters (pairwise).
        case createEach([ConnectionID], for: [WaiterID])
    }

    /// An HTTP/2 connection's streams.
    private struct Multiplexed: Sendable {
        var capacity: Int
        var inUse: Int
        /// After a GOAWAY (or a failure): no new streams; closed once the last one is released.
        var draining = false
        var hasRoom: Bool { !draining && inUse < capacity }
    }

    private struct KeyState: Sendable {
        var idle: [ConnectionID] = []
        var leased: Set<ConnectionID> = []
        var waiters: [WaiterID] = []
        var multiplexed: [ConnectionID: Multiplexed] = [:]
        /// Leased connections still being opened.
        var connecting: Set<ConnectionID> = []
        /// Whether connections to this key negotiate HTTP/2 (nil: not known yet).
        var speaksHTTP2: Bool?
        var total: Int { idle.count + leased.count + multiplexed.count }

        /// A multiplexed connection with a free stream, the busiest first (so idle ones can time out).
        var roomyStream: ConnectionID? {
            // A loop, not `filter`: this runs on every lease, and `filter` builds a new dictionary each time.
            var best: (id: ConnectionID, inUse: Int)?
            for (connection, streams) in multiplexed where streams.hasRoom && streams.inUse > (best?.inUse ?? -1) {
                best = (connection, streams.inUse)
            }
            return best?.id
        }
    }

    /// The most connections (idle and leased) per key.
    let maxPerKey: Int
    /// Whether connections offer HTTP/2: then, until a key is known to speak HTTP/1.1, requesters wait for the
    /// connection being opened (one handshake, many streams) instead of each opening one.
    let offersHTTP2: Bool
    private var keys: [Key: KeyState] = [:]
    private var nextConnection = 0
    private var isShutDown = false

    init(maxPerKey: Int, offersHTTP2: Bool = false) {
        precondition(maxPerKey > 0, "maxPerKey must be positive")
        self.maxPerKey = maxPerKey
        self.offersHTTP2 = offersHTTP2
    }

    /// Whether a requester should wait for a connection being opened to `state`'s key rather than open one.
    private func awaitsConnecting(_ state: KeyState) -> Bool {
        !state.connecting.isEmpty && (state.speaksHTTP2 ?? offersHTTP2)
    }

    /// A requester wants a connection for `key`.
    mutating func lease(_ key: Key, for waiter: WaiterID) -> Action {
        if isShutDown { return .failShutDown(waiter) }
        // Moved out of the dictionary so it is mutated in place (no copy of its collections).
        var state = keys.removeValue(forKey: key) ?? KeyState()
        defer { keys[key] = state }
        if let connection = state.roomyStream {
            state.multiplexed[connection]!.inUse += 1
            return .use(connection, for: waiter)
        }
        if let connection = state.idle.popLast() {
            state.leased.insert(connection)
            return .use(connection, for: waiter)
        }
        // An HTTP/2 connection on its way (or one that may be) will serve this requester too.
        if awaitsConnecting(state) {
            state.waiters.append(waiter)
            return .none
        }
        if state.total < maxPerKey {
            let connection = makeID()
            state.leased.insert(connection)
            state.connecting.insert(connection)
            return .create(connection, for: waiter)
        }
        state.waiters.append(waiter)
        return .none
    }

    /// A requester wants a connection for `key` without waiting: the idle connection it now leases, or nil
    /// when none is idle (then it calls ``lease(_:for:)``).
    mutating func leaseIdle(_ key: Key) -> ConnectionID? {
        guard !isShutDown, let current = keys[key], !current.idle.isEmpty || !current.multiplexed.isEmpty,
            var state = keys.removeValue(forKey: key)
        else {
            return nil
        }
        defer { keys[key] = state }
        if let connection = state.roomyStream {
            state.multiplexed[connection]!.inUse += 1
            return connection
        }
        guard let connection = state.idle.popLast() else { return nil }
        state.leased.insert(connection)
        return connection
    }

    /// A connection opened by ``Action/create(_:for:)`` is up. `streamCapacity` is nil for HTTP/1.1 (the
    /// requester it was opened for has it), or the number of concurrent streams of an HTTP/2 connection:
    /// the requester has one, and waiting requesters get the others.
    mutating func established(_ key: Key, _ connection: ConnectionID, streamCapacity: Int?) -> Action {
        guard var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        state.connecting.remove(connection)
        guard let capacity = streamCapacity else {
            // HTTP/1.1: requesters that waited for a possible HTTP/2 connection need connections of their own.
            state.speaksHTTP2 = false
            var connections: [ConnectionID] = []
            var waiters: [WaiterID] = []
            while !isShutDown, !state.waiters.isEmpty, state.total < maxPerKey {
                let replacement = makeID()
                state.leased.insert(replacement)
                state.connecting.insert(replacement)
                connections.append(replacement)
                waiters.append(state.waiters.removeFirst())
            }
            return connections.isEmpty ? .none : .createEach(connections, for: waiters)
        }
        guard state.leased.remove(connection) != nil else { return .none }
        state.speaksHTTP2 = true
        state.multiplexed[connection] = Multiplexed(capacity: max(1, capacity), inUse: 1)
        if isShutDown { state.multiplexed[connection]!.draining = true }
        return handOverStreams(connection, &state)
    }

    /// Opens a connection for the first waiting requester if the key has room and none is being opened: the
    /// pool asks after an HTTP/2 connection handed out all its streams and requesters are still waiting.
    mutating func openForWaiters(_ key: Key) -> Action {
        guard var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        return createForWaiter(&state) ?? .none
    }

    /// An HTTP/2 connection's server changed its `SETTINGS_MAX_CONCURRENT_STREAMS`.
    mutating func streamCapacityChanged(_ key: Key, _ connection: ConnectionID, to capacity: Int) -> Action {
        guard keys[key]?.multiplexed[connection] != nil, var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        state.multiplexed[connection]!.capacity = max(0, capacity)
        return handOverStreams(connection, &state)
    }

    /// An HTTP/2 connection received GOAWAY: it takes no new streams and closes after its last one. A waiting
    /// requester gets a new connection.
    mutating func goAway(_ key: Key, _ connection: ConnectionID) -> Action {
        guard keys[key]?.multiplexed[connection] != nil, var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        state.multiplexed[connection]!.draining = true
        if state.multiplexed[connection]!.inUse == 0 {
            state.multiplexed[connection] = nil
            return closeAndServeWaiter(connection, &state, alreadyClosed: false)
        }
        return createForWaiter(&state) ?? .none
    }

    /// Gives streams of `connection` to waiting requesters while it has room.
    private func handOverStreams(_ connection: ConnectionID, _ state: inout KeyState) -> Action {
        var served: [WaiterID] = []
        while !state.waiters.isEmpty, state.multiplexed[connection]?.hasRoom == true {
            served.append(state.waiters.removeFirst())
            state.multiplexed[connection]!.inUse += 1
        }
        return served.isEmpty ? .none : .handOverStreams(connection, to: served)
    }

    /// A new connection for the first waiting requester, if the key has room for one.
    private mutating func createForWaiter(_ state: inout KeyState) -> Action? {
        guard !isShutDown, !state.waiters.isEmpty, state.total < maxPerKey, !awaitsConnecting(state) else { return nil }
        let waiter = state.waiters.removeFirst()
        let replacement = makeID()
        state.leased.insert(replacement)
        state.connecting.insert(replacement)
        return .create(replacement, for: waiter)
    }

    /// `connection` leaves the pool (closed unless `alreadyClosed`); a waiting requester gets a new one.
    private mutating func closeAndServeWaiter(_ connection: ConnectionID, _ state: inout KeyState, alreadyClosed: Bool)
        -> Action
    {
        if case .create(let replacement, let waiter)? = createForWaiter(&state) {
            return alreadyClosed ? .create(replacement, for: waiter) : .closeAndCreate(connection, create: replacement, for: waiter)
        }
        return alreadyClosed ? .none : .close(connection)
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
        if state.multiplexed[connection] != nil {
            return releaseStream(connection, reusable: reusable, &state)
        }
        guard state.leased.remove(connection) != nil else { return .none }
        state.connecting.remove(connection)
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
            state.connecting.insert(replacement)
            return alreadyClosed ? .create(replacement, for: waiter) : .closeAndCreate(connection, create: replacement, for: waiter)
        }
        return alreadyClosed ? .none : .close(connection)
    }

    /// A stream of a multiplexed connection is done; `reusable` when the connection can take more streams.
    private mutating func releaseStream(_ connection: ConnectionID, reusable: Bool, _ state: inout KeyState) -> Action {
        state.multiplexed[connection]!.inUse -= 1
        if !reusable || isShutDown { state.multiplexed[connection]!.draining = true }
        let streams = state.multiplexed[connection]!
        if streams.draining {
            guard streams.inUse == 0 else { return .none }
            state.multiplexed[connection] = nil
            return closeAndServeWaiter(connection, &state, alreadyClosed: false)
        }
        if !state.waiters.isEmpty {
            state.multiplexed[connection]!.inUse += 1
            return .handOver(connection, to: state.waiters.removeFirst())
        }
        return streams.inUse == 0 ? .park(connection) : .none
    }

    /// An idle connection's idle timer fired.
    mutating func idleTimeoutFired(_ key: Key, _ connection: ConnectionID) -> Action {
        if let streams = keys[key]?.multiplexed[connection] {
            guard streams.inUse == 0 else { return .none }
            keys[key]!.multiplexed[connection] = nil
            return .close(connection)
        }
        guard var state = keys[key], let index = state.idle.firstIndex(of: connection) else { return .none }
        state.idle.remove(at: index)
        keys[key] = state
        return .close(connection)
    }

    /// A connection closed (by the server or an error). An idle one leaves the pool; a leased one is
    /// accounted for when its requester releases it.
    mutating func connectionClosed(_ key: Key, _ connection: ConnectionID) -> Action {
        if keys[key]?.multiplexed[connection] != nil, var state = keys.removeValue(forKey: key) {
            // Its streams fail on their own; their releases find it gone.
            defer { keys[key] = state }
            state.multiplexed[connection] = nil
            return closeAndServeWaiter(connection, &state, alreadyClosed: true)
        }
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
            for (connection, streams) in keys[key]!.multiplexed {
                if streams.inUse == 0 {
                    close.append(connection)
                    keys[key]!.multiplexed[connection] = nil
                } else {
                    keys[key]!.multiplexed[connection]!.draining = true
                }
            }
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
    /// Whether `connection` is parked idle under `key` (an HTTP/2 connection: with no stream in use).
    func isIdle(_ key: Key, _ connection: ConnectionID) -> Bool {
        guard let state = keys[key] else { return false }
        if let streams = state.multiplexed[connection] { return streams.inUse == 0 }
        return state.idle.contains(connection)
    }

    /// Whether the pool no longer tracks `connection` (neither idle, leased nor multiplexed).
    func isUnknown(_ key: Key, _ connection: ConnectionID) -> Bool {
        guard let state = keys[key] else { return true }
        return !state.idle.contains(connection) && !state.leased.contains(connection)
            && state.multiplexed[connection] == nil
    }

    /// The streams in use and the capacity of a multiplexed connection (for tests).
    func streams(_ key: Key, _ connection: ConnectionID) -> (inUse: Int, capacity: Int, draining: Bool)? {
        keys[key]?.multiplexed[connection].map { ($0.inUse, $0.capacity, $0.draining) }
    }
}

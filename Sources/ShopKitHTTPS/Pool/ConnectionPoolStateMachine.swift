import NIOCore

/// The keep-alive pool's decisions as a pure state machine: events in, actions out, no I/O and no clock of its
/// own (the caller passes `now`). Every pool decision is made here, and ``ConnectionPool`` only carries the
/// actions out: which connection a requester gets, when one is opened and on which event loop
/// (``LoopPlacement``), where a waiting requester's deadline runs and whether it fails the requester when it fires,
/// when an idle connection's timer is armed and whether it closes the connection when it fires (``IdleClock``).
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

    /// A connection to open: for which requester, and on which of the pool's event loops (an index into them).
    struct NewConnection: Equatable, Sendable {
        let id: ConnectionID
        let waiter: WaiterID
        let loop: Int
    }

    /// What the pool does for a requester (``lease(key:for:)``).
    enum LeaseAction: Equatable, Sendable {
        /// Give the requester a connection already open: an idle HTTP/1.1 connection, or a stream on an HTTP/2
        /// connection with room (which may be busy with other streams). Nothing waits, so no deadline runs.
        case use(ConnectionID)
        /// Open a new connection for the requester; its deadline runs on that connection's loop, so the
        /// deadline, the connect, the handshake and the hand-over all happen on one thread.
        case create(NewConnection)
        /// The requester waits for a connection to be freed or opened; its deadline runs on any loop.
        case wait
        /// Refuse the requester: the pool is shut down.
        case failShutDown
    }

    /// A waiting requester's deadline timer: which requester, when it fires, and on which of the pool's event
    /// loops (an index into them), or nil for any loop (the requester's own, when it runs on one).
    struct WaiterTimer: Equatable, Sendable {
        let waiter: WaiterID
        let deadline: NIODeadline
        let loop: Int?
    }

    /// What the pool does when a waiting requester's timer fires.
    enum WaiterTimerAction: Equatable, Sendable {
        /// The requester was served, or gave up: nothing.
        case none
        /// The timer fired early: arm it again for the deadline.
        case rearm(NIODeadline)
        /// The deadline passed: the requester fails with a request timeout (it left the queue).
        case fail
    }

    /// What the pool must do after any other event.
    enum Action: Equatable, Sendable {
        case none
        /// Open a new connection for a waiting requester.
        case create(NewConnection)
        /// Give the released, still open connection to a waiting requester (a reused connection).
        case handOver(ConnectionID, to: WaiterID)
        /// Keep the connection idle; arm its idle timer for `armIdleTimer` (nil: its timer is pending already and
        /// will see this park when it fires).
        case park(ConnectionID, armIdleTimer: NIODeadline?)
        /// An idle timer fired early (the connection was parked again since): arm it again.
        case armIdleTimer(ConnectionID, NIODeadline)
        /// Close the connection.
        case close(ConnectionID)
        /// Close the connection, and open a new one for a waiting requester.
        case closeAndCreate(ConnectionID, create: NewConnection)
        /// Shut down: close the idle connections and refuse the waiting requesters.
        case shutDown(close: [ConnectionID], fail: [WaiterID])
        /// Give a stream each on the multiplexed connection to these waiting requesters.
        case handOverStreams(ConnectionID, to: [WaiterID])
        /// Open a new connection for each of these waiting requesters.
        case createEach([NewConnection])
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
        /// Leased HTTP/1.1 connections the current pins no longer trust: closed when released, never reused.
        var distrusted: Set<ConnectionID> = []
        /// Whether connections to this key negotiate HTTP/2 (nil: not known yet).
        var speaksHTTP2: Bool?
        /// The connections that count against ``ConnectionPoolStateMachine/maxPerKey``. A draining HTTP/2
        /// connection (after GOAWAY or a failure) does not: it takes no new stream, so counting it would leave
        /// waiting requesters queued behind its slowest stream (until their deadline, with one connection per host),
        /// where the server asked for a new connection. It still closes after its last stream.
        var total: Int {
            var draining = 0
            for streams in multiplexed.values where streams.draining { draining += 1 }
            return idle.count + leased.count + multiplexed.count - draining
        }

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
    /// How long a connection may stay idle.
    let idleTimeout: TimeAmount
    private var keys: [Key: KeyState] = [:]
    private var nextConnection = 0
    private var isShutDown = false
    /// The deadline of each requester that waits (in the queue, or for the connection being opened for it).
    private var waiterDeadlines: [WaiterID: NIODeadline] = [:]
    /// Each tracked connection's idle rule: whether its timer is pending, and since when it is parked.
    private var idleClocks: [ConnectionID: IdleClock] = [:]
    /// Which event loop each tracked connection (open or being opened) is on.
    private var placement: LoopPlacement<ConnectionID>

    /// A pool of at most `maxPerKey` connections per key, spread over `loops` event loops, closing connections
    /// idle for `idleTimeout`.
    init(maxPerKey: Int, offersHTTP2: Bool = false, loops: Int = 1, idleTimeout: TimeAmount = .seconds(60)) {
        precondition(maxPerKey > 0, "maxPerKey must be positive")
        self.maxPerKey = maxPerKey
        self.offersHTTP2 = offersHTTP2
        self.idleTimeout = idleTimeout
        self.placement = LoopPlacement(loops: loops)
    }

    /// Whether a requester should wait for a connection being opened to `state`'s key rather than open one.
    private func awaitsConnecting(_ state: KeyState) -> Bool {
        !state.connecting.isEmpty && (state.speaksHTTP2 ?? offersHTTP2)
    }

    /// A requester wants a connection for `key`, until `deadline`. When it has to wait (for a connection to be
    /// freed or opened), `timer` says where its deadline runs: on the loop of the connection opened for it, so the
    /// deadline, the connect, the handshake and the hand-over all happen on one thread, or on any loop when it
    /// waits for another requester's connection. When the timer fires, ``waiterTimerFired(key:waiter:now:)``
    /// decides.
    mutating func lease(key: Key, for waiter: WaiterID, deadline: NIODeadline) -> (action: LeaseAction, timer: WaiterTimer?) {
        let action = lease(key, for: waiter)
        switch action {
        case .create(let new):
            waiterDeadlines[waiter] = deadline
            return (action, WaiterTimer(waiter: waiter, deadline: deadline, loop: new.loop))
        case .wait:
            waiterDeadlines[waiter] = deadline
            return (action, WaiterTimer(waiter: waiter, deadline: deadline, loop: nil))
        case .use, .failShutDown:
            return (action, nil)
        }
    }

    private mutating func lease(_ key: Key, for waiter: WaiterID) -> LeaseAction {
        if isShutDown { return .failShutDown }
        // Moved out of the dictionary so it is mutated in place (no copy of its collections).
        var state = keys.removeValue(forKey: key) ?? KeyState()
        defer { keys[key] = state }
        if let connection = state.roomyStream {
            state.multiplexed[connection]!.inUse += 1
            idleClocks[connection]?.leased()
            return .use(connection)
        }
        if let connection = state.idle.popLast() {
            state.leased.insert(connection)
            idleClocks[connection]?.leased()
            return .use(connection)
        }
        // An HTTP/2 connection on its way (or one that may be) will serve this requester too.
        if awaitsConnecting(state) {
            state.waiters.append(waiter)
            return .wait
        }
        if state.total < maxPerKey {
            return .create(newConnection(for: waiter, &state))
        }
        state.waiters.append(waiter)
        return .wait
    }

    /// A requester wants a connection for `key` without waiting: the idle connection it now leases, or nil
    /// when none is idle (then it calls ``lease(key:for:)``).
    mutating func leaseIdle(key: Key) -> ConnectionID? {
        guard !isShutDown, let current = keys[key], !current.idle.isEmpty || !current.multiplexed.isEmpty,
            var state = keys.removeValue(forKey: key)
        else {
            return nil
        }
        defer { keys[key] = state }
        if let connection = state.roomyStream {
            state.multiplexed[connection]!.inUse += 1
            idleClocks[connection]?.leased()
            return connection
        }
        guard let connection = state.idle.popLast() else { return nil }
        state.leased.insert(connection)
        idleClocks[connection]?.leased()
        return connection
    }

    /// A connection opened by a `create` action is up. `streamCapacity` is nil for HTTP/1.1 (the requester it
    /// was opened for has it), or the number of concurrent streams of an HTTP/2 connection: the requester has
    /// one, and waiting requesters get the others.
    mutating func established(key: Key, connection: ConnectionID, streamCapacity: Int?) -> Action {
        guard var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        state.connecting.remove(connection)
        guard let capacity = streamCapacity else {
            // HTTP/1.1: requesters that waited for a possible HTTP/2 connection need connections of their own.
            state.speaksHTTP2 = false
            var connections: [NewConnection] = []
            while !isShutDown, !state.waiters.isEmpty, state.total < maxPerKey {
                connections.append(newConnection(for: state.waiters.removeFirst(), &state))
            }
            return connections.isEmpty ? .none : .createEach(connections)
        }
        guard state.leased.remove(connection) != nil else { return .none }
        state.speaksHTTP2 = true
        state.multiplexed[connection] = Multiplexed(capacity: max(1, capacity), inUse: 1)
        if isShutDown { state.multiplexed[connection]!.draining = true }
        return handOverStreams(connection, &state)
    }

    /// Opens a connection for the first waiting requester if the key has room and none is being opened: the
    /// pool asks after an HTTP/2 connection handed out all its streams and requesters are still waiting.
    mutating func openForWaiters(key: Key) -> Action {
        guard var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        return createForWaiter(&state).map(Action.create) ?? .none
    }

    /// An HTTP/2 connection's server changed its `SETTINGS_MAX_CONCURRENT_STREAMS`.
    mutating func streamCapacityChanged(key: Key, connection: ConnectionID, to capacity: Int) -> Action {
        guard keys[key]?.multiplexed[connection] != nil, var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        state.multiplexed[connection]!.capacity = max(0, capacity)
        return handOverStreams(connection, &state)
    }

    /// An HTTP/2 connection received GOAWAY: it takes no new streams and closes after its last one. A waiting
    /// requester gets a new connection.
    mutating func goAway(key: Key, connection: ConnectionID) -> Action {
        guard keys[key]?.multiplexed[connection] != nil, var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        state.multiplexed[connection]!.draining = true
        if state.multiplexed[connection]!.inUse == 0 {
            state.multiplexed[connection] = nil
            return closeAndServeWaiter(connection, &state, alreadyClosed: false)
        }
        return createForWaiter(&state).map(Action.create) ?? .none
    }

    /// Gives streams of `connection` to waiting requesters while it has room.
    private mutating func handOverStreams(_ connection: ConnectionID, _ state: inout KeyState) -> Action {
        var served: [WaiterID] = []
        while !state.waiters.isEmpty, state.multiplexed[connection]?.hasRoom == true {
            served.append(state.waiters.removeFirst())
            state.multiplexed[connection]!.inUse += 1
        }
        if !served.isEmpty { idleClocks[connection]?.leased() }
        return served.isEmpty ? .none : .handOverStreams(connection, to: served)
    }

    /// A new connection for the first waiting requester, if the key has room for one.
    private mutating func createForWaiter(_ state: inout KeyState) -> NewConnection? {
        guard !isShutDown, !state.waiters.isEmpty, state.total < maxPerKey, !awaitsConnecting(state) else { return nil }
        return newConnection(for: state.waiters.removeFirst(), &state)
    }

    /// `connection` leaves the pool (closed unless `alreadyClosed`); a waiting requester gets a new one.
    private mutating func closeAndServeWaiter(_ connection: ConnectionID, _ state: inout KeyState, alreadyClosed: Bool)
        -> Action
    {
        forget(connection)
        if let replacement = createForWaiter(&state) {
            return alreadyClosed ? .create(replacement) : .closeAndCreate(connection, create: replacement)
        }
        return alreadyClosed ? .none : .close(connection)
    }

    /// A connection opened by a `create` action failed to connect.
    mutating func creationFailed(key: Key, connection: ConnectionID) -> Action {
        // `now` is unused: a connection that is not reusable is never parked.
        release(key, connection, reusable: false, alreadyClosed: true, now: .distantPast)
    }

    /// A leased connection is back at `now`: `reusable` when the request completed on a keep-alive connection.
    mutating func release(key: Key, connection: ConnectionID, reusable: Bool, now: NIODeadline) -> Action {
        release(key, connection, reusable: reusable, alreadyClosed: false, now: now)
    }

    private mutating func release(
        _ key: Key, _ connection: ConnectionID, reusable: Bool, alreadyClosed: Bool, now: NIODeadline
    ) -> Action {
        guard keys[key] != nil, var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        if state.multiplexed[connection] != nil {
            return releaseStream(connection, reusable: reusable, &state, now: now)
        }
        guard state.leased.remove(connection) != nil else { return .none }
        state.connecting.remove(connection)
        let reusable = reusable && state.distrusted.remove(connection) == nil
        if isShutDown {
            forget(connection)
            return alreadyClosed ? .none : .close(connection)
        }
        if reusable {
            if !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                state.leased.insert(connection)
                return .handOver(connection, to: waiter)
            }
            state.idle.append(connection)
            return park(connection, now: now)
        }
        forget(connection)
        if !state.waiters.isEmpty {
            let replacement = newConnection(for: state.waiters.removeFirst(), &state)
            return alreadyClosed ? .create(replacement) : .closeAndCreate(connection, create: replacement)
        }
        return alreadyClosed ? .none : .close(connection)
    }

    /// A stream of a multiplexed connection is done; `reusable` when the connection can take more streams.
    private mutating func releaseStream(
        _ connection: ConnectionID, reusable: Bool, _ state: inout KeyState, now: NIODeadline
    ) -> Action {
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
        return streams.inUse == 0 ? park(connection, now: now) : .none
    }

    /// `connection` is idle from `now`: its idle timer is armed unless one is pending (see ``IdleClock``).
    private mutating func park(_ connection: ConnectionID, now: NIODeadline) -> Action {
        .park(connection, armIdleTimer: idleClocks[connection, default: IdleClock(timeout: idleTimeout)].parked(now: now))
    }

    /// An idle connection's idle timer fired at `now`: the connection closes if it has been idle for the whole
    /// timeout; the timer is armed again if the connection was parked again meanwhile; else nothing.
    mutating func idleTimerFired(key: Key, connection: ConnectionID, now: NIODeadline) -> Action {
        guard let outcome = idleClocks[connection]?.fired(now: now) else { return .none }
        switch outcome {
        case .stop:
            return .none
        case .rearm(let deadline):
            return .armIdleTimer(connection, deadline)
        case .close:
            break
        }
        if let streams = keys[key]?.multiplexed[connection] {
            guard streams.inUse == 0 else { return .none }
            keys[key]!.multiplexed[connection] = nil
            forget(connection)
            return .close(connection)
        }
        guard var state = keys[key], let index = state.idle.firstIndex(of: connection) else { return .none }
        state.idle.remove(at: index)
        keys[key] = state
        forget(connection)
        return .close(connection)
    }

    /// A connection closed (by the server or an error). An idle one leaves the pool; a leased one is
    /// accounted for when its requester releases it.
    mutating func connectionClosed(key: Key, connection: ConnectionID) -> Action {
        if keys[key]?.multiplexed[connection] != nil, var state = keys.removeValue(forKey: key) {
            // Its streams fail on their own; their releases find it gone.
            defer { keys[key] = state }
            state.multiplexed[connection] = nil
            return closeAndServeWaiter(connection, &state, alreadyClosed: true)
        }
        // Its timer, if any, finds no clock when it fires.
        idleClocks[connection] = nil
        guard var state = keys[key], let index = state.idle.firstIndex(of: connection) else { return .none }
        state.idle.remove(at: index)
        keys[key] = state
        forget(connection)
        return .none
    }

    /// The pins changed and `connection`'s verified chain no longer satisfies them: it is never handed out again.
    /// An idle connection closes (a waiting requester gets a new one); an HTTP/2 connection takes no new streams
    /// and closes after its last, as after a GOAWAY; a leased HTTP/1.1 connection closes when it is released, so
    /// the request running on it finishes there.
    mutating func distrust(key: Key, connection: ConnectionID) -> Action {
        guard var state = keys.removeValue(forKey: key) else { return .none }
        defer { keys[key] = state }
        if let streams = state.multiplexed[connection] {
            state.multiplexed[connection]!.draining = true
            guard streams.inUse == 0 else { return .none }
            state.multiplexed[connection] = nil
            return closeAndServeWaiter(connection, &state, alreadyClosed: false)
        }
        if let index = state.idle.firstIndex(of: connection) {
            state.idle.remove(at: index)
            return closeAndServeWaiter(connection, &state, alreadyClosed: false)
        }
        if state.leased.contains(connection) { state.distrusted.insert(connection) }
        return .none
    }

    /// `connection`, being opened for `waiter`, will not be used: the pins were replaced during its handshake, and
    /// the new ones refuse it or the old ones refused a server the new ones may accept. It leaves the pool (it is
    /// closed already) and a new connection takes its place for the same requester, which keeps its turn and
    /// needs no free slot. Nil after shutdown or for a connection not being opened (the requester then fails).
    mutating func reopen(key: Key, connection: ConnectionID, for waiter: WaiterID) -> NewConnection? {
        guard !isShutDown, keys[key]?.connecting.contains(connection) == true, var state = keys.removeValue(forKey: key)
        else { return nil }
        defer { keys[key] = state }
        state.leased.remove(connection)
        state.connecting.remove(connection)
        state.distrusted.remove(connection)
        forget(connection)
        return newConnection(for: waiter, &state)
    }

    /// A waiting requester's deadline timer fired at `now`: it fails (and leaves the queue) once its deadline
    /// passed; the timer is armed again if it fired early; nothing happens once the requester was served or gave up.
    mutating func waiterTimerFired(key: Key, waiter: WaiterID, now: NIODeadline) -> WaiterTimerAction {
        guard let deadline = waiterDeadlines[waiter] else { return .none }
        guard now >= deadline else { return .rearm(deadline) }
        _ = removeWaiter(key: key, waiter: waiter)
        return .fail
    }

    /// The pool handed `waiter` a connection: its deadline no longer runs. Returns whether its timer is pending
    /// (to be cancelled).
    mutating func waiterServed(_ waiter: WaiterID) -> Bool {
        waiterDeadlines.removeValue(forKey: waiter) != nil
    }

    /// A waiting requester gave up (cancelled or timed out): it leaves the queue and its deadline no longer runs.
    /// Returns whether it was still in the queue.
    mutating func removeWaiter(key: Key, waiter: WaiterID) -> Bool {
        waiterDeadlines[waiter] = nil
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
            for connection in keys[key]!.idle { forget(connection) }
            close += keys[key]!.idle
            fail += keys[key]!.waiters
            keys[key]!.idle = []
            keys[key]!.waiters = []
            for (connection, streams) in keys[key]!.multiplexed {
                if streams.inUse == 0 {
                    forget(connection)
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
    func counts(key: Key) -> (idle: Int, leased: Int, waiting: Int) {
        let state = keys[key] ?? KeyState()
        return (state.idle.count, state.leased.count, state.waiters.count)
    }

    /// A new connection for `waiter` under `state`'s key, leased and being opened, placed on a loop.
    private mutating func newConnection(for waiter: WaiterID, _ state: inout KeyState) -> NewConnection {
        nextConnection += 1
        let id = ConnectionID(raw: nextConnection)
        state.leased.insert(id)
        state.connecting.insert(id)
        return NewConnection(id: id, waiter: waiter, loop: placement.place(id))
    }

    /// The pool stops tracking `connection`: its loop's load drops, its idle clock goes.
    private mutating func forget(_ connection: ConnectionID) {
        placement.remove(connection)
        idleClocks[connection] = nil
    }

    /// How many tracked connections are on loop `index` (for tests).
    func connections(onLoop index: Int) -> Int { placement.connections(on: index) }
}

extension ConnectionPoolStateMachine {
    /// Whether `connection` is parked idle under `key` (an HTTP/2 connection: with no stream in use).
    func isIdle(key: Key, connection: ConnectionID) -> Bool {
        guard let state = keys[key] else { return false }
        if let streams = state.multiplexed[connection] { return streams.inUse == 0 }
        return state.idle.contains(connection)
    }

    /// Whether the pool no longer tracks `connection` (neither idle, leased nor multiplexed).
    func isUnknown(key: Key, connection: ConnectionID) -> Bool {
        guard let state = keys[key] else { return true }
        return !state.idle.contains(connection) && !state.leased.contains(connection)
            && state.multiplexed[connection] == nil
    }

    /// The streams in use and the capacity of a multiplexed connection (for tests).
    func streams(key: Key, connection: ConnectionID) -> (inUse: Int, capacity: Int, draining: Bool)? {
        keys[key]?.multiplexed[connection].map { ($0.inUse, $0.capacity, $0.draining) }
    }
}

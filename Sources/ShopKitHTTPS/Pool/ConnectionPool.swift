import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The keep-alive pool of one transport: carries out ``ConnectionPoolStateMachine``'s actions.
///
/// One pool per ``HTTPSTransport``, so per TLS configuration; keyed inside by host and port.
///
/// Why a lock and not an actor: a request leases and releases a connection once each, and both are short
/// bookkeeping. Behind a lock, leasing an idle connection never suspends, and a connection is handed back
/// synchronously on its event loop the moment its exchange ends, with no task or actor hop per request (those
/// hops were a large share of a keep-alive request's cost). Continuations, timers and connection closes are
/// only ever touched *outside* the lock, so no callback can re-enter it.
final class ConnectionPool: Sendable {
    typealias Machine = ConnectionPoolStateMachine<RequestTarget>
    typealias ConnectionID = Machine.ConnectionID
    typealias WaiterID = Machine.WaiterID

    /// A connection lent to one request (an HTTP/2 connection: one of its streams).
    struct Lease: Sendable {
        let id: ConnectionID
        let target: RequestTarget
        let connection: PooledConnection
        /// The connection served an earlier request (so it may have gone stale while idle).
        let reused: Bool
    }

    /// Where a lease's outcome goes: called exactly once, outside the pool's lock.
    typealias LeaseHandler = @Sendable (Result<Lease, any Error>) -> Void

    private struct Waiter {
        let target: RequestTarget
        let handler: LeaseHandler
    }

    private struct Locked {
        var machine: Machine
        var connections: [ConnectionID: PooledConnection] = [:]
        /// Each pooled connection's idle rule (see ``IdleClock``) and its pending timer, if any. The timer is not
        /// cancelled when the connection is leased, so a kept-alive request does no timer work.
        var idleClocks: [ConnectionID: IdleClock] = [:]
        var idleTimers: [ConnectionID: Scheduled<Void>] = [:]
        /// How long a connection may stay idle.
        let idleTimeout: TimeAmount
        /// Whether the logger takes debug messages: the pool's log effects (and their metadata) are built only
        /// then.
        let debugLogging: Bool
        var waiters: [WaiterID: Waiter] = [:]
        var waiterTimers: [WaiterID: Scheduled<Void>] = [:]
        var nextWaiter = 0
        /// Which of ``loops`` each connection (open or being opened) is on.
        var placement: LoopPlacement<ConnectionID>
    }

    /// Side effects decided under the lock and carried out after it is released.
    private enum Effect {
        case resume(LeaseHandler, Result<Lease, any Error>)
        case cancelTimer(Scheduled<Void>)
        case close(PooledConnection)
        /// Opens a connection for a waiter; with a deadline, the waiter's timer is scheduled on the new
        /// connection's event loop first (the waiter that caused the creation).
        case create(ConnectionID, WaiterID, RequestTarget, deadline: NIODeadline?)
        /// Arms connection `id`'s idle timer for this deadline.
        case armIdleTimer(ConnectionID, PooledConnection, RequestTarget, NIODeadline)
        case log(String, Logger.Metadata)
    }

    private let locked: NIOLockedValueBox<Locked>
    private let factory: ConnectionFactory
    /// The group's event loops, which connections are placed on (see ``LoopPlacement``: the first connection goes
    /// on the first loop).
    let loops: [any EventLoop]
    private let logger: Logger

    init(factory: ConnectionFactory, maxPerHost: Int, idleTimeout: TimeAmount, logger: Logger) {
        var loops = Array(factory.group.makeIterator())
        if loops.isEmpty { loops = [factory.group.next()] }
        self.loops = loops
        self.locked = NIOLockedValueBox(
            Locked(
                machine: Machine(maxPerKey: maxPerHost, offersHTTP2: factory.httpVersion != .http1Only),
                idleTimeout: idleTimeout, debugLogging: logger.logLevel <= .debug,
                placement: LoopPlacement(loops: loops.count)))
        self.factory = factory
        self.logger = logger
    }

    private func withLock<T>(_ body: (inout Locked) -> T) -> T {
        locked.withLockedValue(body)
    }

    /// A connection to `target`, reused when one is idle (without suspending), else new (or the next freed one
    /// at the limit).
    ///
    /// - Throws: `HTTPSTransportError.timeout(.request)` when `deadline` passes first; connection errors; `CancellationError`.
    func lease(_ target: RequestTarget, deadline: NIODeadline) async throws -> Lease {
        // Fast path: an idle connection is handed over at once, without a continuation.
        if let idle = leaseIdle(target) { return idle }
        let waiter = NIOLockedValueBox<(id: WaiterID?, cancelled: Bool)>((nil, false))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let id = wait(for: target, deadline: deadline) { continuation.resume(with: $0) }
                let cancelled = waiter.withLockedValue {
                    $0.id = id
                    return $0.cancelled
                }
                // Cancelled before the waiter was known: the handler below found nothing to abandon.
                if cancelled { abandon(id, error: CancellationError()) }
            }
        } onCancel: {
            let id = waiter.withLockedValue {
                $0.cancelled = true
                return $0.id
            }
            if let id { abandon(id, error: CancellationError()) }
        }
    }

    /// Leases a connection to `target` and gives it to `handler`, exactly once:
    /// - an idle connection at once, on this thread, before this returns (then the result is `nil`);
    /// - a new connection on its event loop, as soon as it is verified and set up, so the first exchange can start
    ///   there without a trip through the caller's thread; a freed connection on the thread that freed it (its
    ///   event loop);
    /// - an error where the waiter was given up: its `deadline` (`HTTPSTransportError.timeout(.request)`), a
    ///   failed connection, shutdown, or ``abandon(_:error:)``.
    ///
    /// - Returns: the waiter, for ``abandon(_:error:)``, or `nil` when `handler` already ran.
    func lease(_ target: RequestTarget, deadline: NIODeadline, handler: @escaping LeaseHandler) -> WaiterID? {
        if let idle = leaseIdle(target) {
            handler(.success(idle))
            return nil
        }
        return wait(for: target, deadline: deadline, handler: handler)
    }

    /// ``lease(_:deadline:handler:)`` once no idle connection was found: registers a waiter, which the machine
    /// serves with a connection parked meanwhile, a new one, or the next one freed.
    private func wait(for target: RequestTarget, deadline: NIODeadline, handler: @escaping LeaseHandler) -> WaiterID {
        var createsOwnConnection = false
        let (waiter, effects) = withLock { state -> (WaiterID, [Effect]) in
            state.nextWaiter += 1
            let waiter = WaiterID(raw: state.nextWaiter)
            state.waiters[waiter] = Waiter(target: target, handler: handler)
            let action = state.machine.lease(target, for: waiter)
            var effects = Self.plan(action, target, &state).map { effect -> Effect in
                // The connection opened for this waiter schedules its deadline on its own event loop.
                guard case .create(let id, waiter, let target, nil) = effect else { return effect }
                createsOwnConnection = true
                return .create(id, waiter, target, deadline: deadline)
            }
            if case .none = action, state.debugLogging {
                effects.insert(.log("waiting for a free connection", ["host": "\(target.host)"]), at: 0)
            }
            return (waiter, effects)
        }
        if !createsOwnConnection {
            // Waiting for a connection to be freed (or served already): the deadline is scheduled here.
            scheduleTimer(for: waiter, on: factory.group.any(), deadline: deadline)
        }
        perform(effects)
        return waiter
    }

    /// An idle connection to `target`, leased, or nil when none is idle.
    private func leaseIdle(_ target: RequestTarget) -> Lease? {
        let (idle, idleEffects) = withLock { state -> (Lease?, [Effect]) in
            guard let id = state.machine.leaseIdle(target) else { return (nil, []) }
            state.idleClocks[id]?.leased()
            guard let connection = state.connections[id] else {
                // Not registered (cannot happen): give it back as unusable and take the slow path.
                return (nil, Self.plan(state.machine.release(target, id, reusable: false), target, &state))
            }
            var effects: [Effect] = []
            if state.debugLogging {
                effects.append(.log("reusing connection", ["host": "\(target.host)", "connection": "\(id)"]))
            }
            return (Lease(id: id, target: target, connection: connection, reused: true), effects)
        }
        perform(idleEffects)
        return idle
    }

    /// Ends `waiter`'s deadline with a timeout; the timer is dropped if the waiter was served meanwhile.
    private func scheduleTimer(for waiter: WaiterID, on loop: any EventLoop, deadline: NIODeadline) {
        let timer = loop.scheduleTask(deadline: deadline) { [self] in
            abandon(waiter, error: HTTPSTransportError.timeout(.request))
        }
        let stale: Scheduled<Void>? = withLock { state in
            guard state.waiters[waiter] != nil else { return timer }
            state.waiterTimers[waiter] = timer
            return nil
        }
        stale?.cancel()
    }

    /// Returns a leased connection: reused when `reusable`, else closed. Safe to call from any thread,
    /// including the connection's event loop; runs no user code under the lock. For an HTTP/2 lease the stream
    /// is given back; the connection stays while it takes new streams (whatever the exchange's outcome).
    func release(_ lease: Lease, reusable exchangeReusable: Bool) {
        let reusable: Bool
        switch lease.connection {
        case .http1(let connection): reusable = exchangeReusable && connection.channel.isActive
        case .http2(let connection): reusable = connection.isAcceptingStreams
        }
        perform(withLock { Self.plan($0.machine.release(lease.target, lease.id, reusable: reusable), lease.target, &$0) })
    }

    /// Closes idle connections and refuses waiters; leased connections close when released.
    func shutDown() {
        perform(withLock { Self.plan($0.machine.shutDown(), nil, &$0) })
    }

    /// Gives up on `waiter` if it is still waiting: its handler gets `error`. Does nothing once it was served.
    func abandon(_ waiter: WaiterID, error: any Error) {
        let effects = withLock { state -> [Effect] in
            guard let entry = state.waiters.removeValue(forKey: waiter) else { return [] }
            var effects: [Effect] = []
            if let timer = state.waiterTimers.removeValue(forKey: waiter) { effects.append(.cancelTimer(timer)) }
            _ = state.machine.removeWaiter(entry.target, waiter)
            effects.append(.resume(entry.handler, .failure(error)))
            return effects
        }
        perform(effects)
    }

    /// Turns a machine action into effects, updating the bookkeeping. Runs under the lock.
    private static func plan(_ action: Machine.Action, _ target: RequestTarget?, _ state: inout Locked) -> [Effect] {
        switch action {
        case .none:
            return []
        case .use(let id, let waiter), .handOver(let id, let waiter):
            state.idleClocks[id]?.leased()
            guard let connection = state.connections[id], let target else { return [] }
            var effects: [Effect] = []
            if state.debugLogging {
                effects.append(.log("reusing connection", ["host": "\(target.host)", "connection": "\(id)"]))
            }
            return effects + resume(waiter, with: Lease(id: id, target: target, connection: connection, reused: true), &state)
        case .create(let id, let waiter):
            guard let target else { return [] }
            return [.create(id, waiter, target, deadline: nil)]
        case .park(let id):
            guard let connection = state.connections[id], let target else { return [] }
            let timeout = state.idleTimeout
            guard let deadline = state.idleClocks[id, default: IdleClock(timeout: timeout)].parked(now: .now()) else {
                return []  // its timer is pending: it will see this park when it fires
            }
            return [.armIdleTimer(id, connection, target, deadline)]
        case .close(let id):
            return close(id, &state)
        case .closeAndCreate(let id, let replacement, let waiter):
            let effects = close(id, &state)
            guard let target else { return effects }
            return effects + [.create(replacement, waiter, target, deadline: nil)]
        case .failShutDown(let waiter):
            return fail(waiter, HTTPSTransportError.connectionClosed, &state)
        case .shutDown(let closing, let failing):
            return closing.flatMap { close($0, &state) } + failing.flatMap { fail($0, HTTPSTransportError.connectionClosed, &state) }
        case .createEach(let ids, let waiters):
            guard let target else { return [] }
            return zip(ids, waiters).map { .create($0, $1, target, deadline: nil) }
        case .handOverStreams(let id, let waiters):
            guard let connection = state.connections[id], let target else { return [] }
            if !waiters.isEmpty { state.idleClocks[id]?.leased() }
            return waiters.flatMap {
                resume($0, with: Lease(id: id, target: target, connection: connection, reused: true), &state)
            }
        }
    }

    private static func resume(_ waiter: WaiterID, with lease: Lease, _ state: inout Locked) -> [Effect] {
        var effects: [Effect] = []
        if let timer = state.waiterTimers.removeValue(forKey: waiter) { effects.append(.cancelTimer(timer)) }
        guard let entry = state.waiters.removeValue(forKey: waiter) else {
            // The requester gave up meanwhile: the connection goes back to the pool.
            return effects + plan(state.machine.release(lease.target, lease.id, reusable: true), lease.target, &state)
        }
        return effects + [.resume(entry.handler, .success(lease))]
    }

    private static func fail(_ waiter: WaiterID, _ error: any Error, _ state: inout Locked) -> [Effect] {
        guard let entry = state.waiters.removeValue(forKey: waiter) else { return [] }
        var effects: [Effect] = []
        if let timer = state.waiterTimers.removeValue(forKey: waiter) { effects.append(.cancelTimer(timer)) }
        _ = state.machine.removeWaiter(entry.target, waiter)
        return effects + [.resume(entry.handler, .failure(error))]
    }

    private static func close(_ id: ConnectionID, _ state: inout Locked) -> [Effect] {
        var effects: [Effect] = []
        state.idleClocks.removeValue(forKey: id)
        if let timer = state.idleTimers.removeValue(forKey: id) { effects.append(.cancelTimer(timer)) }
        if let connection = state.connections.removeValue(forKey: id) { effects.append(.close(connection)) }
        state.placement.remove(id)
        return effects
    }

    /// Carries out effects outside the lock.
    private func perform(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .resume(let handler, let result):
                handler(result)
            case .cancelTimer(let timer):
                timer.cancel()
            case .close(let connection):
                connection.close()
            case .create(let id, let waiter, let target, let deadline):
                create(id, for: waiter, target: target, deadline: deadline)
            case .armIdleTimer(let id, let connection, let target, let deadline):
                let timer = connection.channel.eventLoop.scheduleTask(deadline: deadline) { [self] in
                    idleTimerFired(id, target)
                }
                // The connection may have been closed before the timer was registered.
                let stale: Scheduled<Void>? = withLock { state in
                    guard state.idleClocks[id]?.armed == true else { return timer }
                    state.idleTimers.updateValue(timer, forKey: id)?.cancel()
                    return nil
                }
                stale?.cancel()
            case .log(let message, let metadata):
                logger.debug("\(message)", metadata: metadata)
            }
        }
    }

    /// Opens connection `id` for `waiter`. Everything runs on the new connection's event loop, entered once: the
    /// waiter's deadline (when given), the TCP connect, the handshake, and the hand-over to the waiter.
    private func create(_ id: ConnectionID, for waiter: WaiterID, target: RequestTarget, deadline: NIODeadline?) {
        logger.debug("opening connection", metadata: ["host": "\(target.host)", "port": "\(target.port)", "connection": "\(id)"])
        let events = HTTP2Connection.Events(
            capacityChanged: { [self] capacity in
                perform(withLock { Self.plan($0.machine.streamCapacityChanged(target, id, to: capacity), target, &$0) })
            },
            goAway: { [self] in
                logger.debug("the server sent GOAWAY: no new streams", metadata: ["host": "\(target.host)", "connection": "\(id)"])
                perform(withLock { Self.plan($0.machine.goAway(target, id), target, &$0) })
            })
        let loop = loops[withLock { $0.placement.place(id) }]
        let open: @Sendable () -> Void = { [self] in
            if let deadline { scheduleTimer(for: waiter, on: loop, deadline: deadline) }
            factory.connect(to: target, on: loop, events: { events }).whenComplete { [self] result in
                switch result {
                case .success(let connection): created(id, connection, for: waiter, target: target)
                case .failure(let error): creationFailed(id, error: error, for: waiter, target: target)
                }
            }
        }
        if loop.inEventLoop { open() } else { loop.execute(open) }
    }

    private func created(_ id: ConnectionID, _ connection: PooledConnection, for waiter: WaiterID, target: RequestTarget) {
        let effects = withLock { state -> [Effect] in
            state.connections[id] = connection
            let capacity: Int?
            if case .http2(let http2) = connection { capacity = http2.streamCapacity } else { capacity = nil }
            let established = Self.plan(state.machine.established(target, id, streamCapacity: capacity), target, &state)
                + Self.plan(state.machine.openForWaiters(target), target, &state)
            return Self.resume(waiter, with: Lease(id: id, target: target, connection: connection, reused: false), &state)
                + established
        }
        connection.channel.closeFuture.whenComplete { [self] _ in connectionClosed(id, target) }
        perform(effects)
    }

    private func creationFailed(_ id: ConnectionID, error: any Error, for waiter: WaiterID, target: RequestTarget) {
        logger.debug("connection failed", metadata: ["host": "\(target.host)", "error": "\(error)"])
        let effects = withLock { state -> [Effect] in
            var effects: [Effect] = []
            if let entry = state.waiters.removeValue(forKey: waiter) {
                if let timer = state.waiterTimers.removeValue(forKey: waiter) { effects.append(.cancelTimer(timer)) }
                effects.append(.resume(entry.handler, .failure(error)))
            }
            state.placement.remove(id)
            return effects + Self.plan(state.machine.creationFailed(target, id), target, &state)
        }
        perform(effects)
    }

    /// Connection `id`'s idle timer fired: closes it if it has been idle for the whole timeout, arms the timer
    /// again if it was parked again meanwhile (see ``IdleClock``).
    private func idleTimerFired(_ id: ConnectionID, _ target: RequestTarget) {
        let effects = withLock { state -> [Effect] in
            state.idleTimers.removeValue(forKey: id)
            guard let outcome = state.idleClocks[id]?.fired(now: .now()) else { return [] }
            switch outcome {
            case .stop:
                return []
            case .rearm(let deadline):
                guard let connection = state.connections[id] else { return [] }
                return [.armIdleTimer(id, connection, target, deadline)]
            case .close:
                guard case .close = state.machine.idleTimeoutFired(target, id) else { return [] }
                return [.log("closing idle connection", ["host": "\(target.host)", "connection": "\(id)"])]
                    + Self.close(id, &state)
            }
        }
        perform(effects)
    }

    private func connectionClosed(_ id: ConnectionID, _ target: RequestTarget) {
        let effects = withLock { state -> [Effect] in
            var effects: [Effect] = []
            state.idleClocks.removeValue(forKey: id)
            if let timer = state.idleTimers.removeValue(forKey: id) { effects.append(.cancelTimer(timer)) }
            effects += Self.plan(state.machine.connectionClosed(target, id), target, &state)
            // A leased connection stays registered until its requester releases it.
            if state.machine.isUnknown(target, id) {
                state.connections.removeValue(forKey: id)
                state.placement.remove(id)
            }
            return effects
        }
        perform(effects)
    }
}

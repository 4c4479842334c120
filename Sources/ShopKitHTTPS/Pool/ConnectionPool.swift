import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ShopKitTLS

/// How the pool opens a connection: ``ConnectionFactory`` (TCP, TLS, HTTP/2 or HTTP/1.1), or a fake in tests.
protocol ConnectionOpener: Sendable {
    /// Opens a verified connection to `target` on `loop`; `events` is what an HTTP/2 connection reports.
    /// `stillTrusted` says whether the connection's verified chain satisfies the pins in force now.
    func connect(
        to target: RequestTarget, on loop: any EventLoop, events: @escaping @Sendable () -> HTTP2Connection.Events
    ) -> EventLoopFuture<(PooledConnection, stillTrusted: @Sendable () -> Bool)>
}

extension ConnectionFactory: ConnectionOpener {}

/// The keep-alive pool of one transport: carries out ``ConnectionPoolStateMachine``'s actions and decides nothing
/// itself. The machine decides which connection a requester gets, when one is opened and on which loop, where a
/// waiting requester's deadline runs, and when idle timers are armed and close; this object holds what the
/// machine cannot (the connections, the requesters' callbacks, the scheduled timers) and does the I/O.
///
/// One pool per ``HTTPSTransport``, so per TLS configuration; keyed inside by host and port.
///
/// Why a lock and not an actor: a request leases and releases a connection once each, and both are short
/// bookkeeping. Behind a lock, leasing an idle connection never suspends, and a connection is handed back
/// synchronously on its event loop the moment its request ends, with no task or actor hop per request (those
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
        /// Pending idle timers (the machine decides when they are armed and what their firing means).
        var idleTimers: [ConnectionID: Scheduled<Void>] = [:]
        /// Whether the logger takes debug messages: the pool's log effects (and their metadata) are built only
        /// then.
        let debugLogging: Bool
        var waiters: [WaiterID: Waiter] = [:]
        var waiterTimers: [WaiterID: Scheduled<Void>] = [:]
        var nextWaiter = 0
        /// Each open connection's target and trust re-check (``pinningChanged()`` asks it).
        var trustChecks: [ConnectionID: (target: RequestTarget, stillTrusted: @Sendable () -> Bool)] = [:]
        /// How many times the pins were replaced (``pinningChanged(expiries:)``): a new connection notes it as it
        /// starts, to tell whether the pins changed during its handshake.
        var pinGeneration = 0
        /// When the pins in force change by themselves, soonest first: the expiries of the signed documents in the
        /// policy (`PinningPolicy.expiryInstants`). The first lease or release after one re-checks every open
        /// connection as a replacement of the pins does, so no connection verified under an expired document's
        /// pins carries another request, however late the timer that replaces the document runs.
        var pinsExpire: [Date] = []
    }

    /// Side effects decided under the lock and carried out after it is released.
    private enum Effect {
        case resume(LeaseHandler, Result<Lease, any Error>)
        case cancelTimer(Scheduled<Void>)
        case close(PooledConnection)
        /// Opens a connection; with a timer, the waiter's deadline is scheduled on the new connection's loop first.
        case create(Machine.NewConnection, RequestTarget, waiterTimer: Machine.WaiterTimer?)
        /// Arms connection `id`'s idle timer for this deadline.
        case armIdleTimer(ConnectionID, PooledConnection, RequestTarget, NIODeadline)
        case log(String, Logger.Metadata)
    }

    private let locked: NIOLockedValueBox<Locked>
    private let opener: any ConnectionOpener
    /// The event loops connections are placed on (the machine picks the index, see ``LoopPlacement``: the first
    /// connection goes on the first loop).
    let loops: [any EventLoop]
    private let logger: Logger
    /// The wall clock the pins' expiries are read on (the TLS context's, which pin checks use).
    private let now: @Sendable () -> Date

    /// A pool opening connections through `opener` on `loops`.
    init(
        opener: any ConnectionOpener, loops: [any EventLoop], offersHTTP2: Bool, maxPerHost: Int,
        idleTimeout: TimeAmount, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        precondition(!loops.isEmpty, "a pool needs an event loop")
        self.loops = loops
        self.locked = NIOLockedValueBox(
            Locked(
                machine: Machine(
                    maxPerKey: maxPerHost, offersHTTP2: offersHTTP2, loops: loops.count, idleTimeout: idleTimeout),
                debugLogging: logger.logLevel <= .debug))
        self.opener = opener
        self.logger = logger
        self.now = now
    }

    /// A pool opening connections through `factory` on its group's loops.
    convenience init(
        factory: ConnectionFactory, maxPerHost: Int, idleTimeout: TimeAmount, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        var loops = Array(factory.group.makeIterator())
        if loops.isEmpty { loops = [factory.group.next()] }
        self.init(
            opener: factory, loops: loops, offersHTTP2: factory.httpVersion != .http1Only, maxPerHost: maxPerHost,
            idleTimeout: idleTimeout, logger: logger, now: now)
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
    /// - a new connection on its event loop, as soon as it is verified and set up, so the first request can start
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
        let (waiter, effects, waitsAnywhere) = withLock { state -> (WaiterID, [Effect], Machine.WaiterTimer?) in
            state.nextWaiter += 1
            let waiter = WaiterID(raw: state.nextWaiter)
            state.waiters[waiter] = Waiter(target: target, handler: handler)
            let (action, timer) = state.machine.lease(key: target, for: waiter, deadline: deadline)
            switch action {
            case .use(let id):
                return (waiter, Self.serve(waiter, with: id, target: target, &state), nil)
            case .create(let new):
                return (waiter, [.create(new, target, waiterTimer: timer)], nil)
            case .wait:
                let log: [Effect] =
                    state.debugLogging ? [.log("waiting for a free connection", ["host": "\(target.host)"])] : []
                return (waiter, log, timer)
            case .failShutDown:
                return (waiter, Self.fail(waiter, HTTPSTransportError.shutDown, &state), nil)
            }
        }
        // Waiting for a connection to be freed or opened: the deadline runs on this thread's loop, if any.
        if let timer = waitsAnywhere { scheduleTimer(timer, target: target, on: loops.first { $0.inEventLoop } ?? loops[0]) }
        perform(effects)
        return waiter
    }

    /// An idle connection to `target`, leased, or nil when none is idle.
    private func leaseIdle(_ target: RequestTarget) -> Lease? {
        let (idle, idleEffects) = withLock { state -> (Lease?, [Effect]) in
            let expired = pinsExpired(&state)
            guard let id = state.machine.leaseIdle(key: target) else { return (nil, expired) }
            guard let connection = state.connections[id] else {
                // Not registered (cannot happen): give it back as unusable and take the slow path.
                return (nil, Self.plan(
                    state.machine.release(key: target, connection: id, reusable: false, now: .distantPast), target, &state))
            }
            var effects = expired
            if state.debugLogging {
                effects.append(.log("reusing connection", ["host": "\(target.host)", "connection": "\(id)"]))
            }
            return (Lease(id: id, target: target, connection: connection, reused: true), effects)
        }
        perform(idleEffects)
        return idle
    }

    /// Arms a waiter's deadline timer on `loop`; when it fires, the machine decides
    /// (``ConnectionPoolStateMachine/waiterTimerFired(key:waiter:now:)``). Dropped if the waiter was served meanwhile.
    private func scheduleTimer(_ timer: Machine.WaiterTimer, target: RequestTarget, on loop: any EventLoop) {
        let waiter = timer.waiter
        let scheduled = loop.scheduleTask(deadline: timer.deadline) { [self] in
            waiterTimerFired(waiter, target, on: loop)
        }
        let stale: Scheduled<Void>? = withLock { state in
            guard state.waiters[waiter] != nil else { return scheduled }
            state.waiterTimers[waiter] = scheduled
            return nil
        }
        stale?.cancel()
    }

    /// A waiter's deadline timer fired on `loop`: the machine says whether the waiter fails with a timeout, or the
    /// timer is armed again.
    private func waiterTimerFired(_ waiter: WaiterID, _ target: RequestTarget, on loop: any EventLoop) {
        let (effects, rearm) = withLock { state -> ([Effect], NIODeadline?) in
            state.waiterTimers.removeValue(forKey: waiter)
            switch state.machine.waiterTimerFired(key: target, waiter: waiter, now: loop.now) {
            case .none: return ([], nil)
            case .rearm(let deadline): return ([], deadline)
            case .fail: return (Self.fail(waiter, HTTPSTransportError.timeout(.request), &state), nil)
            }
        }
        if let rearm { scheduleTimer(.init(waiter: waiter, deadline: rearm, loop: nil), target: target, on: loop) }
        perform(effects)
    }

    /// Returns a leased connection: reused when `reusable`, else closed. Safe to call from any thread,
    /// including the connection's event loop; runs no user code under the lock. For an HTTP/2 lease the stream
    /// is given back; the connection stays while it takes new streams (whatever the request's outcome).
    func release(_ lease: Lease, reusable requestReusable: Bool) {
        let reusable: Bool
        switch lease.connection {
        case .http1(let connection): reusable = requestReusable && connection.channel.isActive
        case .http2(let connection): reusable = connection.isAcceptingStreams
        }
        // The connection's loop's clock (the one its idle timer runs on), so tests can drive it.
        let now = lease.connection.channel.eventLoop.now
        perform(withLock { state in
            // No array is joined on the common path (no document expired): a release is per request.
            let expired = pinsExpired(&state)
            let planned = Self.plan(
                state.machine.release(key: lease.target, connection: lease.id, reusable: reusable, now: now), lease.target,
                &state)
            return expired.isEmpty ? planned : expired + planned
        })
    }

    /// The pins were replaced (``HTTPSTransport/replacePinning(_:)``): every open connection whose verified chain
    /// the new pins refuse stops being handed out, before this returns; the machine decides what happens to each
    /// (``ConnectionPoolStateMachine/distrust(key:connection:)``). Requests already running finish on their
    /// connection.
    ///
    /// `expiries`: when the new policy changes by itself (``Locked/pinsExpire``).
    func pinningChanged(expiries: [Date] = []) {
        perform(withLock { state in
            state.pinsExpire = expiries.sorted()
            return Self.recheckTrust(&state)
        })
    }

    /// Every open connection whose verified chain the pins in force refuse stops being handed out.
    private static func recheckTrust(_ state: inout Locked) -> [Effect] {
        state.pinGeneration += 1
        var effects: [Effect] = []
        for (id, entry) in state.trustChecks where !entry.stillTrusted() {
            state.trustChecks[id] = nil
            effects.append(
                .log("closing a connection the pins in force refuse", ["host": "\(entry.target.host)", "connection": "\(id)"]))
            effects += plan(state.machine.distrust(key: entry.target, connection: id), entry.target, &state)
        }
        return effects
    }

    /// Under the lock, at each lease and release: once the pins in force changed by themselves (a document
    /// expired, ``Locked/pinsExpire``), every open connection is checked again, as at a replacement. Nothing to do
    /// (an empty list) without a signed document in force.
    private func pinsExpired(_ state: inout Locked) -> [Effect] {
        guard let first = state.pinsExpire.first else { return [] }
        let now = now()
        guard now >= first else { return [] }
        state.pinsExpire.removeAll { $0 <= now }
        return Self.recheckTrust(&state)
    }

    /// Closes idle connections and refuses waiters; leased connections close when released.
    func shutDown() {
        perform(withLock { Self.plan($0.machine.shutDown(), nil, &$0) })
    }

    /// Gives up on `waiter` if it is still waiting: its handler gets `error`. Does nothing once it was served.
    func abandon(_ waiter: WaiterID, error: any Error) {
        perform(withLock { Self.fail(waiter, error, &$0) })
    }

    /// Turns a machine action into effects, updating the bookkeeping. Runs under the lock.
    private static func plan(_ action: Machine.Action, _ target: RequestTarget?, _ state: inout Locked) -> [Effect] {
        switch action {
        case .none:
            return []
        case .handOver(let id, let waiter):
            guard let target else { return [] }
            return serve(waiter, with: id, target: target, &state)
        case .create(let new):
            guard let target else { return [] }
            return [.create(new, target, waiterTimer: nil)]
        case .park(let id, let deadline):
            guard let deadline, let connection = state.connections[id], let target else { return [] }
            return [.armIdleTimer(id, connection, target, deadline)]
        case .armIdleTimer(let id, let deadline):
            guard let connection = state.connections[id], let target else { return [] }
            return [.armIdleTimer(id, connection, target, deadline)]
        case .close(let id):
            return close(id, &state)
        case .closeAndCreate(let id, let new):
            let effects = close(id, &state)
            guard let target else { return effects }
            return effects + [.create(new, target, waiterTimer: nil)]
        case .shutDown(let closing, let failing):
            return closing.flatMap { close($0, &state) } + failing.flatMap { fail($0, HTTPSTransportError.shutDown, &state) }
        case .createEach(let connections):
            guard let target else { return [] }
            return connections.map { .create($0, target, waiterTimer: nil) }
        case .handOverStreams(let id, let waiters):
            guard let target else { return [] }
            return waiters.flatMap { serve($0, with: id, target: target, &state) }
        }
    }

    /// Hands open connection `id` (reused) to `waiter`.
    private static func serve(_ waiter: WaiterID, with id: ConnectionID, target: RequestTarget, _ state: inout Locked) -> [Effect] {
        guard let connection = state.connections[id] else { return [] }
        var effects: [Effect] = []
        if state.debugLogging {
            effects.append(.log("reusing connection", ["host": "\(target.host)", "connection": "\(id)"]))
        }
        return effects + resume(waiter, with: Lease(id: id, target: target, connection: connection, reused: true), &state)
    }

    private static func resume(_ waiter: WaiterID, with lease: Lease, _ state: inout Locked) -> [Effect] {
        var effects: [Effect] = []
        if state.machine.waiterServed(waiter), let timer = state.waiterTimers.removeValue(forKey: waiter) {
            effects.append(.cancelTimer(timer))
        }
        guard let entry = state.waiters.removeValue(forKey: waiter) else {
            // The requester gave up meanwhile: the connection goes back to the pool.
            return effects
                + plan(
                    state.machine.release(key: lease.target, connection: lease.id, reusable: true, now: lease.connection.channel.eventLoop.now),
                    lease.target, &state)
        }
        return effects + [.resume(entry.handler, .success(lease))]
    }

    private static func fail(_ waiter: WaiterID, _ error: any Error, _ state: inout Locked) -> [Effect] {
        guard let entry = state.waiters.removeValue(forKey: waiter) else { return [] }
        var effects: [Effect] = []
        if let timer = state.waiterTimers.removeValue(forKey: waiter) { effects.append(.cancelTimer(timer)) }
        _ = state.machine.removeWaiter(key: entry.target, waiter: waiter)
        return effects + [.resume(entry.handler, .failure(error))]
    }

    private static func close(_ id: ConnectionID, _ state: inout Locked) -> [Effect] {
        var effects: [Effect] = []
        state.trustChecks.removeValue(forKey: id)
        if let timer = state.idleTimers.removeValue(forKey: id) { effects.append(.cancelTimer(timer)) }
        if let connection = state.connections.removeValue(forKey: id) { effects.append(.close(connection)) }
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
            case .create(let new, let target, let timer):
                create(new, target: target, waiterTimer: timer)
            case .armIdleTimer(let id, let connection, let target, let deadline):
                let loop = connection.channel.eventLoop
                let timer = loop.scheduleTask(deadline: deadline) { [self] in
                    idleTimerFired(id, target, now: loop.now)
                }
                withLock { $0.idleTimers.updateValue(timer, forKey: id) }?.cancel()
            case .log(let message, let metadata):
                logger.debug("\(message)", metadata: metadata)
            }
        }
    }

    /// Opens connection `new.id` for its waiter on the loop the machine chose. Everything runs on that loop,
    /// entered once: the waiter's deadline (when given), the connect, the handshake, and the hand-over.
    private func create(_ new: Machine.NewConnection, target: RequestTarget, waiterTimer: Machine.WaiterTimer?) {
        let id = new.id
        logger.debug("opening connection", metadata: ["host": "\(target.host)", "port": "\(target.port)", "connection": "\(id)"])
        let events = HTTP2Connection.Events(
            capacityChanged: { [self] capacity in
                perform(withLock { Self.plan($0.machine.streamCapacityChanged(key: target, connection: id, to: capacity), target, &$0) })
            },
            goAway: { [self] in
                logger.debug("the server sent GOAWAY: no new streams", metadata: ["host": "\(target.host)", "connection": "\(id)"])
                perform(withLock { Self.plan($0.machine.goAway(key: target, connection: id), target, &$0) })
            })
        let loop = loops[new.loop]
        let open: @Sendable () -> Void = { [self] in
            if let waiterTimer { scheduleTimer(waiterTimer, target: target, on: loop) }
            // Read before the handshake reads the pins in force (``replacePinning`` replaces them, then tells the
            // pool): a handshake checked under older pins always sees a newer generation when it ends.
            let startedUnder = withLock { $0.pinGeneration }
            opener.connect(to: target, on: loop, events: { events }).whenComplete { [self] result in
                switch result {
                case .success((let connection, let stillTrusted)):
                    created(id, connection, stillTrusted: stillTrusted, for: new.waiter, target: target)
                case .failure(let error as TLSError) where error.isPinRefusal:
                    refusedByPins(id, error: error, for: new.waiter, target: target, startedUnder: startedUnder)
                case .failure(let error):
                    creationFailed(id, error: error, for: new.waiter, target: target)
                }
            }
        }
        if loop.inEventLoop { open() } else { loop.execute(open) }
    }

    private func created(
        _ id: ConnectionID, _ connection: PooledConnection, stillTrusted: @escaping @Sendable () -> Bool,
        for waiter: WaiterID, target: RequestTarget
    ) {
        let effects = withLock { state -> [Effect]? in
            // Asked under the lock, with the registration: ``pinningChanged()`` either sees this connection
            // registered (and re-checks it) or ran before the ask (which then sees its new pins).
            guard stillTrusted() else { return nil }
            state.trustChecks[id] = (target, stillTrusted)
            state.connections[id] = connection
            let capacity: Int?
            if case .http2(let http2) = connection { capacity = http2.streamCapacity } else { capacity = nil }
            let established = Self.plan(
                state.machine.established(key: target, connection: id, streamCapacity: capacity), target, &state)
                + Self.plan(state.machine.openForWaiters(key: target), target, &state)
            return Self.resume(waiter, with: Lease(id: id, target: target, connection: connection, reused: false), &state)
                + established
        }
        guard let effects else {
            // Verified under pins replaced during its handshake, which the new pins refuse: never used.
            connection.close()
            let error = TLSError.handshakeFailed(reason: "the pins were replaced during the handshake; try again")
            return refusedByPins(id, error: error, for: waiter, target: target, startedUnder: nil)
        }
        connection.channel.closeFuture.whenComplete { [self] _ in connectionClosed(id, target) }
        perform(effects)
    }

    /// Connection `id`, opened for `waiter`, is refused by pins: by those its handshake was checked under, or (it
    /// was verified) by those that replaced them meanwhile. When the pins were replaced since its handshake started
    /// (the pool's pin generation is no longer `startedUnder`; nil: known to be replaced), the waiter gets a new
    /// connection in its place, checked against the pins in force now, so the request ends as it would have under
    /// those pins alone and no connection checked under pins no longer in force carries it. Otherwise, after
    /// shutdown, or when the waiter gave up, this is a failed creation.
    private func refusedByPins(
        _ id: ConnectionID, error: any Error, for waiter: WaiterID, target: RequestTarget, startedUnder: Int?
    ) {
        let effects = withLock { state -> [Effect]? in
            guard startedUnder != state.pinGeneration, state.waiters[waiter] != nil,
                let new = state.machine.reopen(key: target, connection: id, for: waiter)
            else { return nil }
            var effects: [Effect] = []
            if state.debugLogging {
                effects.append(
                    .log(
                        "opening a new connection: the pins were replaced during the handshake",
                        ["host": "\(target.host)", "connection": "\(id)"]))
            }
            return effects + [.create(new, target, waiterTimer: nil)]
        }
        guard let effects else { return creationFailed(id, error: error, for: waiter, target: target) }
        perform(effects)
    }

    private func creationFailed(_ id: ConnectionID, error: any Error, for waiter: WaiterID, target: RequestTarget) {
        logger.debug("connection failed", metadata: ["host": "\(target.host)", "error": "\(error)"])
        let effects = withLock { state -> [Effect] in
            Self.fail(waiter, error, &state)
                + Self.plan(state.machine.creationFailed(key: target, connection: id), target, &state)
        }
        perform(effects)
    }

    /// Connection `id`'s idle timer fired: the machine says whether it closes, or is armed again.
    private func idleTimerFired(_ id: ConnectionID, _ target: RequestTarget, now: NIODeadline) {
        let effects = withLock { state -> [Effect] in
            state.idleTimers.removeValue(forKey: id)
            let action = state.machine.idleTimerFired(key: target, connection: id, now: now)
            var effects: [Effect] = []
            if case .close = action, state.debugLogging {
                effects.append(.log("closing idle connection", ["host": "\(target.host)", "connection": "\(id)"]))
            }
            return effects + Self.plan(action, target, &state)
        }
        perform(effects)
    }

    private func connectionClosed(_ id: ConnectionID, _ target: RequestTarget) {
        let effects = withLock { state -> [Effect] in
            var effects: [Effect] = []
            state.trustChecks.removeValue(forKey: id)
            if let timer = state.idleTimers.removeValue(forKey: id) { effects.append(.cancelTimer(timer)) }
            effects += Self.plan(state.machine.connectionClosed(key: target, connection: id), target, &state)
            // A leased connection stays registered until its requester releases it.
            if state.machine.isUnknown(key: target, connection: id) { state.connections.removeValue(forKey: id) }
            return effects
        }
        perform(effects)
    }
}

extension TLSError {
    /// Whether this refusal comes from the pinning policy (so other pins might accept the same server).
    var isPinRefusal: Bool {
        switch code {
        case .pinMismatch, .hostNotPinned, .pinSetExpired: return true
        default: return false
        }
    }
}

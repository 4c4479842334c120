import Logging
import NIOCore

/// The keep-alive pool of one transport: carries out ``ConnectionPoolStateMachine``'s actions.
///
/// One pool per ``HTTPSTransport``, so per TLS configuration; keyed inside by host and port.
actor ConnectionPool {
    typealias Machine = ConnectionPoolStateMachine<RequestTarget>
    typealias ConnectionID = Machine.ConnectionID
    typealias WaiterID = Machine.WaiterID

    /// A connection lent to one request.
    struct Lease: Sendable {
        let id: ConnectionID
        let target: RequestTarget
        let connection: HTTPClientConnection
        /// The connection served an earlier request (so it may have gone stale while idle).
        let reused: Bool
    }

    private var machine: Machine
    private let factory: HTTPClientConnection.Factory
    private let idleTimeout: TimeAmount
    private let logger: Logger
    private var connections: [ConnectionID: HTTPClientConnection] = [:]
    private var idleTimers: [ConnectionID: Scheduled<Void>] = [:]
    private var waiters: [WaiterID: (target: RequestTarget, continuation: CheckedContinuation<Lease, any Error>)] = [:]
    private var waiterTimers: [WaiterID: Scheduled<Void>] = [:]
    private var nextWaiter = 0

    init(factory: HTTPClientConnection.Factory, maxPerHost: Int, idleTimeout: TimeAmount, logger: Logger) {
        self.machine = Machine(maxPerKey: maxPerHost)
        self.factory = factory
        self.idleTimeout = idleTimeout
        self.logger = logger
    }

    /// A connection to `target`, reused when one is idle, else new (or the next freed one at the limit).
    ///
    /// - Throws: `TLSError.timeout(.request)` when `deadline` passes first; connection errors; `CancellationError`.
    func lease(_ target: RequestTarget, deadline: NIODeadline) async throws -> Lease {
        nextWaiter += 1
        let waiter = WaiterID(raw: nextWaiter)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters[waiter] = (target, continuation)
                let action = machine.lease(target, for: waiter)
                if case .useIdle = action {} else {
                    waiterTimers[waiter] = factory.group.any().scheduleTask(deadline: deadline) {
                        Task { await self.abandon(waiter, error: TLSError.timeout(.request)) }
                    }
                }
                if case .none = action {
                    logger.debug("waiting for a free connection", metadata: ["host": "\(target.host)"])
                }
                run(action, target)
            }
        } onCancel: {
            Task { await self.abandon(waiter, error: CancellationError()) }
        }
    }

    /// Returns a leased connection: reused when `reusable`, else closed.
    func release(_ lease: Lease, reusable: Bool) {
        let reusable = reusable && lease.connection.channel.isActive
        run(machine.release(lease.target, lease.id, reusable: reusable), lease.target)
    }

    /// Closes idle connections and refuses waiters; leased connections close when released.
    func shutDown() {
        run(machine.shutDown(), nil)
    }

    private func abandon(_ waiter: WaiterID, error: any Error) {
        guard let entry = waiters.removeValue(forKey: waiter) else { return }
        waiterTimers.removeValue(forKey: waiter)?.cancel()
        _ = machine.removeWaiter(entry.target, waiter)
        entry.continuation.resume(throwing: error)
    }

    private func resume(_ waiter: WaiterID, with lease: Lease) {
        waiterTimers.removeValue(forKey: waiter)?.cancel()
        guard let entry = waiters.removeValue(forKey: waiter) else {
            // The requester gave up meanwhile: the connection goes back to the pool.
            release(lease, reusable: true)
            return
        }
        entry.continuation.resume(returning: lease)
    }

    private func run(_ action: Machine.Action, _ target: RequestTarget?) {
        switch action {
        case .none:
            break
        case .useIdle(let id, let waiter), .handOver(let id, let waiter):
            idleTimers.removeValue(forKey: id)?.cancel()
            guard let connection = connections[id], let target else { return }
            logger.debug("reusing connection", metadata: ["host": "\(target.host)", "connection": "\(id)"])
            resume(waiter, with: Lease(id: id, target: target, connection: connection, reused: true))
        case .create(let id, let waiter):
            guard let target else { return }
            create(id, for: waiter, target: target)
        case .park(let id):
            guard let connection = connections[id], let target else { return }
            idleTimers[id] = connection.channel.eventLoop.scheduleTask(in: idleTimeout) {
                Task { await self.idleTimeoutFired(id, target) }
            }
        case .close(let id):
            close(id)
        case .closeAndCreate(let id, let replacement, let waiter):
            close(id)
            guard let target else { return }
            create(replacement, for: waiter, target: target)
        case .failShutDown(let waiter):
            abandon(waiter, error: TLSError.connectionClosed)
        case .shutDown(let close, let fail):
            close.forEach(self.close)
            fail.forEach { abandon($0, error: TLSError.connectionClosed) }
        }
    }

    private func create(_ id: ConnectionID, for waiter: WaiterID, target: RequestTarget) {
        logger.debug("opening connection", metadata: ["host": "\(target.host)", "port": "\(target.port)", "connection": "\(id)"])
        let factory = self.factory
        Task {
            do {
                let connection = try await factory.connect(to: target)
                self.created(id, connection, for: waiter, target: target)
            } catch {
                self.creationFailed(id, error: error, for: waiter, target: target)
            }
        }
    }

    private func created(_ id: ConnectionID, _ connection: HTTPClientConnection, for waiter: WaiterID, target: RequestTarget) {
        connections[id] = connection
        connection.channel.closeFuture.whenComplete { _ in
            Task { await self.connectionClosed(id, target) }
        }
        resume(waiter, with: Lease(id: id, target: target, connection: connection, reused: false))
    }

    private func creationFailed(_ id: ConnectionID, error: any Error, for waiter: WaiterID, target: RequestTarget) {
        logger.debug("connection failed", metadata: ["host": "\(target.host)", "error": "\(error)"])
        if let entry = waiters.removeValue(forKey: waiter) {
            waiterTimers.removeValue(forKey: waiter)?.cancel()
            entry.continuation.resume(throwing: error)
        }
        run(machine.creationFailed(target, id), target)
    }

    private func idleTimeoutFired(_ id: ConnectionID, _ target: RequestTarget) {
        idleTimers.removeValue(forKey: id)
        if case .close = machine.idleTimeoutFired(target, id) {
            logger.debug("closing idle connection", metadata: ["host": "\(target.host)", "connection": "\(id)"])
            close(id)
        }
    }

    private func connectionClosed(_ id: ConnectionID, _ target: RequestTarget) {
        idleTimers.removeValue(forKey: id)?.cancel()
        run(machine.connectionClosed(target, id), target)
        // A leased connection stays registered until its requester releases it.
        if machine.isUnknown(target, id) { connections.removeValue(forKey: id) }
    }

    private func close(_ id: ConnectionID) {
        idleTimers.removeValue(forKey: id)?.cancel()
        connections.removeValue(forKey: id)?.close()
    }
}

/// The TLS handler's connection lifecycle as a pure state machine: `TLSHandler` reports each event and
/// carries out the action returned, one action enum per event (so only legal combinations can be written, and the
/// handler's `switch`es are exhaustive). No I/O, no OpenSSL: generic over the buffered write so it is tested alone.
///
///     idle ──start──▶ handshaking ──handshakeSucceeded──▶ active ──close──▶ closing
///       │                  │ fail / close / inactive          │ fail / inactive      │ inactive
///       └──────────────────┴──────────────▶ failed / closed ◀─┴──────────────────────┘
struct TLSHandlerStateMachine<PendingWrite> {
    enum State: Equatable { case idle, handshaking, active, closing, closed, failed }

    private(set) var state = State.idle
    private var buffered: [PendingWrite] = []
    private var flushRequested = false
    private var receivedCloseNotify = false

    enum StartAction: Equatable {
        case startHandshake
        /// Started already.
        case none
    }

    /// The channel is active: the handshake starts (only once).
    mutating func start() -> StartAction {
        guard state == .idle else { return .none }
        state = .handshaking
        return .startHandshake
    }

    /// Whether ciphertext from the network should be fed to OpenSSL.
    var acceptsCiphertext: Bool { state == .handshaking || state == .active || state == .closing }
    /// Whether the handshake is running.
    var isHandshaking: Bool { state == .handshaking }
    /// Whether application data flows (the checks passed and the connection is not yet closed by us).
    var carriesData: Bool { state == .active || state == .closing }

    enum WriteAction: Equatable {
        /// Kept until the handshake and its checks pass.
        case buffered
        /// Encrypt and send now.
        case encrypt
        /// The connection is closing or closed: fail the write.
        case reject
    }

    mutating func write(_ write: PendingWrite) -> WriteAction {
        switch state {
        case .idle, .handshaking:
            buffered.append(write)
            return .buffered
        case .active: return .encrypt
        case .closing, .closed, .failed: return .reject
        }
    }

    enum FlushAction: Equatable {
        case flush
        /// Before the handshake: remembered, and done at activation.
        case deferUntilActive
    }

    mutating func flush() -> FlushAction {
        if carriesData { return .flush }
        flushRequested = true
        return .deferUntilActive
    }

    enum ActivationAction {
        /// Not handshaking: nothing to do.
        case none
        /// Encrypt the writes buffered during the handshake, in order.
        case encrypt([PendingWrite])
        /// Encrypt them and flush: a flush was asked for meanwhile.
        case encryptAndFlush([PendingWrite])
    }

    /// The handshake and the checks passed.
    mutating func handshakeSucceeded() -> ActivationAction {
        guard state == .handshaking else { return .none }
        state = .active
        defer {
            buffered = []
            flushRequested = false
        }
        return flushRequested ? .encryptAndFlush(buffered) : .encrypt(buffered)
    }

    enum FailAction {
        /// The connection already failed or closed: report nothing.
        case none
        /// Fail these buffered writes, report the failure and close.
        case fail(writes: [PendingWrite])
    }

    /// A failure.
    mutating func fail() -> FailAction {
        guard state != .failed, state != .closed else { return .none }
        state = .failed
        return .fail(writes: takeBuffered())
    }

    /// The peer sent close_notify.
    mutating func closeNotifyReceived() { receivedCloseNotify = true }

    enum CloseAction {
        /// Fail these writes and close.
        case close(failing: [PendingWrite])
        /// Send close_notify first (the handshake completed), then fail these writes and close.
        case sendCloseNotifyAndClose(failing: [PendingWrite])
    }

    /// A close request (`all`: both directions).
    mutating func close(all: Bool) -> CloseAction {
        var notify = false
        if state == .active {
            state = .closing
            notify = true
        }
        var failing: [PendingWrite] = []
        if all {
            // Closing ourselves before the handshake finished is not the peer's failure: report nothing later.
            if state == .idle || state == .handshaking { state = .closed }
            failing = takeBuffered()
        }
        return notify ? .sendCloseNotifyAndClose(failing: failing) : .close(failing: failing)
    }

    enum InactiveAction {
        /// Fail these writes; nothing else to report.
        case closed(failing: [PendingWrite])
        /// The peer hung up during the handshake: report it, and fail these writes.
        case handshakeInterrupted(failing: [PendingWrite])
        /// The peer hung up after the handshake without close_notify: report it, and fail these writes.
        case uncleanShutdown(failing: [PendingWrite])
    }

    /// The TCP connection is gone.
    mutating func channelInactive() -> InactiveAction {
        let previous = state
        state = .closed
        let failing = takeBuffered()
        switch previous {
        case .handshaking: return .handshakeInterrupted(failing: failing)
        case .active where !receivedCloseNotify: return .uncleanShutdown(failing: failing)
        default: return .closed(failing: failing)
        }
    }

    private mutating func takeBuffered() -> [PendingWrite] {
        defer { buffered = [] }
        return buffered
    }
}

extension TLSHandlerStateMachine.ActivationAction: Equatable where PendingWrite: Equatable {}
extension TLSHandlerStateMachine.FailAction: Equatable where PendingWrite: Equatable {}
extension TLSHandlerStateMachine.CloseAction: Equatable where PendingWrite: Equatable {}
extension TLSHandlerStateMachine.InactiveAction: Equatable where PendingWrite: Equatable {}

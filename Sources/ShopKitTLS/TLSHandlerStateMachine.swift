/// The TLS handler's connection lifecycle as a pure state machine: `TLSHandler` reports each event and
/// carries out the action returned. No I/O, no OpenSSL: generic over the buffered write so it is tested alone.
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

    /// The channel is active: returns whether to start the handshake now (only once).
    mutating func start() -> Bool {
        guard state == .idle else { return false }
        state = .handshaking
        return true
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

    /// Returns whether to flush now; before the handshake the flush is remembered for activation.
    mutating func flush() -> Bool {
        if carriesData { return true }
        flushRequested = true
        return false
    }

    /// The handshake and the checks passed: the buffered writes to encrypt, and whether to flush them.
    mutating func handshakeSucceeded() -> (writes: [PendingWrite], flush: Bool) {
        guard state == .handshaking else { return ([], false) }
        state = .active
        defer {
            buffered = []
            flushRequested = false
        }
        return (buffered, flushRequested)
    }

    /// A failure: the writes to fail, or nil if the connection already failed or closed (report nothing).
    mutating func fail() -> [PendingWrite]? {
        guard state != .failed, state != .closed else { return nil }
        state = .failed
        return takeBuffered()
    }

    /// The peer sent close_notify.
    mutating func closeNotifyReceived() { receivedCloseNotify = true }

    /// A close request: whether to send close_notify first, and the writes to fail.
    mutating func close(all: Bool) -> (sendCloseNotify: Bool, writesToFail: [PendingWrite]) {
        var notify = false
        if state == .active {
            state = .closing
            notify = true
        }
        guard all else { return (notify, []) }
        // Closing ourselves before the handshake finished is not the peer's failure: report nothing later.
        if state == .idle || state == .handshaking { state = .closed }
        return (notify, takeBuffered())
    }

    enum InactiveReport: Equatable {
        case none
        /// The peer hung up during the handshake.
        case handshakeInterrupted
        /// The peer hung up after the handshake without close_notify.
        case uncleanShutdown
    }

    /// The TCP connection is gone: what to report, and the writes to fail.
    mutating func channelInactive() -> (report: InactiveReport, writesToFail: [PendingWrite]) {
        let previous = state
        state = .closed
        let report: InactiveReport
        switch previous {
        case .handshaking: report = .handshakeInterrupted
        case .active where !receivedCloseNotify: report = .uncleanShutdown
        default: report = .none
        }
        return (report, takeBuffered())
    }

    private mutating func takeBuffered() -> [PendingWrite] {
        defer { buffered = [] }
        return buffered
    }
}

import NIOCore

/// When a pooled connection's idle timer closes it, as a pure rule (the caller passes `now`), so that keeping a
/// connection alive costs no timer work per request.
///
/// A timer is armed when a connection is parked with none pending, and it is not cancelled when the connection
/// is leased again. When it fires, it closes the connection only if it is idle and has been for the whole
/// timeout since it was last parked; if it was parked again meanwhile, it is armed again for the rest of that
/// period; if it is leased, it stops, and the next park arms a new one. So a connection is closed no earlier
/// than `timeout` after its last park, and no later than that plus the event loop's lateness, as with a timer
/// re-armed at every park.
struct IdleClock: Equatable {
    /// What a fired timer does.
    enum Fired: Equatable {
        /// The connection has been idle for the whole timeout: close it.
        case close
        /// Parked again since the timer was armed: arm it again for this deadline.
        case rearm(NIODeadline)
        /// In use: no timer until the next park.
        case stop
    }

    let timeout: TimeAmount
    /// When the connection was last parked; nil while it is leased.
    private(set) var parkedAt: NIODeadline?
    /// A timer is pending.
    private(set) var armed = false

    init(timeout: TimeAmount) { self.timeout = timeout }

    /// The connection was parked at `now`: the deadline to arm a timer for, or nil when one is pending.
    mutating func parked(now: NIODeadline) -> NIODeadline? {
        parkedAt = now
        guard !armed else { return nil }
        armed = true
        return now + timeout
    }

    /// The connection was leased again.
    mutating func leased() {
        parkedAt = nil
    }

    /// The pending timer fired at `now`.
    mutating func fired(now: NIODeadline) -> Fired {
        guard let parkedAt else {
            armed = false
            return .stop
        }
        let due = parkedAt + timeout
        guard now < due else {
            armed = false
            return .close
        }
        return .rearm(due)
    }
}

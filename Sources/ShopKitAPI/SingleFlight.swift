/// The bookkeeping of single-flight work: one operation per key at a time, and the callers waiting for it.
///
/// The one who starts a flight for a key is its *leader*; callers that ask for the same key while it runs are
/// *followers*: they wait for the leader's result. The two decorators lead in two ways:
/// - dedup: the first caller leads and sends the request itself, so the common case (no one else asks) costs no
///   task and no hand-off between threads. When the leader ends without a result for the others (it was
///   cancelled), the flight is handed over to its oldest follower, which sends again for the rest.
/// - auth: a task of its own leads the token refresh, and every caller, the first included, follows it. The task is
///   never cancelled, so a rotated refresh token is always saved; it never hands the flight over.
///
/// A pure state machine (no tasks, no I/O): each event returns the action its owner must carry out. Each
/// decorator keeps it inside its actor and resumes the followers (the `Follower`s) as told.
struct SingleFlight<Key: Hashable, Follower> {
    /// One operation in flight: who runs it and who waits for it.
    private struct Flight {
        /// Changes when the flight is handed over, so the old leader's late report cannot end the new one.
        var id: UInt64
        /// In arrival order: the oldest is handed the flight first.
        var followers: [(id: UInt64, follower: Follower)]
    }

    /// What ``follow(_:waiterID:follower:)`` asks the owner to do.
    enum FollowAction: Equatable {
        /// The flight had ended: the caller leads a new one, tagged `flightID` (the follower was not kept).
        case lead(flightID: UInt64)
        /// The follower now waits for the running flight.
        case following
    }

    /// What ``finish(_:flightID:handOver:)`` asks the owner to do.
    enum FinishAction {
        /// The flight ended: resume these followers with the leader's result.
        case resume([Follower])
        /// The flight goes on: resume `follower` as its leader, tagged `flightID`; the others keep waiting.
        case handOver(Follower, flightID: UInt64)
    }

    private var flights: [Key: Flight] = [:]
    private var lastID: UInt64 = 0

    /// A fresh identifier for a follower.
    mutating func makeWaiterID() -> UInt64 {
        lastID &+= 1
        return lastID
    }

    /// Starts a flight for `key` led by the caller, unless one is running; returns its ID, or `nil` when the caller
    /// must follow the running one.
    mutating func lead(_ key: Key) -> UInt64? {
        guard flights[key] == nil else { return nil }
        lastID &+= 1
        flights[key] = Flight(id: lastID, followers: [])
        return lastID
    }

    /// Adds `follower` to the running flight for `key`; when none runs (it ended since ``lead(_:)``),
    /// the caller leads a new one instead.
    mutating func follow(_ key: Key, waiterID: UInt64, follower: Follower) -> FollowAction {
        guard flights[key] != nil else { return .lead(flightID: lead(key)!) }
        flights[key]!.followers.append((waiterID, follower))
        return .following
    }

    /// The leader of flight `flightID` ended. With `handOver` (it has no result the followers can use) the flight
    /// passes to the oldest follower, if any; otherwise it is evicted and every follower gets the result.
    mutating func finish(_ key: Key, flightID: UInt64, handOver: Bool) -> FinishAction {
        guard var flight = flights[key], flight.id == flightID else { return .resume([]) }
        guard handOver, !flight.followers.isEmpty else {
            flights[key] = nil
            return .resume(flight.followers.map(\.follower))
        }
        let next = flight.followers.removeFirst()
        lastID &+= 1
        flight.id = lastID
        flights[key] = flight
        return .handOver(next.follower, flightID: lastID)
    }

    /// Follower `waiterID` was cancelled: it stops waiting and is returned, to be resumed with
    /// `CancellationError`. `nil` when it is not waiting (any more): its flight ended or it leads it now.
    mutating func leave(_ key: Key, waiterID: UInt64) -> Follower? {
        guard let index = flights[key]?.followers.firstIndex(where: { $0.id == waiterID }) else { return nil }
        return flights[key]!.followers.remove(at: index).follower
    }

    /// Operations in flight.
    var flightCount: Int { flights.count }

    /// Callers in a flight (leaders and followers), over all flights.
    var waiterCount: Int { flights.values.reduce(0) { $0 + 1 + $1.followers.count } }
}

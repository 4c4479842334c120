/// Which event loop a new connection goes on: one with the fewest of the pool's connections, and among those the
/// loop chosen last.
///
/// Spreading concurrent connections over the loops uses every core; keeping to the last loop when loads tie keeps
/// one-at-a-time connections (a new connection per request, each closed before the next) on one warm thread
/// instead of waking the loops in turn. (Round robin, `EventLoopGroup.next()`, alternated them, and each handshake
/// then woke a thread that had slept and often moved to another core.)
struct LoopPlacement<ID: Hashable> {
    /// Connections on each loop (the index into the group's loops).
    private var load: [Int]
    /// Where each connection is.
    private var placed: [ID: Int] = [:]
    /// The loop chosen last.
    private var last = 0

    /// Placement over `loops` loops (at least one).
    init(loops: Int) {
        precondition(loops > 0, "an event loop group has at least one loop")
        load = Array(repeating: 0, count: loops)
    }

    /// Places connection `id` and returns its loop's index. Placing an `id` again moves it.
    mutating func place(_ id: ID) -> Int {
        remove(id)
        var best = last
        for index in load.indices where load[index] < load[best] { best = index }
        load[best] += 1
        placed[id] = best
        last = best
        return best
    }

    /// Forgets connection `id` (closed, or its creation failed); nothing if it is not placed.
    mutating func remove(_ id: ID) {
        guard let index = placed.removeValue(forKey: id) else { return }
        load[index] -= 1
    }

    /// The number of connections on loop `index`.
    func connections(on index: Int) -> Int { load[index] }
}

extension LoopPlacement: Sendable where ID: Sendable {}

/// A dictionary that keeps at most `capacity` entries, dropping the oldest insertion first.
///
/// The one bounded cache of the package (TLS sessions, certificate details, once-per-host notes). A value type
/// with no lock of its own: keep it inside the package's one lock box, `NIOLockedValueBox`.
package struct BoundedCache<Key: Hashable, Value> {
    private var entries: [Key: Value] = [:]
    /// Keys in insertion order; `head` is the oldest one still in use (removed keys are skipped lazily).
    private var order: [Key] = []
    private var head = 0
    /// The most entries kept (at least 1).
    package let capacity: Int

    /// An empty cache of at most `capacity` entries.
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// How many entries are kept.
    package var count: Int { entries.count }

    /// The value for `key`, if kept.
    package subscript(key: Key) -> Value? { entries[key] }

    /// Stores `value` for `key` (replacing, without refreshing its age); drops the oldest entry when full.
    package mutating func insert(_ value: Value, for key: Key) {
        if entries.updateValue(value, forKey: key) != nil { return }
        order.append(key)
        while entries.count > capacity, head < order.count {
            let oldest = order[head]
            head += 1
            entries.removeValue(forKey: oldest)
        }
        compact()
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    package mutating func removeValue(forKey key: Key) -> Value? {
        guard let value = entries.removeValue(forKey: key) else { return nil }
        if let index = order[head...].firstIndex(of: key) { order.remove(at: index) }
        return value
    }

    /// Drops every entry.
    package mutating func removeAll() {
        entries.removeAll()
        order.removeAll()
        head = 0
    }

    /// Drops the consumed prefix of `order` once it is as long as what is left, so it stays O(capacity).
    private mutating func compact() {
        if head > 0, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}

extension BoundedCache: Sendable where Key: Sendable, Value: Sendable {}

import Foundation

/// A value behind a lock: the one lock box of the modules that do not link NIO (where NIO is linked, use
/// `NIOLockedValueBox`).
package final class LockedBox<Value> {
    private let lock = NSLock()
    private var value: Value

    /// A box holding `value`.
    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. Never call back into the box from `body`.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// @unchecked Sendable: `value` is only read or written inside `withLock`, while `lock` is held, and it is
// itself Sendable, so what `withLock` hands out may cross threads.
extension LockedBox: @unchecked Sendable where Value: Sendable {}

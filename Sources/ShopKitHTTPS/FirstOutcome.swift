import Foundation

/// The first of several outcomes, reported from any thread; the later ones are dropped. One task awaits it.
///
/// Lets a request's body upload race its exchange: whichever ends first decides, without waiting for the other
/// (which may never end: a caller's body stream can hang).
final class FirstOutcome<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `outcome` and `waiter` are only read or written while `lock` is held; the
    // continuation is resumed after the lock is released.
    private let lock = NSLock()
    private var outcome: Value?
    private var waiter: CheckedContinuation<Value, Never>?

    /// Reports `value`; does nothing if an outcome was reported already.
    func complete(_ value: Value) {
        let waiter: CheckedContinuation<Value, Never>? = lock.withLock {
            guard outcome == nil else { return nil }
            outcome = value
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(returning: value)
    }

    /// The first outcome, once one was reported. Await it from one task only.
    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = lock.withLock {
                    if let outcome { return outcome }
                    waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

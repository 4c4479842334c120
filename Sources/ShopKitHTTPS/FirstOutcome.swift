import NIOConcurrencyHelpers

/// The first of several outcomes, reported from any thread; the later ones are dropped. One task awaits it.
///
/// Lets a request's body upload race its exchange: whichever ends first decides, without waiting for the other
/// (which may never end: a caller's body stream can hang). The transport's one resume-once primitive.
final class FirstOutcome<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, Never>?)
        case done(Value)
    }

    private let state = NIOLockedValueBox(State.waiting(nil))

    /// Reports `value`; does nothing if an outcome was reported already.
    func complete(_ value: Value) {
        let waiter: CheckedContinuation<Value, Never>? = state.withLockedValue { state in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(value)
            return waiter
        }
        waiter?.resume(returning: value)
    }

    /// The first outcome, once one was reported. Await it from one task only.
    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = state.withLockedValue { state in
                    if case .done(let value) = state { return value }
                    state = .waiting(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

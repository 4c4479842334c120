import Testing
import TestSupport

/// TestSupport's `WaitableState`, the wait under `EventCounter` and the loopback servers: a waiter returns when its
/// predicate holds, at once when it already does, and when its task is cancelled (then it is removed).
///
/// A wait that wrongly never returns must fail a test, not hang it: the time limit only cancels the test's own task,
/// so the waits run in child tasks (cancelled with the test) or, where the test cancels them itself, report their
/// return through a `Gate`, which does not depend on `WaitableState`.
@Suite(.timeLimit(.minutes(1))) struct WaitableStateTests {
    /// Waits (without sleeping) until `count` tasks are parked on `state`, or the test is cancelled.
    static func waitForWaiters(_ state: WaitableState<Int>, _ count: Int) async {
        while state.waiterCount < count && !Task.isCancelled { await Task.yield() }
    }

    /// Waits until the value is at least `target`, then reads it.
    static func value(of state: WaitableState<Int>, onceAtLeast target: Int) async -> Int {
        await state.wait { $0 >= target }
        return state.withLockedValue { $0 }
    }

    /// Runs `wait` in a task of its own; returns whether it returned (and whether its task was cancelled then),
    /// or nil when the test's time limit came first.
    static func returned(_ wait: @escaping @Sendable () async -> Void, cancelling: Bool, state: WaitableState<Int>)
        async -> Bool?
    {
        let returned = Gate()
        let waiter = Task {
            await wait()
            let cancelled = Task.isCancelled
            await returned.open()
            return cancelled
        }
        if cancelling {
            await waitForWaiters(state, 1)
            waiter.cancel()
        }
        guard (try? await returned.wait()) != nil else {
            Issue.record("the wait did not return")
            return nil
        }
        return await waiter.value
    }

    @Test func aWaiterReturnsWhenAChangeSatisfiesItAndNotBefore() async {
        let state = WaitableState(0)
        async let atTwo = Self.value(of: state, onceAtLeast: 2)
        async let atOne = Self.value(of: state, onceAtLeast: 1)
        await Self.waitForWaiters(state, 2)
        #expect(state.waiterCount == 2)

        state.withLockedValue { $0 = 1 }
        // The change resumed the satisfied waiter only: the other is still parked, so it cannot have returned.
        #expect(state.waiterCount == 1)
        #expect(await atOne == 1)
        #expect(state.waiterCount == 1)

        state.withLockedValue { $0 += 1 }
        #expect(state.waiterCount == 0)
        #expect(await atTwo == 2)
    }

    @Test func aWaitAlreadySatisfiedReturnsAtOnce() async {
        let state = WaitableState(3)
        // Nothing changes the value: a wait that parked would return only at the time limit, which fails the test.
        await state.wait { $0 >= 3 }
        #expect(state.waiterCount == 0)
    }

    @Test func aWaitingTaskThatIsCancelledReturnsAndItsWaiterIsRemoved() async {
        let state = WaitableState(0)
        let cancelled = await Self.returned({ await state.wait { $0 >= 1 } }, cancelling: true, state: state)
        #expect(cancelled == true)  // returned, without the value ever changing
        #expect(state.waiterCount == 0)
        // A later change finds no waiter to resume (resuming the cancelled one again would trap).
        state.withLockedValue { $0 = 1 }
        #expect(state.waiterCount == 0)
    }

    @Test func aTaskCancelledBeforeItWaitsReturnsAtOnce() async {
        let state = WaitableState(0)
        let cancelled = await Self.returned(
            {
                withUnsafeCurrentTask { $0?.cancel() }
                await state.wait { $0 >= 1 }
            }, cancelling: false, state: state)
        // Nothing changes the value: only the cancellation can end the wait.
        #expect(cancelled == true)
        #expect(state.waiterCount == 0)
        #expect(state.withLockedValue { $0 } == 0)
    }
}

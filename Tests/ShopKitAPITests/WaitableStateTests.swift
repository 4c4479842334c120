import Testing
import TestSupport

/// TestSupport's `WaitableState`, the wait under `EventCounter` and the loopback servers: a waiter returns when its
/// predicate holds, at once when it already does; it throws `WaitEnded` when its task is cancelled or its deadline
/// passes (then it is removed), naming what it waited for and what it saw.
///
/// A wait that wrongly never returns must fail a test, not hang it: the time limit only cancels the test's own task,
/// so the waits run in child tasks (cancelled with the test) or, where the test cancels them itself, report their
/// return through a `Gate`, which does not depend on `WaitableState`.
@Suite(.timeLimit(.minutes(3))) struct WaitableStateTests {
    /// Waits (without sleeping) until `count` tasks are parked on `state`, or the test is cancelled.
    static func waitForWaiters(_ state: WaitableState<Int>, _ count: Int) async {
        while state.waiterCount < count && !Task.isCancelled { await Task.yield() }
    }

    /// Waits until the value is at least `target`, then reads it.
    static func value(of state: WaitableState<Int>, onceAtLeast target: Int) async throws -> Int {
        try await state.wait(until: { $0 >= target })
        return state.withLockedValue { $0 }
    }

    /// Runs `wait` in a task of its own; returns how it ended (nil when it returned normally), or records an
    /// issue when the test's time limit came first.
    static func ended(_ wait: @escaping @Sendable () async throws -> Void, cancelling: Bool, state: WaitableState<Int>)
        async -> WaitEnded??
    {
        let returned = Gate()
        let waiter = Task { () -> WaitEnded? in
            defer { Task { await returned.open() } }
            do {
                try await wait()
                return nil
            } catch let error as WaitEnded {
                return error
            } catch {
                Issue.record("a wait threw \(error)")
                return nil
            }
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

    @Test func aWaiterReturnsWhenAChangeSatisfiesItAndNotBefore() async throws {
        let state = WaitableState(0)
        async let atTwo = Self.value(of: state, onceAtLeast: 2)
        async let atOne = Self.value(of: state, onceAtLeast: 1)
        await Self.waitForWaiters(state, 2)
        #expect(state.waiterCount == 2)

        state.withLockedValue { $0 = 1 }
        // The change resumed the satisfied waiter only: the other is still parked, so it cannot have returned.
        #expect(state.waiterCount == 1)
        #expect(try await atOne == 1)
        #expect(state.waiterCount == 1)

        state.withLockedValue { $0 += 1 }
        #expect(state.waiterCount == 0)
        #expect(try await atTwo == 2)
    }

    @Test func aWaitAlreadySatisfiedReturnsAtOnce() async throws {
        let state = WaitableState(3)
        // Nothing changes the value: a wait that parked would end only at its deadline, which fails the test.
        try await state.wait(until: { $0 >= 3 })
        #expect(state.waiterCount == 0)
    }

    @Test func aWaitingTaskThatIsCancelledThrowsAndItsWaiterIsRemoved() async {
        let state = WaitableState(0)
        let ended = await Self.ended(
            { try await state.wait(until: { $0 >= 1 }, for: "one") }, cancelling: true, state: state)
        // Ended by the cancellation, without the value ever changing, and saying what it waited for.
        #expect(ended??.reason == .cancelled)
        #expect(ended??.description.contains("waiting for one; the last state seen: 0") == true)
        #expect(state.waiterCount == 0)
        // A later change finds no waiter to resume (resuming the cancelled one again would trap).
        state.withLockedValue { $0 = 1 }
        #expect(state.waiterCount == 0)
    }

    @Test func aTaskCancelledBeforeItWaitsThrowsAtOnce() async {
        let state = WaitableState(0)
        let ended = await Self.ended(
            {
                withUnsafeCurrentTask { $0?.cancel() }
                try await state.wait(until: { $0 >= 1 })
            }, cancelling: false, state: state)
        // Nothing changes the value: only the cancellation can end the wait.
        #expect(ended??.reason == .cancelled)
        #expect(state.waiterCount == 0)
        #expect(state.withLockedValue { $0 } == 0)
    }

    /// The deadline ends a wait whose event never comes, with what it waited for and the value it saw last. The
    /// deadline is the subject here, and nothing races it: the value never changes.
    @Test func aWaitPastItsDeadlineThrowsSayingWhatItWaitedForAndSaw() async {
        let state = WaitableState(7)
        let ended = await Self.ended(
            { try await state.wait(until: { $0 >= 8 }, for: "eight", timeout: .milliseconds(20)) }, cancelling: false,
            state: state)
        #expect(ended??.reason == .timedOut(after: .milliseconds(20)))
        #expect(ended??.description == "waited 0.02 seconds for eight, and it never came; the last state seen: 7")
        #expect(state.waiterCount == 0)
        // A later change finds no waiter to resume (resuming the ended one again would trap).
        state.withLockedValue { $0 = 8 }
    }

    @Test func aGateThatStaysClosedPastItsDeadlineThrows() async {
        let gate = Gate()
        await #expect { try await gate.wait(timeout: .milliseconds(20)) } throws: { error in
            (error as? WaitEnded)?.reason == .timedOut(after: .milliseconds(20))
        }
    }
}

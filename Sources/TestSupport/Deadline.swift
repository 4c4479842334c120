import Foundation

/// Runs `body`, which blocks (a `read`, `waitpid`, `waitUntilExit`, a semaphore), on a thread of its own, never on
/// the cooperative pool, and returns its result.
///
/// The pool has one thread a core: a test that blocks one stalls every other test's tasks, and on a 2-core machine
/// two such tests stall them all, until unrelated timeouts fire. The wait for `body` has a deadline: past
/// `timeout`, or when the task is cancelled, it throws ``WaitEnded`` naming `what` it waited for. (A thread cannot
/// be stopped: `body` runs on, and a test that can end it, by killing a child or closing a descriptor, does so.)
package func offPool<T: Sendable>(
    _ what: String, timeout: Duration = TestDeadline.wait, _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    let outcome = WaitableState<Result<T, any Error>?>(nil)
    Thread {
        let result = Result { try body() }
        outcome.withLockedValue { $0 = result }
    }.start()
    try await outcome.wait(until: { $0 != nil }, for: what, timeout: timeout)
    return try outcome.withLockedValue { $0! }.get()
}

/// Awaits `body`, in a task of its own, with a deadline: for an await the test cannot give one itself (a library's
/// test hook, a shutdown). Past `timeout`, or when the calling task is cancelled, the body's task is cancelled and
/// this throws ``WaitEnded`` naming `what`, even if the body does not hear the cancellation.
package func withDeadline<T: Sendable>(
    _ what: String, timeout: Duration = TestDeadline.wait, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = WaitableState<Result<T, any Error>?>(nil)
    let task = Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLockedValue { $0 = result }
    }
    do {
        try await outcome.wait(until: { $0 != nil }, for: what, timeout: timeout)
    } catch {
        task.cancel()
        throw error
    }
    return try outcome.withLockedValue { $0! }.get()
}

import CLibSecret
import Dispatch
import Foundation

/// Runs every libsecret call of the process on one dedicated serial thread.
///
/// libsecret's `_sync` calls block, and gnome-keyring misbehaves when sessions are opened concurrently, so all
/// ``KeyringStore``s share one `Thread` (never the cooperative pool) that takes jobs one at a time from a FIFO and
/// holds the one `SecretService` proxy. Each job gets a `GCancellable` that a Dispatch timer cancels after its
/// store's timeout; the caller's continuation is resumed by whichever comes first, the job or the timer, so a stuck
/// D-Bus call cannot hang the caller (jobs queued behind it time out the same way and are skipped).
final class LibSecretThread: Sendable {
    typealias Job = @Sendable (LibSecretSession) -> Void

    // Safe to share: `jobs` is read and written only while `condition` is locked.
    private nonisolated(unsafe) var jobs: [Job] = []
    private let condition = NSCondition()

    /// The process's libsecret thread, started on first use; it lives as long as the process.
    static let shared = LibSecretThread()

    private init() {
        let thread = Thread { [self] in self.loop(session: LibSecretSession()) }
        thread.name = "ShopKit.libsecret"
        thread.start()
    }

    private func enqueue(_ job: @escaping Job) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop(session: LibSecretSession) -> Never {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job(session)
        }
    }

    /// Runs `operation` on the thread with a cancellable that fires after `timeout`, suspending (not blocking)
    /// the caller.
    func run<T: Sendable>(
        timeout: Duration,
        _ operation: @escaping @Sendable (LibSecretSession, Cancellable) throws(CredentialError) -> T
    ) async throws(CredentialError) -> T {
        let result: Result<T, CredentialError> = await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            let cancellable = Cancellable()
            enqueue { session in
                guard !cancellable.isCancelled else { return }  // timed out while queued: the caller has moved on
                do throws(CredentialError) {
                    once.resume(.success(try operation(session, cancellable)))
                } catch {
                    once.resume(.failure(error))
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) {
                cancellable.cancel()
                once.resume(.failure(.unavailable(
                    "the Secret Service did not answer within \(timeout) (D-Bus call cancelled); check that "
                        + "gnome-keyring-daemon or another Secret Service is running and responsive")))
            }
        }
        return try result.get()
    }
}

/// Resumes a continuation exactly once, from the job or the timer, whichever comes first.
private final class ResumeOnce<T: Sendable>: Sendable {
    // Safe to share: `continuation` is read and cleared only while `lock` is held.
    private nonisolated(unsafe) var continuation: CheckedContinuation<Result<T, CredentialError>, Never>?
    private let lock = NSLock()

    init(_ continuation: CheckedContinuation<Result<T, CredentialError>, Never>) {
        self.continuation = continuation
    }

    func resume(_ result: Result<T, CredentialError>) {
        lock.lock()
        let pending = continuation
        continuation = nil
        lock.unlock()
        pending?.resume(returning: result)
    }
}

/// Owns one `GCancellable`.
final class Cancellable: Sendable {
    // Safe to share: GLib documents g_cancellable_cancel and g_cancellable_is_cancelled as thread-safe, and the
    // pointer itself never changes; the reference is dropped once, in deinit.
    nonisolated(unsafe) let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = g_cancellable_new() }

    /// Cancels the libsecret call using it, if any.
    func cancel() { g_cancellable_cancel(pointer) }

    /// Whether the timer has fired.
    var isCancelled: Bool { g_cancellable_is_cancelled(pointer) != 0 }

    deinit { g_object_unref(pointer) }
}

extension Duration {
    /// The duration in seconds, for Dispatch.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

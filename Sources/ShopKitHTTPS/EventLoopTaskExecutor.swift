import NIOCore

/// Runs the jobs of the tasks that prefer it on one NIO event loop, the one the transport's connections go on.
///
/// Why: a request made from the cooperative pool crosses threads twice (the caller's task hands the request to
/// the event loop, the loop resumes the caller with the response). A task that runs under
/// `withTaskExecutorPreference(transport.executor)` runs on the loop itself: the transport sees it is already
/// there, starts the exchange without a hop, and resumes it there.
///
/// NIO 2.101's event loops offer no `TaskExecutor` of their own (only a `SerialExecutor` for actors), hence this
/// one. Each job is queued with `execute`, never run inside `enqueue`, so nothing runs re-entrantly.
///
/// - Warning: Code running on this executor runs on the event loop: a task that blocks (a lock held for long,
///   synchronous file or network I/O, heavy computation) stalls every connection of that loop.
final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop the jobs run on.
    let loop: any EventLoop

    init(loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

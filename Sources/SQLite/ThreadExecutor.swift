import Foundation
import Foundations
import SQLCore

/// A serial executor on one thread of its own: an actor that owns a database connection runs every job there, so
/// blocking SQLite calls never occupy Swift's shared cooperative pool (GRDB's `DispatchQueueActor` is the model).
///
/// ```swift
/// actor Store {
///     nonisolated let executor = ThreadExecutor(name: "orders")
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
///     deinit { executor.stop() }
/// }
/// ```
public final class ThreadExecutor: SerialExecutor, Sendable {
    /// A job and the executor it runs on.
    private struct Scheduled: @unchecked Sendable {  // handed to the one thread that runs it, once
        let job: UnownedJob
        let executor: UnownedSerialExecutor
    }

    /// The jobs waiting for the thread; the thread holds this, not the executor, so the executor can go away.
    private let queue = JobQueue<Scheduled>()

    /// Starts the thread, named `name` (as the system shows it: perf, top, /proc).
    ///
    /// A task that a job of this thread resumes (a write's caller, once its commit is on disk) goes on here until it
    /// next waits, when its executor cooperates (``CurrentThread/runKeeping(_:)``, as an HTTP server's responders
    /// do): an answer goes out from the commit's thread, with no hand-off to another first.
    public init(name: String) {
        let queue = self.queue
        Thread {
            CurrentThread.setName(name)
            while let next = queue.next() {
                CurrentThread.runKeeping { next.job.runSynchronously(on: next.executor) }
            }
        }.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.append(Scheduled(job: UnownedJob(job), executor: asUnownedSerialExecutor()))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Lets the thread run the jobs already queued, then end.
    public func stop() { queue.stop() }
}

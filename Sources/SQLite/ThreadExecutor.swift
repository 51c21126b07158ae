import Foundation
import Synchronization

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
    private let queue: JobQueue

    /// Starts the thread, named `name` for debuggers.
    public init(name: String) {
        let queue = JobQueue()
        self.queue = queue
        let thread = Thread { queue.run() }
        thread.name = name
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.append(UnownedJob(job), executor: asUnownedSerialExecutor())
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Lets the thread run the jobs already queued, then end.
    public func stop() { queue.stop() }
}

/// The jobs waiting for the thread; the thread holds this, not the executor, so the executor can go away.
private final class JobQueue: Sendable {
    private struct State {
        var jobs: [(UnownedJob, UnownedSerialExecutor)] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    func append(_ job: UnownedJob, executor: UnownedSerialExecutor) {
        condition.lock()
        state.withLock { $0.jobs.append((job, executor)) }
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.broadcast()
        condition.unlock()
    }

    func run() {
        while true {
            condition.lock()
            var next: (UnownedJob, UnownedSerialExecutor)?
            while next == nil {
                let (job, stopped) = state.withLock { state -> ((UnownedJob, UnownedSerialExecutor)?, Bool) in
                    guard state.head < state.jobs.count else {
                        state.jobs.removeAll(keepingCapacity: true)
                        state.head = 0
                        return (nil, state.stopped)
                    }
                    defer { state.head += 1 }
                    return (state.jobs[state.head], false)
                }
                if let job {
                    next = job
                } else if stopped {
                    condition.unlock()
                    return
                } else {
                    condition.wait()
                }
            }
            condition.unlock()
            if let (job, executor) = next { job.runSynchronously(on: executor) }
        }
    }
}

import Dispatch
import Synchronization

/// Work waiting for threads of their own (SQLite's writer, PostgreSQL's pool, an HTTP server's responders), oldest
/// first. ``next()`` blocks the calling thread until there is some and answers `nil` once the queue is stopped and
/// empty, so a thread serves it with `while let job = queue.next() { ... }`.
///
/// A thread is woken only when a job has no thread on its way to it: a job queued while a woken thread has not yet
/// taken the one before wakes nobody more, and the waking happens outside the lock, so the woken thread does not
/// fall asleep again at once on the lock its waker still holds. Each wake-up is a context switch; a busy server
/// saves most of them.
///
/// Inlinable, so that each executor's queue is specialized for its job type in the executor's module: unspecialized,
/// every call looked up the generic state's metadata at run time (about 30 calls a payment).
public final class JobQueue<Job: Sendable>: Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var jobs: [(job: Job, queuedAt: ContinuousClock.Instant)] = []
        @usableFromInline var head = 0
        /// Threads in ``next()`` that found nothing: waiting, or about to wait.
        @usableFromInline var idle = 0
        /// Of those, how many were woken and have not yet left the wait.
        @usableFromInline var woken = 0
        @usableFromInline var stopped = false

        @usableFromInline init() {}

        @inlinable var waiting: Int { jobs.count - head }

        @inlinable mutating func takeFirst() -> Job {
            let job = jobs[head].job
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= jobs.count {  // a queue that never empties stays small
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    @usableFromInline let state = Mutex(State())
    @usableFromInline let wakeUps = DispatchSemaphore(value: 0)

    public init() {}

    /// Queues `job` and wakes one waiting thread, unless one already woken will take it.
    @inlinable public func append(_ job: Job) {
        let wake = state.withLock { state -> Bool in
            state.jobs.append((job, .now))
            guard state.idle > state.woken, state.waiting > state.woken else { return false }
            state.woken += 1
            return true
        }
        if wake { wakeUps.signal() }
    }

    /// Lets the threads take the jobs already queued, then answers `nil` to each.
    public func stop() {
        let sleepers = state.withLock { state -> Int in
            state.stopped = true
            defer { state.woken = state.idle }
            return state.idle - state.woken
        }
        for _ in 0..<sleepers { wakeUps.signal() }
    }

    /// The next job, or `nil` once stopped and empty. Blocks the calling thread while there is none.
    @inlinable public func next() -> Job? {
        while true {
            let (job, stopped) = state.withLock { state -> (Job?, Bool) in
                if state.waiting > 0 { return (state.takeFirst(), false) }
                if state.stopped { return (nil, true) }
                state.idle += 1
                return (nil, false)
            }
            if let job { return job }
            if stopped { return nil }
            wakeUps.wait()
            state.withLock { state in
                state.idle -= 1
                state.woken -= 1
            }
        }
    }

    /// Takes out the jobs queued before `cutoff` (they are at the head: the queue is in arrival order), and says
    /// whether the queue is stopped.
    public func removeJobs(queuedBefore cutoff: ContinuousClock.Instant) -> (jobs: [Job], stopped: Bool) {
        state.withLock { state in
            var late: [Job] = []
            while state.waiting > 0, state.jobs[state.head].queuedAt < cutoff {
                late.append(state.takeFirst())
            }
            return (late, state.stopped)
        }
    }
}

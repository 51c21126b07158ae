import Foundation
import Synchronization

/// Work waiting for a backend's own threads (SQLite's writer, PostgreSQL's pool), oldest first. ``next()`` blocks
/// the calling thread until there is some and answers `nil` once the queue is stopped and empty, so a thread serves
/// it with `while let job = queue.next() { ... }`.
public final class JobQueue<Job: Sendable>: Sendable {
    private struct State {
        var jobs: [(job: Job, queuedAt: ContinuousClock.Instant)] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    public init() {}

    /// Queues `job` and wakes one waiting thread.
    public func append(_ job: Job) {
        condition.lock()
        state.withLock { $0.jobs.append((job, .now)) }
        condition.signal()
        condition.unlock()
    }

    /// Lets the threads take the jobs already queued, then answers `nil` to each.
    public func stop() {
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.broadcast()
        condition.unlock()
    }

    /// The next job, or `nil` once stopped and empty. Blocks the calling thread while there is none.
    public func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (job, stopped) = state.withLock { state -> (Job?, Bool) in
                guard state.head < state.jobs.count else {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                    return (nil, state.stopped)
                }
                defer { state.head += 1 }
                return (state.jobs[state.head].job, false)
            }
            if let job { return job }
            if stopped { return nil }
            condition.wait()
        }
    }

    /// Takes out the jobs queued before `cutoff` (they are at the head: the queue is in arrival order), and says
    /// whether the queue is stopped.
    public func removeJobs(queuedBefore cutoff: ContinuousClock.Instant) -> (jobs: [Job], stopped: Bool) {
        state.withLock { state in
            var late: [Job] = []
            while state.head < state.jobs.count, state.jobs[state.head].queuedAt < cutoff {
                late.append(state.jobs[state.head].job)
                state.head += 1
            }
            return (late, state.stopped)
        }
    }
}

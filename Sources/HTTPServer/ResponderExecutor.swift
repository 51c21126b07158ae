import Foundation
import Synchronization

/// The threads that run responders: a `TaskExecutor` of its own, so that requests are answered even while Swift's
/// shared cooperative pool (as many threads as cores) is held by blocking work elsewhere in the process.
/// Tasks started with this executor as their preference run their nonisolated code, and the code of default
/// actors they call, on these threads.
final class ResponderExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    /// Starts `threads` worker threads; they end when `stop()` is called and the queue is empty.
    init(threads: Int, name: String = "HTTPServer.responder") {
        for index in 0..<max(1, threads) {
            let thread = Thread { [self] in work() }
            thread.name = "\(name).\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        state.withLock { $0.jobs.append(unowned) }
        condition.signal()
        condition.unlock()
    }

    /// Lets the workers finish the jobs already queued, then end.
    func stop() {
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            var next: UnownedJob?
            while true {
                let (job, stopped) = state.withLock { state -> (UnownedJob?, Bool) in
                    state.jobs.isEmpty ? (nil, state.stopped) : (state.jobs.removeFirst(), false)
                }
                if let job {
                    next = job
                    break
                }
                if stopped {
                    condition.unlock()
                    return
                }
                condition.wait()
            }
            condition.unlock()
            next?.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

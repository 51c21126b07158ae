import Foundation
import Foundations

/// The threads that run responders: a `TaskExecutor` of its own, so that requests are answered even while Swift's
/// shared cooperative pool (as many threads as cores) is held by blocking work elsewhere in the process.
/// Tasks started with this executor as their preference run their nonisolated code, and the code of default
/// actors they call, on these threads.
///
/// A polling thread can also run a task itself for as long as the task does not wait (``runInline(_:)``): jobs
/// enqueued from that thread while it does so stay on it, and whatever resumes the task later from another thread
/// goes to the worker threads. An answer that needs no waiting then costs no hand-off between threads.
final class ResponderExecutor: TaskExecutor, Sendable {
    /// The jobs waiting for a worker thread.
    private let queue = JobQueue<UnownedJob>()

    /// Starts `threads` worker threads; they end when `stop()` is called and the queue is empty.
    init(threads: Int, name: String = "HTTPServer.responder") {
        for index in 0..<max(1, threads) {
            Thread { [self] in
                CurrentThread.setName("\(name).\(index)")
                CurrentThread.setCurrentExecutor(self)
                work()
            }.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if CurrentThread.keep(unowned, for: self) { return }
        queue.append(unowned)
    }

    /// Calls `start` (which starts tasks that prefer this executor), then runs on the calling thread every job
    /// enqueued from it, until none is left: a task runs here until it waits for something another thread will
    /// resume, and from then on on the worker threads. Must not be called from a task.
    func runInline(_ start: () -> Void) { CurrentThread.runKeeping(start) }

    /// Lets the workers finish the jobs already queued, then end.
    func stop() { queue.stop() }

    private func work() {
        while let job = queue.next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}

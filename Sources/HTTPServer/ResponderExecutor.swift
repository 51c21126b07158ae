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
    /// The jobs a thread in ``runInline(_:)`` keeps for itself; touched by that thread only.
    private final class InlineJobs {
        var jobs: [UnownedJob] = []
    }

    /// The jobs waiting for a worker thread.
    private let queue = JobQueue<UnownedJob>()
    /// The thread-specific slot that points at a thread's ``InlineJobs`` while it runs jobs inline.
    private let inlineKey: pthread_key_t

    /// Starts `threads` worker threads; they end when `stop()` is called and the queue is empty.
    init(threads: Int, name: String = "HTTPServer.responder") {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        inlineKey = key
        for index in 0..<max(1, threads) {
            Thread { [self] in
                Self.nameCurrentThread("\(name).\(index)")
                work()
            }.start()
        }
    }

    deinit { pthread_key_delete(inlineKey) }

    /// Gives the calling thread a name the system shows (perf, top, /proc): at most 15 bytes of it are kept.
    private static func nameCurrentThread(_ name: String) {
        #if os(Linux)
            let descriptor = open("/proc/thread-self/comm", O_WRONLY)
            guard descriptor >= 0 else { return }
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        #else
            Thread.current.name = name
        #endif
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if let inline = pthread_getspecific(inlineKey) {
            Unmanaged<InlineJobs>.fromOpaque(inline).takeUnretainedValue().jobs.append(unowned)
            return
        }
        queue.append(unowned)
    }

    /// Calls `start` (which starts tasks that prefer this executor), then runs on the calling thread every job
    /// enqueued from it, until none is left: a task runs here until it waits for something another thread will
    /// resume, and from then on on the worker threads. Must not be called from a task.
    func runInline(_ start: () -> Void) {
        let inline = InlineJobs()
        pthread_setspecific(inlineKey, Unmanaged.passUnretained(inline).toOpaque())
        start()
        var index = 0
        while index < inline.jobs.count {
            let job = inline.jobs[index]
            index += 1
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
        pthread_setspecific(inlineKey, nil)
        withExtendedLifetime(inline) {}
    }

    /// Lets the workers finish the jobs already queued, then end.
    func stop() { queue.stop() }

    private func work() {
        while let job = queue.next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}

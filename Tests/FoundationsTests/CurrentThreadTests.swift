import Foundation
import Foundations
import Synchronization
import Testing

/// A task executor with one worker thread that cooperates with ``CurrentThread``, as an HTTP server's responders do.
private final class OneThreadExecutor: TaskExecutor, Sendable {
    private let queue = JobQueue<UnownedJob>()
    let worker = Mutex<pthread_t?>(nil)

    init() {
        Thread { [self] in
            CurrentThread.setCurrentExecutor(self)
            worker.withLock { $0 = pthread_self() }
            while let job = queue.next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if CurrentThread.keep(unowned, for: self) { return }
        queue.append(unowned)
    }

    func stop() { queue.stop() }
}

/// A continuation a test resumes from a thread of its own.
private final class Parked: Sendable {
    let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)

    /// Waits until ``resume(keeping:)`` resumes it.
    func park() async {
        await withCheckedContinuation { (parked: CheckedContinuation<Void, Never>) in
            continuation.withLock { $0 = parked }
        }
    }

    /// Resumes the parked task from a new thread, inside `CurrentThread.runKeeping` when `keeping`; returns that
    /// thread and what `CurrentThread.currentExecutor` was on it inside and after.
    func resume(keeping: Bool) async -> (thread: pthread_t, executorInside: Bool, executorAfter: Bool) {
        while continuation.withLock({ $0 == nil }) { try? await Task.sleep(for: .milliseconds(1)) }
        let parked = continuation.withLock { $0.take()! }
        return await withCheckedContinuation { done in
            Thread {
                var inside = false
                if keeping {
                    CurrentThread.runKeeping {
                        parked.resume()
                        inside = CurrentThread.currentExecutor != nil
                    }
                } else {
                    parked.resume()
                }
                done.resume(returning: (pthread_self(), inside, CurrentThread.currentExecutor != nil))
            }.start()
        }
    }
}

@Suite("CurrentThread: a thread's task executor and the jobs it keeps")
struct CurrentThreadTests {
    /// Parks a task that prefers a cooperating executor, resumes it from a new thread (inside `runKeeping` when
    /// `keeping`), and says where the rest of the task ran and what it saw.
    private static func parkAndResume(keeping: Bool) async -> (
        ranOn: pthread_t, executorWasCurrent: Bool, worker: pthread_t,
        resumer: (thread: pthread_t, executorInside: Bool, executorAfter: Bool)
    ) {
        let executor = OneThreadExecutor()
        defer { executor.stop() }
        let parked = Parked()
        let task = Task(executorPreference: executor) { () -> (pthread_t, Bool) in
            await parked.park()
            return (pthread_self(), CurrentThread.currentExecutor === executor)
        }
        let resumer = await parked.resume(keeping: keeping)
        let (ranOn, executorWasCurrent) = await task.value
        return (ranOn, executorWasCurrent, executor.worker.withLock { $0 }!, resumer)
    }

    @Test("a task resumed inside runKeeping goes on on the resuming thread, with its executor as current")
    func keptJobsRunOnTheResumingThread() async {
        let run = await Self.parkAndResume(keeping: true)
        #expect(pthread_equal(run.ranOn, run.resumer.thread) != 0)
        #expect(run.executorWasCurrent)
        #expect(!run.resumer.executorInside, "the kept job runs after the body, not inside it")
        #expect(!run.resumer.executorAfter, "the resuming thread is nobody's worker once the kept jobs are done")
    }

    @Test("outside runKeeping the task goes back to the executor's own thread")
    func otherwiseTheWorkerRunsIt() async {
        let run = await Self.parkAndResume(keeping: false)
        #expect(pthread_equal(run.ranOn, run.resumer.thread) == 0)
        #expect(pthread_equal(run.ranOn, run.worker) != 0)
        #expect(run.executorWasCurrent)
    }

    @Test("a thread that is nobody's worker has no current executor")
    func noExecutorElsewhere() async {
        let none = await withCheckedContinuation { done in
            Thread { done.resume(returning: CurrentThread.currentExecutor == nil) }.start()
        }
        #expect(none)
    }
}

import Foundation
import Foundations
import Synchronization
import Testing

@Suite("JobQueue: the one queue that threads of their own serve")
struct JobQueueTests {
    /// Starts `count` threads that serve `queue` until it stops, each job handed to `run`; returns a semaphore each
    /// thread signals once it has ended.
    private static func serve(_ queue: JobQueue<Int>, threads count: Int, _ run: @escaping @Sendable (Int) -> Void)
        -> DispatchSemaphore
    {
        let ended = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            Thread {
                while let job = queue.next() { run(job) }
                ended.signal()
            }.start()
        }
        return ended
    }

    @Test("one thread takes the jobs oldest first; once stopped it takes what is queued, then ends")
    func order() {
        let queue = JobQueue<Int>()
        for job in 0..<100 { queue.append(job) }
        queue.stop()
        let taken = Mutex<[Int]>([])
        let ended = Self.serve(queue, threads: 1) { job in taken.withLock { $0.append(job) } }
        #expect(ended.wait(timeout: .now() + 30) == .success)
        #expect(taken.withLock { $0 } == Array(0..<100))
        #expect(queue.next() == nil)
    }

    @Test("many threads and producers: every job runs exactly once, however the wake-ups interleave")
    func everyJobOnce() async {
        let queue = JobQueue<Int>()
        let seen = Mutex<[Int]>(Array(repeating: 0, count: 40_000))
        let ended = Self.serve(queue, threads: 4) { job in
            seen.withLock { $0[job] += 1 }
            if job % 1000 == 0 { usleep(100) }  // a slow job now and then: the others must not wait for it
        }
        await withTaskGroup(of: Void.self) { producers in
            for producer in 0..<4 {
                producers.addTask {
                    for index in stride(from: producer, to: 40_000, by: 4) {
                        queue.append(index)
                        if index % 997 == 0 { usleep(50) }  // let threads go idle and be woken again
                    }
                }
            }
        }
        queue.stop()
        for _ in 0..<4 { #expect(ended.wait(timeout: .now() + 60) == .success) }
        #expect(seen.withLock { $0.allSatisfy { $0 == 1 } })
    }

    @Test("an idle thread is woken by the next job: no wake-up is lost")
    func wakesIdleThreads() {
        let queue = JobQueue<Int>()
        let done = DispatchSemaphore(value: 0)
        let ended = Self.serve(queue, threads: 3) { _ in done.signal() }
        for round in 0..<200 {
            usleep(round % 10 == 0 ? 2000 : 0)  // now and then every thread is asleep when the job comes
            queue.append(round)
            #expect(done.wait(timeout: .now() + 30) == .success)
        }
        queue.stop()
        for _ in 0..<3 { #expect(ended.wait(timeout: .now() + 30) == .success) }
    }

    @Test("jobs queued before a cutoff are taken out, oldest first, the later ones stay")
    func removesLateJobs() {
        let queue = JobQueue<Int>()
        queue.append(1)
        queue.append(2)
        let cutoff = ContinuousClock.now
        usleep(1000)
        queue.append(3)
        let (late, stopped) = queue.removeJobs(queuedBefore: cutoff)
        #expect(late == [1, 2])
        #expect(!stopped)
        queue.stop()
        #expect(queue.next() == 3)
        #expect(queue.next() == nil)
        #expect(queue.removeJobs(queuedBefore: .now).stopped)
    }
}

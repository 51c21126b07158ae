import Foundation
import Foundations
import Synchronization
import Testing

@Suite("Foundations: deadlines on one timer thread")
struct DeadlineTimerTests {
    /// Waits (polling, up to a minute: a busy machine) until `condition` holds.
    private static func eventually(_ condition: () -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < end else { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    @Test("deadlines fire in time order, each once, never before its time")
    func firesInOrder() async throws {
        let timer = DeadlineTimer(name: "test-order")
        let fired = Mutex<[Int]>([])
        let start = ContinuousClock.now
        let times = Mutex<[Duration]>([])
        // Scheduled out of order; the earliest scheduled last (it wakes the sleeping thread).
        for (index, milliseconds) in [(2, 300), (1, 200), (0, 100)] {
            timer.schedule(after: .milliseconds(milliseconds)) {
                fired.withLock { $0.append(index) }
                times.withLock { $0.append(ContinuousClock.now - start) }
            }
        }
        #expect(try await Self.eventually { fired.withLock { $0.count } == 3 })
        #expect(fired.withLock { $0 } == [0, 1, 2])
        let elapsed = times.withLock { $0 }
        #expect(
            elapsed[0] >= .milliseconds(100) && elapsed[1] >= .milliseconds(200) && elapsed[2] >= .milliseconds(300))
        #expect(timer.scheduled == 0)
    }

    @Test("a cancelled deadline never fires, and leaves the heap; the others still do")
    func cancellation() async throws {
        let timer = DeadlineTimer(name: "test-cancel")
        let fired = Mutex<Set<Int>>([])
        var deadlines: [DeadlineTimer.Deadline] = []
        for index in 0..<200 {
            deadlines.append(
                timer.schedule(after: .milliseconds(50 + index % 7)) { fired.withLock { _ = $0.insert(index) } })
        }
        // Cancel every even one, from the middle of the heap as well as its top.
        for index in stride(from: 0, to: 200, by: 2) { timer.cancel(deadlines[index]) }
        timer.cancel(deadlines[0])  // twice: nothing happens
        #expect(timer.scheduled <= 100)
        #expect(try await Self.eventually { fired.withLock { $0.count } == 100 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(fired.withLock { $0 } == Set(stride(from: 1, to: 200, by: 2)))
        #expect(timer.scheduled == 0)
    }

    @Test("many deadlines scheduled and cancelled from many tasks at once: the heap ends empty, none fires")
    func concurrentScheduleAndCancel() async throws {
        let timer = DeadlineTimer(name: "test-concurrent")
        let fired = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<500 {
                        let deadline = timer.schedule(after: .seconds(30)) { fired.value.add(1, ordering: .relaxed) }
                        timer.cancel(deadline)
                    }
                }
            }
        }
        #expect(timer.scheduled == 0)
        // A deadline due now still fires after all that churn.
        let last = Atomic(false)
        timer.schedule(after: .zero) { last.store(true, ordering: .relaxed) }
        #expect(try await Self.eventually { last.load(ordering: .relaxed) })
        #expect(fired.value.load(ordering: .relaxed) == 0)
    }
}

private final class Counter: Sendable {
    let value = Atomic(0)
}

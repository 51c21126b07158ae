import Dispatch
import Foundation
import Synchronization

/// Actions to run at deadlines, from one thread of their own: the time limits of outside calls, nearly all of which
/// are cancelled long before they fire.
///
/// A deadline costs a lock and a heap insertion, its cancellation a lock and a heap removal; the thread is woken
/// only when a deadline becomes the earliest one, so under load (deadlines of the same length, started one after the
/// other) no deadline wakes it at all. A dispatch timer per call cost a timer source, an allocation and a
/// reprogrammed `timerfd` with a wake-up of Dispatch's manager thread each, and fired later even when cancelled.
///
/// ```swift
/// let deadline = DeadlineTimer.shared.schedule(after: .seconds(30)) { race.finish(with: .timeout) }
/// defer { DeadlineTimer.shared.cancel(deadline) }
/// ```
///
/// Actions run on the timer's thread, one after the other: they must be short (resume a continuation, cancel a
/// task) and must not wait.
public final class DeadlineTimer: Sendable {
    /// A scheduled action, for ``cancel(_:)``.
    public struct Deadline: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    /// The one timer of the process.
    public static let shared = DeadlineTimer(name: "DeadlineTimer")

    private struct Entry {
        let time: UInt64  // DispatchTime's uptime nanoseconds
        let id: UInt64
    }

    private struct State {
        /// A binary min-heap on `time`.
        var heap: [Entry] = []
        /// Where each scheduled id is in `heap`, and what it runs.
        var positions: [UInt64: Int] = [:]
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
        var threadStarted = false

        mutating func insert(_ entry: Entry) {
            heap.append(entry)
            positions[entry.id] = heap.count - 1
            siftUp(heap.count - 1)
        }

        /// Removes the entry at `index` and answers its id.
        @discardableResult
        mutating func remove(at index: Int) -> UInt64 {
            let id = heap[index].id
            positions[id] = nil
            let last = heap.removeLast()
            if index < heap.count {
                heap[index] = last
                positions[last.id] = index
                siftDown(index)
                siftUp(index)
            }
            return id
        }

        private mutating func swapAt(_ a: Int, _ b: Int) {
            heap.swapAt(a, b)
            positions[heap[a].id] = a
            positions[heap[b].id] = b
        }

        private mutating func siftUp(_ start: Int) {
            var child = start
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].time < heap[parent].time else { return }
                swapAt(child, parent)
                child = parent
            }
        }

        private mutating func siftDown(_ start: Int) {
            var parent = start
            while true {
                var smallest = parent
                let left = 2 * parent + 1
                if left < heap.count && heap[left].time < heap[smallest].time { smallest = left }
                if left + 1 < heap.count && heap[left + 1].time < heap[smallest].time { smallest = left + 1 }
                guard smallest != parent else { return }
                swapAt(parent, smallest)
                parent = smallest
            }
        }
    }

    private let name: String
    private let state = Mutex(State())
    private let wakeUp = DispatchSemaphore(value: 0)

    /// A timer whose thread (named `name`) starts with its first deadline and lives as long as the process.
    public init(name: String) { self.name = name }

    /// Runs `action` on the timer's thread once `duration` has passed, unless cancelled before.
    @discardableResult
    public func schedule(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> Deadline {
        let time = Self.uptime(after: duration)
        let (id, wake, start) = state.withLock { state -> (UInt64, Bool, Bool) in
            state.nextID += 1
            let id = state.nextID
            state.actions[id] = action
            state.insert(Entry(time: time, id: id))
            let start = !state.threadStarted
            state.threadStarted = true
            return (id, state.positions[id] == 0, start)
        }
        if start {
            Thread { [self] in run() }.start()
        } else if wake {
            wakeUp.signal()  // the thread sleeps until a later deadline
        }
        return Deadline(id: id)
    }

    /// Cancels `deadline`: its action will not run (if it is running already, this does not wait for it).
    public func cancel(_ deadline: Deadline) {
        state.withLock { state in
            guard let index = state.positions[deadline.id] else { return }
            state.remove(at: index)
            state.actions[deadline.id] = nil
        }
    }

    /// How many deadlines wait (for tests).
    public var scheduled: Int { state.withLock { $0.heap.count } }

    private func run() {
        CurrentThread.setName(name)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let (due, next) = state.withLock { state -> ([@Sendable () -> Void], UInt64?) in
                var due: [@Sendable () -> Void] = []
                while let first = state.heap.first, first.time <= now {
                    let id = state.remove(at: 0)
                    if let action = state.actions.removeValue(forKey: id) { due.append(action) }
                }
                return (due, state.heap.first?.time)
            }
            for action in due { action() }
            if let next {
                _ = wakeUp.wait(timeout: DispatchTime(uptimeNanoseconds: next))
            } else {
                wakeUp.wait()
            }
        }
    }

    /// The uptime in nanoseconds `duration` from now (far in the future for a duration beyond what 64 bits hold).
    private static func uptime(after duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let now = DispatchTime.now().uptimeNanoseconds
        guard seconds >= 0 else { return now }
        guard seconds < Int64(UInt64.max / 2 / 1_000_000_000) else { return UInt64.max / 2 }
        return now + UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
    }
}

import Foundation
import Synchronization

/// The threads on which `HTTPClient.send(_:) async` runs libcurl transfers: shared by every client, started one
/// at a time as requests find no idle thread, never more than `limit`, kept for the life of the process. Blocking
/// transfers therefore never occupy Swift's shared cooperative pool (as many threads as cores), and a burst of
/// requests costs at most `limit` threads; the rest wait in the queue.
final class TransferPool: @unchecked Sendable {  // every stored var is read and written under `condition`'s lock
    static let shared = TransferPool(limit: HTTPClient.transferThreadCount)

    let limit: Int
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0

    init(limit: Int) { self.limit = max(1, limit) }

    /// Queues `job`; a thread runs it as soon as one is free.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        // Idle threads that were signalled but have not woken yet still count as idle: start a thread only for
        // jobs beyond them.
        let startThread = jobs.count - head > idle && threads < limit
        if startThread { threads += 1 } else { condition.signal() }
        let index = threads
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in
                #if os(Linux)
                    // The system's name for the thread (debuggers, `top -H`, /proc/self/task/*/comm), which
                    // Foundation leaves unset; at most 15 bytes.
                    try? "HTTPClient.\(index)".write(
                        toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
                #endif
                work()
            }
            thread.name = "HTTPClient.transfer.\(index)"
            thread.start()
        }
    }

    private func work() {
        while true {
            condition.lock()
            while head == jobs.count {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            job()
        }
    }
}

/// One `send(_:) async` call. Exactly one party resumes the caller: the transfer's thread when the transfer ends,
/// or the cancelling thread when the transfer has not started (the queued job then does nothing). A transfer under
/// way is stopped through ``abortRequested``, and its thread resumes the caller once libcurl has returned (the
/// connection closed).
final class Transfer: Sendable {
    private enum Phase { case created, queued, running, finished }
    private struct State {
        var phase = Phase.created
        var cancelled = false
        var continuation: CheckedContinuation<HTTPClientResponse, any Error>?
    }

    private let state = Mutex(State())
    /// Set on cancellation; libcurl's progress callback aborts the transfer when it sees it.
    let abortRequested = AbortFlag()

    /// Keeps `continuation` for whoever ends the call; `false` (having thrown `CancellationError` to it) when the
    /// task was cancelled already.
    func wait(with continuation: CheckedContinuation<HTTPClientResponse, any Error>) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            if state.cancelled {
                state.phase = .finished
                return true
            }
            state.continuation = continuation
            state.phase = .queued
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// On the transfer thread, before starting: `false` when the call was cancelled while queued.
    func begin() -> Bool {
        state.withLock { state in
            guard state.phase == .queued else { return false }
            state.phase = .running
            return true
        }
    }

    /// On the transfer thread, once libcurl has returned.
    func finish(_ result: Result<HTTPClientResponse, any Error>) {
        let continuation = state.withLock { state in
            state.phase = .finished
            return state.continuation.take()
        }
        continuation?.resume(with: result)
    }

    /// From the task's cancellation handler, on any thread.
    func cancel() {
        abortRequested.set()
        let continuation = state.withLock { state -> CheckedContinuation<HTTPClientResponse, any Error>? in
            state.cancelled = true
            guard state.phase == .queued else { return nil }
            state.phase = .finished
            return state.continuation.take()
        }
        continuation?.resume(throwing: CancellationError())
    }
}

import SQLCore
import Synchronization

/// A write waiting for a group commit: `run` is called on the writer's own thread only; the hand-over of its outcome
/// to the waiting caller works in either order (committed first, or caller waiting first).
final class GroupedWrite: @unchecked Sendable {  // `run` is only called on the writer's thread; `state` is locked
    let run: (Connection) -> SQLError?
    /// Whether the write must be on disk before its caller is answered (``SQLCore/WriteDurability/synced``).
    let synced: Bool
    private let state = Mutex<State>(.pending)

    private enum State {
        case pending
        case waiting(CheckedContinuation<SQLError?, Never>)
        case finished(SQLError?)
    }

    init(synced: Bool, _ run: @escaping (Connection) -> SQLError?) {
        self.synced = synced
        self.run = run
    }

    /// Hands over the caller's continuation; resumes it at once when the write was already committed.
    func wait(_ continuation: CheckedContinuation<SQLError?, Never>) {
        let finished = state.withLock { state -> SQLError?? in
            if case .finished(let failure) = state { return .some(failure) }
            state = .waiting(continuation)
            return .none
        }
        if let failure = finished { continuation.resume(returning: failure) }
    }

    /// Records the outcome of the commit and wakes the caller if it is already waiting.
    func finish(_ failure: SQLError?) {
        let waiting = state.withLock { state -> CheckedContinuation<SQLError?, Never>? in
            defer { state = .finished(failure) }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiting?.resume(returning: failure)
    }
}

/// What a grouped write returned; used only on the writer's own thread, then read by its caller after the commit.
final class GroupedResult<T>: @unchecked Sendable {
    var value: T?
}

import Foundation
import Synchronization

/// The time a session runs on: what "now" is (token signing times) and how it waits (the 30-second merchant
/// timeout). Inject `VirtualClock` so tests and simulated late merchants never wait for real.
public protocol SessionClock: Sendable {
    /// The current time.
    var now: Date { get }
    /// Waits `duration`.
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    func sleep(for duration: Duration) async throws
    /// Waits until `deadline` (at once when it has passed).
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    func sleep(until deadline: Date) async throws
}

extension SessionClock {
    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSince(now)
        if seconds > 0 { try await sleep(for: .milliseconds(Int64((min(seconds, maximumWait) * 1000).rounded(.up)))) }
    }
}

/// The longest wait a clock converts a deadline into (about 31 years): far enough to mean "never", near enough
/// that the conversion to whole milliseconds or nanoseconds cannot overflow `Int64`.
let maximumWait: TimeInterval = 1e9

/// Wall-clock time and real sleeping.
public struct SystemSessionClock: SessionClock {
    public init() {}
    public var now: Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

/// A clock whose time moves only when someone calls `advance(by:)`: a sleeper wakes when the clock has been
/// advanced past its deadline, in deadline order. A simulated slow merchant advances the clock while it
/// "works", so a 45-second delay takes no real time and the sheet's 30-second timeout fires deterministically.
public final class VirtualClock: SessionClock {
    private struct Sleeper {
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextIdentifier: UInt64 = 0
    }

    private let start: Date
    private let state = Mutex(State())

    /// A clock reading `start` until advanced.
    public init(start: Date = Date()) { self.start = start }

    public var now: Date {
        let elapsed = state.withLock { $0.elapsed }
        let (seconds, attoseconds) = elapsed.components
        return start.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// How far the clock has been advanced since it was made.
    public var elapsed: Duration { state.withLock { $0.elapsed } }

    /// How many tasks are sleeping on the clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let deadline = state.withLock { $0.elapsed } + duration
        try await sleep(untilElapsed: deadline)
    }

    public func sleep(until deadline: Date) async throws {
        let interval = deadline.timeIntervalSince(start)
        let seconds = interval.isNaN ? 0 : max(min(interval, maximumWait), -maximumWait)
        let whole = seconds.rounded(.down)
        let elapsed = Duration.seconds(Int64(whole)) + .nanoseconds(Int64(((seconds - whole) * 1e9).rounded()))
        try await sleep(untilElapsed: elapsed)
    }

    private func sleep(untilElapsed deadline: Duration) async throws {
        let identifier = state.withLock { state -> UInt64 in
            state.nextIdentifier += 1
            return state.nextIdentifier
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.elapsed { return .success(()) }
                    state.sleepers[identifier] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: identifier) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward, waking every sleeper whose deadline has come, earliest first. Each woken sleeper gets
    /// a chance to run before later ones are woken.
    public func advance(by duration: Duration) async {
        let target = state.withLock { state -> Duration in
            state.elapsed + max(duration, .zero)
        }
        while true {
            let woken: Sleeper? = state.withLock { state in
                guard
                    let (key, sleeper) = state.sleepers.filter({ $0.value.deadline <= target })
                        .min(by: { $0.value.deadline < $1.value.deadline })
                else {
                    state.elapsed = max(state.elapsed, target)
                    return nil
                }
                state.sleepers.removeValue(forKey: key)
                state.elapsed = max(state.elapsed, sleeper.deadline)
                return sleeper
            }
            guard let woken else { return }
            woken.continuation.resume()
            for _ in 0..<8 { await Task.yield() }
        }
    }
}

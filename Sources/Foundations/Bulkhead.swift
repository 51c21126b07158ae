import Synchronization

/// A bounded share of the server for one outside party (a payment processor, Apple's gateway, APNs): at most
/// ``Limits/maximumInFlight`` calls at once, and at most ``Limits/maximumQueued`` callers waiting, each for at
/// most ``Limits/maximumWait``. A caller past that is refused at once, so a slow or hostile party holds no more
/// than its share and the other parties never wait behind it.
///
/// ``acquire()`` answers whether the caller may go ahead; a caller that got `true` calls ``release()`` exactly
/// once when its call is over (``withPermit(_:)`` does both). A waiting caller whose task is cancelled is refused.
public final class Bulkhead: Sendable {
    /// The share.
    public struct Limits: Sendable, Equatable {
        /// Calls in flight at once.
        public var maximumInFlight: Int
        /// Callers waiting for a call to finish; past it, refused at once.
        public var maximumQueued: Int
        /// The longest a caller waits in the queue before it is refused.
        public var maximumWait: Duration

        public init(maximumInFlight: Int, maximumQueued: Int, maximumWait: Duration) {
            self.maximumInFlight = max(1, maximumInFlight)
            self.maximumQueued = max(0, maximumQueued)
            self.maximumWait = maximumWait
        }
    }

    /// What a bulkhead has done, for metrics.
    public struct Counts: Sendable, Equatable {
        public var inFlight: Int
        public var queued: Int
        /// Callers refused since the start (queue full, waited too long, or cancelled while waiting).
        public var refused: Int
    }

    /// The party's name, for logs and metrics (`processor`, `merchantValidation`, ...).
    public let name: String
    public let limits: Limits
    private let state = Mutex(State())

    private struct State {
        var inFlight = 0
        var refused = 0
        var nextWaiter: UInt64 = 0
        /// Waiters in arrival order.
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    public init(name: String, limits: Limits) {
        self.name = name
        self.limits = limits
    }

    /// The counts now.
    public var counts: Counts {
        state.withLock { Counts(inFlight: $0.inFlight, queued: $0.waiters.count, refused: $0.refused) }
    }

    /// Takes a place for one call: `true` at once when one is free, `false` at once when the queue is full,
    /// otherwise `true` when a call finishes within ``Limits/maximumWait`` and `false` when none does.
    public func acquire() async -> Bool {
        enum Admission: Equatable {
            case admitted, refused
            case queued(UInt64)
        }
        let admission = state.withLock { state -> Admission in
            if state.inFlight < limits.maximumInFlight {
                state.inFlight += 1
                return .admitted
            }
            guard state.waiters.count < limits.maximumQueued else {
                state.refused += 1
                return .refused
            }
            state.nextWaiter += 1
            return .queued(state.nextWaiter)
        }
        guard case .queued(let id) = admission else { return admission == .admitted }
        let wait = limits.maximumWait
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled {
                        state.refused += 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return false
                }
                if cancelled {
                    continuation.resume(returning: false)
                    return
                }
                Task { [weak self] in
                    try? await Task.sleep(for: wait)
                    self?.refuse(id)
                }
            }
        } onCancel: {
            refuse(id)
        }
    }

    /// Gives back a place taken by a successful ``acquire()``: the longest waiter, if any, takes it.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiters.isEmpty else {
                state.inFlight = max(0, state.inFlight - 1)
                return nil
            }
            return state.waiters.removeFirst().continuation  // the place passes on: inFlight is unchanged
        }
        next?.resume(returning: true)
    }

    /// Runs `body` in a place, or returns `nil` at once when the bulkhead refuses.
    public func withPermit<T>(_ body: () async throws -> T) async rethrows -> T? {
        guard await acquire() else { return nil }
        defer { release() }
        return try await body()
    }

    /// Refuses the waiter `id` if it is still waiting (its time is up, or its task was cancelled).
    private func refuse(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            state.refused += 1
            return state.waiters.remove(at: index).continuation
        }
        waiter?.resume(returning: false)
    }
}

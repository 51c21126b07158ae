import Foundation
import Synchronization

/// A fixed number of connections to one database, each owned by a thread of its own: libpq's blocking calls run
/// there, never on Swift's shared pool.
///
/// A connection is opened when its thread first needs it, and opened again when the previous one broke (the server
/// restarted, the network dropped): the pool serves again by itself once the database is back. Work queued while
/// every connection is busy waits in order, at most ``maximumWait``: then it fails with `connectionFailure` without
/// having reached the database (every connection stuck on a server that stopped answering must not make callers
/// wait for ever; each connection itself gives up after its ``PostgresTimeouts``).
public final class ConnectionPool: Sendable {
    /// The libpq connection string or URI.
    public let uri: String
    /// How many connections (and threads).
    public let size: Int
    /// How long work may wait for a connection.
    public let maximumWait: Duration
    private let queue: WorkQueue

    /// Starts `size` threads; connections open on first use.
    /// - Parameters:
    ///   - timeouts: each connection's limits (connecting, waiting for an answer, TCP keepalives).
    ///   - maximumWait: how long work waits in the queue for a free connection before it fails.
    public init(uri: String, size: Int, timeouts: PostgresTimeouts = .standard, maximumWait: Duration = .seconds(10)) {
        self.uri = uri
        self.size = max(1, size)
        self.maximumWait = maximumWait
        let queue = WorkQueue()
        self.queue = queue
        for index in 0..<self.size {
            let thread = Thread { Self.serve(queue, uri: uri, timeouts: timeouts) }
            thread.name = "Postgres-\(index)"
            thread.start()
        }
        let sweeper = Thread { queue.expireLateJobs(after: maximumWait) }
        sweeper.name = "Postgres-wait"
        sweeper.start()
    }

    deinit { queue.stop() }

    /// Runs `body` with a connection on one of the pool's threads.
    /// - Throws: ``PostgresError`` `connectionFailure` when no connection can be opened or none was free within
    ///   ``maximumWait`` (`body` did not run then), or what `body` throws.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            queue.append { connection in
                continuation.resume(
                    with: Result { () throws -> T in
                        switch connection {
                        case .success(let connection): return try body(connection)
                        case .failure(let error): throw error
                        }
                    })
            }
        }
    }

    /// Lets the threads finish the work already queued, close their connections and end.
    public func close() { queue.stop() }

    private static func serve(_ queue: WorkQueue, uri: String, timeouts: PostgresTimeouts) {
        var connection: PostgresConnection?
        while let job = queue.next() {
            if connection.map({ !$0.isOpen }) ?? true {
                connection = nil
                do {
                    connection = try PostgresConnection(uri, timeouts: timeouts)
                } catch {
                    job(.failure(error))
                    continue
                }
            }
            if let connection { job(.success(connection)) }
        }
    }
}

/// The work waiting for a pool thread, oldest first.
private final class WorkQueue: Sendable {
    typealias Job = @Sendable (Result<PostgresConnection, PostgresError>) -> Void

    private struct Entry {
        var job: Job
        var queuedAt: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Entry] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    func append(_ job: @escaping Job) {
        condition.lock()
        state.withLock { $0.entries.append(Entry(job: job, queuedAt: .now)) }
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.broadcast()
        condition.unlock()
    }

    /// The next job, or `nil` once stopped and empty. Blocks the calling (pool) thread while there is none.
    func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (job, stopped) = state.withLock { state -> (Job?, Bool) in
                guard state.head < state.entries.count else {
                    state.entries.removeAll(keepingCapacity: true)
                    state.head = 0
                    return (nil, state.stopped)
                }
                defer { state.head += 1 }
                return (state.entries[state.head].job, false)
            }
            if let job { return job }
            if stopped { return nil }
            condition.wait()
        }
    }

    /// Until stopped, fails (without a connection) the jobs that waited longer than `limit`, checking a few times
    /// a second. The queue is in arrival order, so the late ones are at its head.
    func expireLateJobs(after limit: Duration) {
        let period = min(limit / 4, .milliseconds(250))
        while true {
            let (late, stopped) = state.withLock { state -> ([Job], Bool) in
                let cutoff = ContinuousClock.now - limit
                var late: [Job] = []
                while state.head < state.entries.count, state.entries[state.head].queuedAt < cutoff {
                    late.append(state.entries[state.head].job)
                    state.head += 1
                }
                return (late, state.stopped)
            }
            let error = PostgresError(
                .connectionFailure, "no database connection was free within \(limit) (the server does not answer)")
            for job in late { job(.failure(error)) }
            if stopped { return }
            Thread.sleep(
                forTimeInterval: Double(period.components.seconds) + Double(period.components.attoseconds) / 1e18)
        }
    }
}

import Foundation
import Synchronization

/// A fixed number of connections to one database, each owned by a thread of its own: libpq's blocking calls run
/// there, never on Swift's shared pool.
///
/// A connection is opened when its thread first needs it, and opened again when the previous one broke (the server
/// restarted, the network dropped): the pool serves again by itself once the database is back. Work queued while
/// every connection is busy waits in order.
public final class ConnectionPool: Sendable {
    /// The libpq connection string or URI.
    public let uri: String
    /// How many connections (and threads).
    public let size: Int
    private let queue: WorkQueue

    /// Starts `size` threads; connections open on first use.
    public init(uri: String, size: Int) {
        self.uri = uri
        self.size = max(1, size)
        let queue = WorkQueue()
        self.queue = queue
        for index in 0..<self.size {
            let thread = Thread { Self.serve(queue, uri: uri) }
            thread.name = "Postgres-\(index)"
            thread.start()
        }
    }

    deinit { queue.stop() }

    /// Runs `body` with a connection on one of the pool's threads.
    /// - Throws: ``PostgresError`` `connectionFailure` when no connection can be opened, or what `body` throws.
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

    private static func serve(_ queue: WorkQueue, uri: String) {
        var connection: PostgresConnection?
        while let job = queue.next() {
            if connection.map({ !$0.isOpen }) ?? true {
                connection = nil
                do {
                    connection = try PostgresConnection(uri)
                } catch {
                    job(.failure(error))
                    continue
                }
            }
            if let connection { job(.success(connection)) }
        }
    }
}

/// The work waiting for a pool thread.
private final class WorkQueue: Sendable {
    typealias Job = @Sendable (Result<PostgresConnection, PostgresError>) -> Void

    private struct State {
        var jobs: [Job] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    func append(_ job: @escaping Job) {
        condition.lock()
        state.withLock { $0.jobs.append(job) }
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
                guard state.head < state.jobs.count else {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                    return (nil, state.stopped)
                }
                defer { state.head += 1 }
                return (state.jobs[state.head], false)
            }
            if let job { return job }
            if stopped { return nil }
            condition.wait()
        }
    }
}

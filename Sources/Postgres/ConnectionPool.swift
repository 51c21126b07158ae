import Foundation
import Foundations
import SQLCore

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
    /// A job gets a connection, or the reason there is none.
    private typealias Job = @Sendable (Result<PostgresConnection, PostgresError>) -> Void
    private let queue: JobQueue<Job>

    /// Starts `size` threads; connections open on first use.
    /// - Parameters:
    ///   - timeouts: each connection's limits (connecting, waiting for an answer, TCP keepalives).
    ///   - maximumWait: how long work waits in the queue for a free connection before it fails.
    public init(uri: String, size: Int, timeouts: PostgresTimeouts = .standard, maximumWait: Duration = .seconds(10)) {
        self.uri = uri
        self.size = max(1, size)
        self.maximumWait = maximumWait
        let queue = JobQueue<Job>()
        self.queue = queue
        for index in 0..<self.size {
            let thread = Thread { Self.serve(queue, uri: uri, timeouts: timeouts) }
            thread.name = "Postgres-\(index)"
            thread.start()
        }
        let sweeper = Thread { Self.expireLateJobs(queue, after: maximumWait) }
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

    /// A connection's thread: each job runs inside ``CurrentThread/runKeeping(_:)``, so the task it resumes (the
    /// caller, once its statement is done) goes on here until it next waits when its executor cooperates, as an HTTP
    /// server's responders do: no hand-off to another thread first (SQLite's writer does the same).
    private static func serve(_ queue: JobQueue<Job>, uri: String, timeouts: PostgresTimeouts) {
        var connection: PostgresConnection?
        while let job = queue.next() {
            if connection.map({ !$0.isOpen }) ?? true {
                connection = nil
                do {
                    connection = try PostgresConnection(uri, timeouts: timeouts)
                } catch {
                    CurrentThread.runKeeping { job(.failure(error)) }
                    continue
                }
            }
            if let connection { CurrentThread.runKeeping { job(.success(connection)) } }
        }
    }

    /// Until stopped, fails (without a connection) the jobs that waited longer than `limit`, checking a few times
    /// a second.
    private static func expireLateJobs(_ queue: JobQueue<Job>, after limit: Duration) {
        let period = min(limit / 4, .milliseconds(250))
        let error = PostgresError(
            .connectionFailure, "no database connection was free within \(limit) (the server does not answer)")
        while true {
            let (late, stopped) = queue.removeJobs(queuedBefore: ContinuousClock.now - limit)
            for job in late { job(.failure(error)) }
            if stopped { return }
            Thread.sleep(
                forTimeInterval: Double(period.components.seconds) + Double(period.components.attoseconds) / 1e18)
        }
    }
}

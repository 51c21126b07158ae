import Foundation
import Synchronization

/// Connections that read one database file from any thread, beside the connection that writes it: a read takes an
/// idle connection (opening one when none is idle), runs on the calling thread and gives the connection back. In
/// WAL mode a reader sees every transaction committed before it began and neither waits for the writer nor holds it
/// up, so reads need no hand-off to the writer's thread. Each connection is `query_only`: it cannot write.
///
/// ```swift
/// let readers = ReaderPool(path: "orders.sqlite")
/// let count = try readers.read { try $0.query("SELECT count(*) AS n FROM orders").first?["n"] }
/// ```
public final class ReaderPool: Sendable {
    /// A connection while it is idle in the pool; only one thread uses it at a time (the pool hands it out once).
    private struct Idle: @unchecked Sendable {
        let connection: Connection
    }

    /// The database file.
    public let path: String
    /// Idle connections beyond this many are closed when given back.
    public let maximumIdle: Int
    private let idle = Mutex<[Idle]>([])

    /// A pool for the WAL database at `path` (which the writer has created and migrated); opens nothing yet.
    public init(path: String, maximumIdle: Int = 4) {
        self.path = path
        self.maximumIdle = maximumIdle
    }

    /// Opens idle connections up to ``maximumIdle`` now, so that the pool's descriptors are there from the start (a
    /// burst of reads beyond them opens more for the moment and closes them after).
    public func openAll() throws(SQLiteError) {
        while idle.withLock({ $0.count }) < maximumIdle {
            let connection = try open()
            idle.withLock { $0.append(Idle(connection: connection)) }
        }
    }

    /// Runs `body` with a reading connection on the calling thread.
    /// - Throws: ``SQLiteError`` from opening a connection or from `body`.
    public func read<T>(_ body: (Connection) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let connection: Connection
        if let reused = idle.withLock({ $0.popLast() }) {
            connection = reused.connection
        } else {
            connection = try open()
        }
        defer {
            idle.withLock { connections in
                if connections.count < maximumIdle { connections.append(Idle(connection: connection)) }
            }
        }
        return try body(connection)
    }

    private func open() throws(SQLiteError) -> Connection {
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA query_only = ON")
        return connection
    }
}

import SQLCore

/// A PostgreSQL database as an ``SQLDatabase``: a ``ConnectionPool`` (each connection on a thread of its own), and
/// transactions run again when running them again is safe.
///
/// A write is one transaction at READ COMMITTED. A lost race (serialization failure, deadlock) is run again, up to
/// five attempts; so is a connection that failed before `BEGIN` went through (nothing of it reached the database).
/// A connection lost inside a write is not retried: the server rolled the transaction back and the caller gets
/// `connectionFailure`. A read runs its statements without `BEGIN` and `COMMIT`: at READ COMMITTED each statement
/// sees what was committed when it began, inside a transaction or not, so the two round trips bought nothing. It is
/// retried on a new connection when its connection is lost midway.
public final class PostgresDatabase: SQLDatabase {
    /// The connections, each owned by a thread of the pool.
    public let pool: ConnectionPool
    public var dialect: SQLDialect { .postgres }

    /// A pool of `poolSize` connections to `uri` (opened when first needed).
    public init(uri: String, poolSize: Int) {
        pool = ConnectionPool(uri: uri, size: poolSize)
    }

    deinit { pool.close() }

    /// Lets the pool finish the work queued and close its connections.
    public func close() { pool.close() }

    public func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws(SQLError) -> T)
        async throws(SQLError) -> T
    {
        try await attempts(.read, body)
    }

    /// A ``WriteDurability/written`` write commits with `synchronous_commit` off for its transaction alone
    /// (`SET LOCAL`, sent with its `BEGIN`): PostgreSQL answers before its WAL is flushed, and flushes it within a
    /// few hundred milliseconds or with the next synchronous commit.
    public func write<T: Sendable>(
        _ durability: WriteDurability, _ body: @escaping @Sendable (PostgresConnection) throws(SQLError) -> T
    ) async throws(SQLError) -> T {
        try await attempts(.write(synchronousCommit: durability != .written), body)
    }

    /// What runs the body: a read's statements on their own, or a write's in a transaction.
    private enum Work {
        case read
        case write(synchronousCommit: Bool)
    }

    /// What one attempt at a transaction gave: its value, or its error and whether `BEGIN` had gone through.
    private enum Attempt<T: Sendable>: Sendable {
        case value(T)
        case failure(SQLError, started: Bool)
    }

    /// Runs `body` on a pool connection (a write in a transaction), again after a lost race or a connection lost
    /// before the transaction began; a read also after a connection lost in the middle.
    private func attempts<T: Sendable>(
        _ work: Work, _ body: @escaping @Sendable (PostgresConnection) throws(SQLError) -> T
    ) async throws(SQLError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let result: Attempt<T>
            do {
                result = try await pool.withConnection { connection -> Attempt<T> in
                    var started = false
                    do {
                        switch work {
                        case .read:
                            return .value(try body(connection))
                        case .write(let synchronousCommit):
                            return .value(
                                try connection.transaction(synchronousCommit: synchronousCommit) { connection in
                                    started = true
                                    return try body(connection)
                                })
                        }
                    } catch {
                        return .failure(SQLError(any: error), started: started)
                    }
                }
            } catch {
                result = .failure(SQLError(any: error), started: false)  // no connection could be opened
            }
            switch result {
            case .value(let value): return value
            case .failure(let error, let started):
                guard attempt < 5 else { throw error }
                let lostRace = error.code == .serializationFailure
                let retryingLostConnections = if case .read = work { true } else { false }
                let lostConnection =
                    error.code == .connectionFailure && (!started || retryingLostConnections) && attempt < 3
                guard lostRace || lostConnection else { throw error }
                try? await Task.sleep(for: .milliseconds(lostConnection ? 50 * attempt : Int.random(in: 1...10)))
            }
        }
    }
}

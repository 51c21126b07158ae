import Foundation
import SQLCore

/// An SQLite file as an ``SQLDatabase``: one connection writes, on a thread of its own, in group commits; reads run
/// on the caller's thread through read-only connections (``ReaderPool``), which in WAL mode see every committed
/// transaction and never wait for the writer. An in-memory database (`:memory:`) has its one connection only, and
/// reads on the writer's thread too.
///
/// Writes are serialised by the one writer (and `BEGIN IMMEDIATE` against other processes), so the dialect's row
/// locks are empty: a write transaction already holds the whole database.
public actor SQLiteDatabase: SQLDatabase {
    /// The thread the writing connection lives on.
    nonisolated let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let connection: Connection
    /// Readers beside the writer (a file only: an in-memory database lives in its one connection).
    private nonisolated let readers: ReaderPool?
    /// Writes waiting for the next group commit (see ``write(_:)``).
    private var pendingWrites: [GroupedWrite] = []
    private var flushScheduled = false
    private var committedGroups = 0
    private var committedWrites = 0
    /// Whether commits sync the WAL now (`synchronous = FULL`, SQLite's default).
    private var syncsCommits = true
    private var unsyncedSwitches = 0
    /// The database file (or `:memory:`).
    public nonisolated let path: String
    public nonisolated var dialect: SQLDialect { .sqlite }

    /// Opens (creating if needed) the database, migrates it, then opens the readers.
    /// - Parameters:
    ///   - path: the database file, or `:memory:` for a private in-memory database.
    ///   - migrator: the schema, applied in one `BEGIN IMMEDIATE` transaction before anything else runs.
    /// - Throws: ``SQLError`` when the file cannot be opened or migrated (`underlying` holds the ``SQLiteError``).
    public init(path: String, migrator: Migrator? = nil) throws(SQLError) {
        do {
            let connection = try Connection(path: path)
            // Said, not assumed from how SQLite was built: every commit syncs the WAL unless a group asks otherwise.
            try connection.execute("PRAGMA synchronous = FULL")
            if let migrator {
                try connection.writeTransaction { connection throws(SQLError) in _ = try migrator.migrate(connection) }
            }
            self.connection = connection
            if path != ":memory:" && !path.isEmpty {
                let readers = ReaderPool(path: path)
                try readers.openAll()
                self.readers = readers
            } else {
                self.readers = nil
            }
        } catch let error as SQLiteError {
            throw SQLError(sqlite: error)
        } catch let error as SQLError {
            throw error
        } catch {
            throw SQLError(.other, "\(error)")
        }
        self.path = path
        self.executor = ThreadExecutor(name: "SQLiteDatabase")
    }

    deinit { executor.stop() }

    /// A read on the calling thread through the readers, or on the writer's thread for an in-memory database.
    public nonisolated func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws(SQLError) -> T)
        async throws(SQLError) -> T
    {
        guard let readers else { return try await readOnWriter(body) }
        let result: Result<T, SQLError>
        do {
            result = try readers.read { connection throws(SQLiteError) in
                do throws(SQLError) {
                    return .success(try body(connection))
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            throw SQLError(sqlite: error)
        }
        return try result.get()
    }

    private func readOnWriter<T>(_ body: (Connection) throws(SQLError) -> T) throws(SQLError) -> T {
        try body(connection)
    }

    /// Runs `body` in the next group commit and returns what it returned once that commit is on disk.
    ///
    /// Writes that arrive while the writer's thread is busy are committed together: one `BEGIN IMMEDIATE`, each
    /// write in a savepoint of its own (a write that fails rolls back alone and fails alone), one `COMMIT`, one
    /// sync of the WAL (`synchronous = FULL`), and only then is every caller answered. Each acknowledged write is
    /// therefore durable, while a busy server pays one sync for many writes instead of one for each.
    ///
    /// A group of ``WriteDurability/written`` writes alone commits without the sync (`synchronous = NORMAL` for
    /// that commit): its frames are in the operating system's cache, safe from the process crashing, and the next
    /// synced commit syncs them with its own. One synced write in a group syncs the whole group.
    public func write<T: Sendable>(
        _ durability: WriteDurability, _ body: @escaping @Sendable (Connection) throws(SQLError) -> T
    ) async throws(SQLError) -> T {
        let result = GroupedResult<T>()
        let write = GroupedWrite(synced: durability == .synced) { connection in
            do throws(SQLError) {
                result.value = try body(connection)
                return nil
            } catch {
                return error
            }
        }
        pendingWrites.append(write)
        if !flushScheduled {
            flushScheduled = true
            // Queued behind the calls already waiting for the writer's thread, so their writes join this commit.
            Task { self.commitPendingWrites() }
        }
        // The continuation may be handed over after the commit already happened: `withCheckedContinuation` can
        // run its body off the writer's thread (under a task executor preference), so `GroupedWrite` takes either
        // order.
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<SQLError?, Never>) in
            write.wait(continuation)
        }
        if let failure { throw failure }
        guard let value = result.value else { throw SQLError(.other, "a committed write returned nothing") }
        return value
    }

    /// Commits every queued write in one transaction and answers each.
    private func commitPendingWrites() {
        let batch = pendingWrites
        pendingWrites.removeAll()
        flushScheduled = false
        var failures = [SQLError?](repeating: nil, count: batch.count)
        do {
            try synchronize(batch.contains { $0.synced })
            try connection.transaction(.immediate) { connection throws(SQLiteError) in
                for (index, write) in batch.enumerated() {
                    do {
                        try connection.transaction(.immediate) { connection throws(SQLError) in
                            if let failure = write.run(connection) { throw failure }
                        }
                    } catch {
                        failures[index] = SQLError(any: error)
                    }
                }
            }
        } catch {
            failures = Array(repeating: SQLError(any: error), count: batch.count)
        }
        committedGroups += 1
        committedWrites += batch.count
        for (index, write) in batch.enumerated() { write.finish(failures[index]) }
    }

    /// Sets whether the next commit syncs the WAL (`synchronous` FULL or NORMAL; in WAL mode NORMAL syncs only
    /// at checkpoints), when it is not set so already.
    private func synchronize(_ synced: Bool) throws(SQLiteError) {
        guard synced != syncsCommits else { return }
        try connection.execute(synced ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        syncsCommits = synced
        if !synced { unsyncedSwitches += 1 }
    }

    /// How many group commits and writes so far (the group size is their ratio).
    public var groupCommitCounts: (commits: Int, writes: Int) { (committedGroups, committedWrites) }

    /// How many times a group of unsynced writes alone switched the commits to unsynced (for tests).
    public var unsyncedGroupSwitches: Int { unsyncedSwitches }
}

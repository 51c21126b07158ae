import Foundation
import Foundations
import MerchantCore
import Postgres
import SQLCore
import SQLite

/// The embedded order store: one SQLite file in WAL mode (``SQLiteDatabase``: one connection writes, on its own
/// thread, in group commits; reads run on the caller's thread through read-only connections).
///
/// Several processes (or stores) may open the same file: writes use `BEGIN IMMEDIATE` and a busy timeout, and the
/// UNIQUE constraints settle a double submit between them.
public typealias SQLiteOrderStore = SQLStore<SQLiteDatabase>

/// The order store for several server instances: one PostgreSQL database shared by all of them, reached through a
/// pool of libpq connections, each on a thread of its own (``PostgresDatabase``: lost races and connections lost
/// before `BEGIN` are retried).
public typealias PostgresOrderStore = SQLStore<PostgresDatabase>

extension SQLStore where Database == SQLiteDatabase {
    /// Opens (creating and migrating if needed) the store.
    /// - Parameters:
    ///   - path: the database file, or `:memory:` for a private in-memory store.
    ///   - clock: the time stamped on rows and events.
    /// - Throws: ``OrderStoreError`` `storage` when the file cannot be opened or migrated.
    public convenience init(path: String, clock: @escaping @Sendable () -> Date = { Date() }) throws(OrderStoreError) {
        let database: SQLiteDatabase
        do {
            database = try SQLiteDatabase(path: path, migrator: StoreSchema.migrator)
        } catch {
            throw OrderStoreError(.storage, "cannot open the order store at \(path): \(error)")
        }
        self.init(database: database, clock: clock)
    }

    /// The database file (or `:memory:`).
    public var path: String { database.path }

    /// How many group commits and writes so far (the group size is their ratio).
    public var groupCommitCounts: (commits: Int, writes: Int) {
        get async { await database.groupCommitCounts }
    }
}

extension SQLStore where Database == PostgresDatabase {
    /// Connects, and creates or upgrades the schema (several instances may start at once: the migrations run under
    /// an advisory lock, in one transaction).
    /// - Parameters:
    ///   - uri: a libpq connection URI (`postgresql://user@host:5432/db`, `postgresql:///db?host=/socket/dir`).
    ///   - poolSize: how many connections (and threads) this store keeps.
    ///   - clock: the time stamped on rows and events.
    /// - Throws: ``OrderStoreError`` `storage` when the database cannot be reached or migrated.
    public convenience init(uri: String, poolSize: Int = 4, clock: @escaping @Sendable () -> Date = { Date() })
        async throws(OrderStoreError)
    {
        let database = PostgresDatabase(uri: uri, poolSize: poolSize)
        do {
            try await database.write { connection throws(SQLError) in
                _ = try StoreSchema.migrator.migrate(connection)
            }
        } catch {
            database.close()
            throw OrderStoreError(.storage, "cannot open the PostgreSQL order store: \(error)")
        }
        self.init(database: database, clock: clock)
    }

    /// The connections, each owned by a thread of the pool.
    public var pool: ConnectionPool { database.pool }
}

import Foundation

/// A named schema change. A list of migrations is applied in order; each is recorded in `schema_migrations`
/// (position, name, time) in the same transaction as its SQL, so it runs exactly once.
public struct Migration: Sendable, Equatable {
    /// A unique, stable name (`001-create-orders`); renaming a recorded migration is an error.
    public let name: String
    /// One or more SQL statements.
    public let sql: String

    public init(_ name: String, sql: String) {
        self.name = name
        self.sql = sql
    }
}

extension Connection {
    /// Applies the migrations not yet recorded, in order, each in its own `BEGIN IMMEDIATE` transaction.
    ///
    /// Safe when several connections migrate the same file at once: each step re-reads the record inside its
    /// transaction.
    /// - Parameter migrations: the complete ordered list, oldest first.
    /// - Returns: the names applied by this call.
    /// - Throws: ``SQLiteError`` `migration` when the recorded names differ from the list's prefix (or the
    ///   database has more migrations than the code knows); any SQL error rolls its migration back.
    @discardableResult
    public func migrate(_ migrations: [Migration]) throws(SQLiteError) -> [String] {
        try execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                position INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                applied_at TEXT NOT NULL
            )
            """)
        let recorded = try appliedMigrations()
        guard recorded.count <= migrations.count else {
            throw SQLiteError(
                .migration,
                "the database has \(recorded.count) migrations, this program knows \(migrations.count): it is newer than the program"
            )
        }
        for (position, name) in recorded.enumerated() where migrations[position].name != name {
            throw SQLiteError(
                .migration,
                "migration \(position + 1) is recorded as \"\(name)\" but the program calls it \"\(migrations[position].name)\""
            )
        }
        var applied: [String] = []
        for (offset, migration) in migrations.enumerated() where offset >= recorded.count {
            let position = Int64(offset + 1)
            do {
                let didApply = try transaction(.immediate) { connection throws(SQLiteError) -> Bool in
                    let existing = try connection.query(
                        "SELECT name FROM schema_migrations WHERE position = ?", .integer(position))
                    if let row = existing.first {
                        let name = try row.string("name")
                        guard name == migration.name else {
                            throw SQLiteError(
                                .migration, "migration \(position) was recorded as \"\(name)\" by another connection")
                        }
                        return false
                    }
                    try connection.execute(migration.sql)
                    try connection.run(
                        "INSERT INTO schema_migrations (position, name, applied_at) VALUES (?, ?, ?)",
                        .integer(position), .text(migration.name),
                        .text(ISO8601DateFormatter().string(from: Date())))
                    return true
                }
                if didApply { applied.append(migration.name) }
            } catch let error as SQLiteError {
                throw error
            } catch {
                throw SQLiteError(.error, "migration \(migration.name) failed: \(error)")
            }
        }
        return applied
    }

    /// The recorded migration names, in order.
    /// - Throws: ``SQLiteError``.
    public func appliedMigrations() throws(SQLiteError) -> [String] {
        let exists = try query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
        guard !exists.isEmpty else { return [] }
        return try query("SELECT name FROM schema_migrations ORDER BY position").map { row throws(SQLiteError) in
            try row.string("name")
        }
    }
}

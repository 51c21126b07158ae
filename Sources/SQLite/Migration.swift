import Foundation
import SQLCore

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
    /// Applies the migrations not yet recorded, in order, each in its own `BEGIN IMMEDIATE` transaction, with
    /// ``Migrator`` (recorded in `schema_migrations`).
    ///
    /// Safe when several connections migrate the same file at once: each step re-reads the record inside its
    /// transaction.
    /// - Parameter migrations: the complete ordered list, oldest first.
    /// - Returns: the names applied by this call.
    /// - Throws: ``SQLiteError`` `migration` when the recorded names differ from the list's prefix (or the
    ///   database has more migrations than the code knows); any SQL error rolls its migration back.
    @discardableResult
    public func migrate(_ migrations: [Migration]) throws(SQLiteError) -> [String] {
        let migrator = Migrator(migrations.map { SQLMigration($0.name, sql: $0.sql) })
        var applied: [String] = []
        do {
            for step in 0..<max(1, migrations.count) {
                applied += try writeTransaction { connection throws(SQLError) in
                    try migrator.migrate(connection, limit: step + 1)
                }
            }
        } catch {
            if let underlying = error.underlying as? SQLiteError { throw underlying }
            throw SQLiteError(.migration, error.message)
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

import Foundation

/// A named schema change, its SQL written for each dialect. Never edit a released migration: append a new one.
public struct SQLMigration: Sendable {
    /// A unique, stable name (`001-create-orders`).
    public let name: String
    private let script: @Sendable (SQLDialect) -> String

    /// A migration whose SQL depends on the dialect.
    public init(_ name: String, sql: @escaping @Sendable (SQLDialect) -> String) {
        self.name = name
        self.script = sql
    }

    /// A migration with the same SQL for every dialect.
    public init(_ name: String, sql: String) {
        self.init(name, sql: { _ in sql })
    }

    /// The statements for `dialect`.
    public func sql(for dialect: SQLDialect) -> String { script(dialect) }
}

/// Applies an ordered list of named migrations and records each in `schema_migrations` (position, name, time).
///
/// It refuses (``SQLError`` `newerDatabase`) a database that records more migrations than the program knows, and
/// (`renamedMigration`) one whose recorded names differ from the list's. A database written under an older list
/// of names (a ``LegacyHistory``) is carried forward: the legacy migrations it lacks run, then its record is
/// replaced by the names of the current list that the complete legacy list equals.
public struct Migrator: Sendable {
    /// The names an older program recorded, with their frozen SQL, and where they leave the schema.
    public struct LegacyHistory: Sendable {
        /// The dialect whose databases may hold this history.
        public let dialect: SQLDialect
        /// The legacy migrations in their order.
        public let migrations: [SQLMigration]
        /// After all of them, the schema is that of the first `equivalentPrefix` current migrations.
        public let equivalentPrefix: Int

        public init(dialect: SQLDialect, migrations: [SQLMigration], equivalentPrefix: Int) {
            self.dialect = dialect
            self.migrations = migrations
            self.equivalentPrefix = equivalentPrefix
        }
    }

    /// The current list, oldest first.
    public let migrations: [SQLMigration]
    public let legacyHistories: [LegacyHistory]

    public init(_ migrations: [SQLMigration], legacyHistories: [LegacyHistory] = []) {
        self.migrations = migrations
        self.legacyHistories = legacyHistories
    }

    /// The current names, in order.
    public var names: [String] { migrations.map(\.name) }

    /// Brings the schema up to the list (or to its first `limit` migrations). Run it inside a write transaction: the
    /// record is read, checked and extended there, so several processes migrating at once apply each step once.
    /// - Returns: the names applied by this call (legacy ones included).
    /// - Throws: ``SQLError`` `newerDatabase` or `renamedMigration` (nothing applied), or what a migration's SQL
    ///   threw (the caller's transaction then rolls back).
    @discardableResult
    public func migrate<C: SQLConnection>(_ connection: C, limit: Int? = nil) throws(SQLError) -> [String] {
        let dialect = connection.dialect
        if let lock = dialect.migrationLock { try connection.execute(script: lock) }
        try connection.execute(script: dialect.migrationsTable)
        var recorded = try recordedNames(connection)
        var applied: [String] = []
        if let legacy = try legacyHistory(for: recorded, dialect: dialect) {
            for migration in legacy.migrations.dropFirst(recorded.count) {
                try connection.execute(script: migration.sql(for: dialect))
                applied.append(migration.name)
            }
            try connection.run("DELETE FROM schema_migrations")
            recorded = Array(names.prefix(legacy.equivalentPrefix))
            for (offset, name) in recorded.enumerated() { try record(name, at: offset + 1, connection) }
        }
        try check(recorded)
        let target = min(limit ?? migrations.count, migrations.count)
        for (offset, migration) in migrations.enumerated() where offset >= recorded.count && offset < target {
            try connection.execute(script: migration.sql(for: dialect))
            try record(migration.name, at: offset + 1, connection)
            applied.append(migration.name)
        }
        return applied
    }

    /// The recorded names, in order (none when there is no `schema_migrations` yet is the caller's concern: it is
    /// created by ``migrate(_:limit:)``).
    public func recordedNames<C: SQLConnection>(_ connection: C) throws(SQLError) -> [String] {
        var names: [String] = []
        for row in try connection.query("SELECT name FROM schema_migrations ORDER BY position") {
            names.append(try row.string("name"))
        }
        return names
    }

    /// Refuses a record that is not a prefix of the list.
    private func check(_ recorded: [String]) throws(SQLError) {
        for (position, name) in recorded.enumerated() where position < migrations.count {
            guard migrations[position].name == name else {
                throw SQLError(
                    .renamedMigration,
                    "migration \(position + 1) is recorded as \"\(name)\" but the program calls it \"\(migrations[position].name)\""
                )
            }
        }
        guard recorded.count <= migrations.count else {
            throw SQLError(
                .newerDatabase,
                "the database has \(recorded.count) migrations, this program knows \(migrations.count): it is newer than the program"
            )
        }
    }

    /// The legacy history `recorded` is a prefix of, when it is not one of the current list.
    private func legacyHistory(for recorded: [String], dialect: SQLDialect) throws(SQLError) -> LegacyHistory? {
        guard let first = recorded.first, first != migrations.first?.name else { return nil }
        for legacy in legacyHistories where legacy.dialect == dialect {
            let legacyNames = legacy.migrations.map(\.name)
            if recorded.count <= legacyNames.count, Array(legacyNames.prefix(recorded.count)) == recorded {
                return legacy
            }
            if recorded.count > legacyNames.count, Array(recorded.prefix(legacyNames.count)) == legacyNames {
                throw SQLError(
                    .newerDatabase,
                    "the database records \(recorded.count) migrations of an older naming that knows \(legacyNames.count): it was written by another program"
                )
            }
        }
        return nil
    }

    private func record<C: SQLConnection>(_ name: String, at position: Int, _ connection: C) throws(SQLError) {
        let time = Date().formatted(.iso8601)
        try connection.run(
            "INSERT INTO schema_migrations (position, name, applied_at) VALUES (\(bind: position), \(bind: name), \(bind: time))"
        )
    }
}

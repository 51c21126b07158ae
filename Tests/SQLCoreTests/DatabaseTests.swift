import Foundation
import Postgres
import SQLCore
import SQLite
import TestSupport
import Testing

/// The databases the SQLCore tests run on: an SQLite file always, PostgreSQL when `APPLEPAY_TEST_POSTGRES` names
/// one (`make test`), each test in a fresh schema there.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    static let postgresURI = ProcessInfo.processInfo.environment["APPLEPAY_TEST_POSTGRES"].flatMap {
        $0.isEmpty ? nil : $0
    }
    static var available: [Backend] { postgresURI == nil ? [.sqlite] : [.sqlite, .postgres] }
    var testDescription: String { rawValue }

    /// Runs `body` with a fresh database of this backend.
    func withDatabase(_ body: (any SQLDatabaseBox) async throws -> Void) async throws {
        switch self {
        case .sqlite:
            let folder = try TemporaryDirectory(prefix: "sqlcore")
            defer { folder.remove() }
            try await body(Box(database: try SQLiteDatabase(path: folder.path("t.sqlite"))))
        case .postgres:
            let base = try #require(Self.postgresURI)
            let schema = "c_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            let admin = ConnectionPool(uri: base, size: 1)
            defer { admin.close() }
            try await admin.withConnection { try $0.execute("CREATE SCHEMA \(schema)") }
            let uri = base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
            let database = PostgresDatabase(uri: uri, poolSize: 2)
            defer { database.close() }
            try await body(Box(database: database))
        }
    }
}

/// A database of either backend behind one face, for tests that run the same steps on both.
protocol SQLDatabaseBox: Sendable {
    var dialect: SQLDialect { get }
    func execute(_ script: String) async throws(SQLError)
    func count(_ table: String) async throws(SQLError) -> Int64
    /// Runs `migrator` in one write transaction.
    @discardableResult func migrate(_ migrator: Migrator) async throws(SQLError) -> [String]
    func recorded() async throws(SQLError) -> [String]
    /// Inserts a row, then runs `update` expecting it to change one row, in one write transaction.
    func insertThenUpdate(_ update: SQLQuery) async throws(SQLError)
}

struct Box<Database: SQLDatabase>: SQLDatabaseBox {
    let database: Database
    var dialect: SQLDialect { database.dialect }

    func execute(_ script: String) async throws(SQLError) {
        try await database.write { connection throws(SQLError) in try connection.execute(script: script) }
    }

    func count(_ table: String) async throws(SQLError) -> Int64 {
        try await database.read { connection throws(SQLError) in
            try connection.query("SELECT count(*) AS n FROM \(raw: table)").first?.int64("n") ?? -1
        }
    }

    @discardableResult
    func migrate(_ migrator: Migrator) async throws(SQLError) -> [String] {
        try await database.write { connection throws(SQLError) in try migrator.migrate(connection) }
    }

    func recorded() async throws(SQLError) -> [String] {
        try await database.read { connection throws(SQLError) in
            try Migrator([]).recordedNames(connection)
        }
    }

    func insertThenUpdate(_ update: SQLQuery) async throws(SQLError) {
        try await database.write { connection throws(SQLError) in
            try connection.run("INSERT INTO items (id, status) VALUES (\(bind: "b"), \(bind: "new"))")
            try connection.run(update, expectingRows: 1)
        }
    }
}

@Suite("SQLCore on SQLite and PostgreSQL: migrator, expected row counts")
struct DatabaseTests {
    static let items = SQLMigration("001-items") { dialect in
        "CREATE TABLE items (id \(dialect.textType) PRIMARY KEY, status \(dialect.textType) NOT NULL)"
    }
    static let flags = SQLMigration("002-flags") { dialect in
        "ALTER TABLE items ADD COLUMN flag \(dialect.booleanType) NOT NULL DEFAULT \(dialect.falseLiteral)"
    }

    @Test("migrations apply once, in order, recorded by name", arguments: Backend.available)
    func appliesOnce(_ backend: Backend) async throws {
        try await backend.withDatabase { database async throws in
            #expect(try await database.migrate(Migrator([Self.items])) == ["001-items"])
            #expect(try await database.migrate(Migrator([Self.items, Self.flags])) == ["002-flags"])
            #expect(try await database.migrate(Migrator([Self.items, Self.flags])) == [])
            #expect(try await database.recorded() == ["001-items", "002-flags"])
            #expect(try await database.count("items") == 0)
        }
    }

    @Test("a database newer than the program, or with a renamed migration, is refused", arguments: Backend.available)
    func refusals(_ backend: Backend) async throws {
        try await backend.withDatabase { database async throws in
            try await database.migrate(Migrator([Self.items, Self.flags]))
            let newer = await #expect(throws: SQLError.self) { try await database.migrate(Migrator([Self.items])) }
            #expect(newer?.code == .newerDatabase)
            let renamed = await #expect(throws: SQLError.self) {
                try await database.migrate(Migrator([Self.items, SQLMigration("002-renamed", sql: "SELECT 1")]))
            }
            #expect(renamed?.code == .renamedMigration)
            #expect(try await database.recorded() == ["001-items", "002-flags"])
        }
    }

    @Test("a legacy history is finished and recorded under the current names", arguments: Backend.available)
    func legacyCarriedForward(_ backend: Backend) async throws {
        try await backend.withDatabase { database async throws in
            let legacy = [
                SQLMigration("a-old-items", sql: Self.items.sql(for: database.dialect)),
                SQLMigration("b-old-flags", sql: Self.flags.sql(for: database.dialect)),
            ]
            // A database an older program made: only the first of its two migrations.
            try await database.migrate(Migrator(Array(legacy.prefix(1))))
            try await database.execute("INSERT INTO items (id, status) VALUES ('a', 'kept')")
            let third = SQLMigration("003-more", sql: "CREATE TABLE more (id integer)")
            let migrator = Migrator(
                [Self.items, Self.flags, third],
                legacyHistories: [.init(dialect: database.dialect, migrations: legacy, equivalentPrefix: 2)])
            #expect(try await database.migrate(migrator) == ["b-old-flags", "003-more"])
            #expect(try await database.recorded() == ["001-items", "002-flags", "003-more"])
            #expect(try await database.count("items") == 1)
            #expect(try await database.migrate(migrator) == [])
        }
    }

    @Test(
        "an update expected to change one row that changes none rolls back the whole write",
        arguments: Backend.available)
    func unexpectedRowCount(_ backend: Backend) async throws {
        try await backend.withDatabase { database async throws in
            try await database.migrate(Migrator([Self.items]))
            try await database.execute("INSERT INTO items (id, status) VALUES ('a', 'paid')")
            let error = await #expect(throws: SQLError.self) {
                try await database.insertThenUpdate(
                    "UPDATE items SET status = \(bind: "declined") WHERE id = \(bind: "a") AND status = 'pending'")
            }
            #expect(error?.code == .unexpectedRowCount)
            #expect(try await database.count("items") == 1)
            try await database.insertThenUpdate(
                "UPDATE items SET status = \(bind: "declined") WHERE id = \(bind: "a") AND status = 'paid'")
            #expect(try await database.count("items") == 2)
        }
    }
}

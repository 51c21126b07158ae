import Foundation
import SQLite
import TestSupport
import Testing

@Suite("SQLite migrations")
struct MigrationTests {
    let migrations = [
        Migration("001-create-a", sql: "CREATE TABLE a (id INTEGER PRIMARY KEY)"),
        Migration("002-create-b", sql: "CREATE TABLE b (id INTEGER PRIMARY KEY); CREATE INDEX b_id ON b(id);"),
    ]

    @Test("migrations run once, in order, and are recorded", arguments: Storage.allCases)
    func appliedOnce(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        #expect(try db.migrate(Array(migrations.prefix(1))) == ["001-create-a"])
        #expect(try db.migrate(migrations) == ["002-create-b"])
        #expect(try db.migrate(migrations) == [])
        let rows = try db.query("SELECT position, name FROM schema_migrations ORDER BY position")
        #expect(try rows.map { try $0.int64("position") } == [1, 2])
        #expect(try db.appliedMigrations() == ["001-create-a", "002-create-b"])
    }

    @Test("a reopened file is not migrated again")
    func reopen() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-test")
        defer { folder.remove() }
        let path = folder.path("m.sqlite")
        #expect(try Connection(path: path).migrate(migrations).count == 2)
        #expect(try Connection(path: path).migrate(migrations).isEmpty)
        #expect(try Connection(path: path).query("SELECT count(*) AS n FROM schema_migrations").first?.int64("n") == 2)
    }

    @Test("a failing migration leaves nothing: no table, no record", arguments: Storage.allCases)
    func failingMigration(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        let broken = migrations + [Migration("003-broken", sql: "CREATE TABLE c (id INTEGER); CREATE TABLE a (x);")]
        expectSQLiteError(.error) { try db.migrate(broken) }
        #expect(try db.appliedMigrations() == ["001-create-a", "002-create-b"])
        #expect(try db.query("SELECT name FROM sqlite_master WHERE name = 'c'").isEmpty)
    }

    @Test("renamed or unknown recorded migrations are refused", arguments: Storage.allCases)
    func mismatch(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.migrate(migrations)
        expectSQLiteError(.migration) {
            try db.migrate([Migration("001-renamed", sql: "SELECT 1"), migrations[1]])
        }
        expectSQLiteError(.migration) { try db.migrate(Array(migrations.prefix(1))) }
    }
}

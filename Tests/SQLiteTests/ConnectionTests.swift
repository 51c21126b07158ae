import Foundation
import SQLite
import TestSupport
import Testing

/// Where a test's database lives: every behaviour is checked in memory and in a real file.
enum Storage: String, CaseIterable, CustomTestStringConvertible {
    case memory, file
    var testDescription: String { rawValue }

    /// Opens a fresh database; the folder is removed by the returned cleanup.
    func open() throws -> (Connection, TemporaryDirectory?) {
        switch self {
        case .memory: return (try Connection.inMemory(), nil)
        case .file:
            let folder = try TemporaryDirectory(prefix: "sqlite-test")
            return (try Connection(path: folder.path("test.sqlite")), folder)
        }
    }
}

struct Failure: Error {}

/// Expects `body` to throw a ``SQLiteError`` that `code` matches (the code itself, or an extended code refining it).
func expectSQLiteError<T>(
    _ code: SQLiteError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
) {
    let error = #expect(throws: SQLiteError.self, sourceLocation: sourceLocation) { _ = try body() }
    #expect(
        error.map { code ~= $0 } == true, "\(error.map { "\($0.code)" } ?? "nothing") is not \(code)",
        sourceLocation: sourceLocation)
}

@Suite("SQLite connection")
struct ConnectionTests {
    @Test("values round-trip: Int64, String, Data, NULL", arguments: Storage.allCases)
    func roundTrip(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.execute("CREATE TABLE t (i INTEGER, s TEXT, b BLOB, n)")
        let values: [[Value]] = [
            [.integer(Int64.max), .text("héllo 🍏"), .blob(Data([0, 1, 2, 255])), .null],
            [.integer(Int64.min), .text(""), .blob(Data()), .null],
            [.integer(0), .text("nul\u{0}inside"), .blob(Data(repeating: 7, count: 10_000)), .integer(5)],
        ]
        for row in values { try db.run("INSERT INTO t VALUES (?, ?, ?, ?)", values: row) }
        let rows = try db.query("SELECT i, s, b, n FROM t ORDER BY rowid")
        #expect(rows.map(\.values) == values)
        #expect(try rows[0].int64("i") == Int64.max)
        #expect(try rows[0].string("s") == "héllo 🍏")
        #expect(try rows[1].data("b") == Data())
        #expect(try rows[0].optionalInt64("n") == nil)
        expectSQLiteError(.typeMismatch) { try rows[0].int64("s") }
        expectSQLiteError(.typeMismatch) { try rows[0].string("missing") }
    }

    @Test("a prepared statement runs many times with new bindings", arguments: Storage.allCases)
    func statementReuse(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
        let insert = try db.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
        for index in 0..<50 { try insert.run([.text("k\(index)"), .integer(Int64(index))]) }
        #expect(try db.query("SELECT sum(v) AS total FROM t").first?.int64("total") == 1225)
        expectSQLiteError(.range) { try insert.run([.text("only one value")]) }
    }

    @Test("cached statements answer each for its own text: one sharing length and ending, or equal as a Swift string")
    func statementCacheKeys() throws {
        let db = try Connection.inMemory()
        let ending = String(repeating: " ", count: 100) + "AS answer"
        // Same length, same last hundred bytes (more than the cache's key hashes): only the start differs.
        for _ in 0..<3 {
            #expect(try db.query("SELECT 1 " + ending).first?.int64("answer") == 1)
            #expect(try db.query("SELECT 2 " + ending).first?.int64("answer") == 2)
        }
        #expect(try db.query("SELECT 3 " + ending).first?.int64("answer") == 3)
        // Canonically equivalent texts (`==` as Swift strings) of different bytes are two statements, as SQLite
        // compiles bytes: each answers its own.
        let composed = "SELECT '\u{E9}' AS text"
        let decomposed = "SELECT 'e\u{301}' AS text"
        #expect(composed == decomposed)
        for _ in 0..<2 {
            #expect(try db.query(composed).first?.string("text").unicodeScalars.count == 1)
            #expect(try db.query(decomposed).first?.string("text").unicodeScalars.count == 2)
        }
    }

    @Test("transaction commits on return and rolls back on throw", arguments: Storage.allCases)
    func transactions(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.execute("CREATE TABLE t (v INTEGER)")
        let answer = try db.transaction { db in
            try db.run("INSERT INTO t VALUES (1)")
            return 42
        }
        #expect(answer == 42)
        #expect(throws: Failure.self) {
            try db.transaction { db in
                try db.run("INSERT INTO t VALUES (2)")
                try db.run("INSERT INTO t VALUES (3)")
                throw Failure()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.query("SELECT v FROM t").map { try $0.int64("v") } == [1])
    }

    @Test("a nested transaction rolls back only its own part", arguments: Storage.allCases)
    func nestedTransaction(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.execute("CREATE TABLE t (v INTEGER)")
        try db.transaction { db in
            try db.run("INSERT INTO t VALUES (1)")
            try? db.transaction { db in
                try db.run("INSERT INTO t VALUES (2)")
                throw Failure()
            }
            try db.run("INSERT INTO t VALUES (3)")
        }
        #expect(try db.query("SELECT v FROM t ORDER BY v").map { try $0.int64("v") } == [1, 3])
    }

    @Test("constraint violations carry a stable code and the extended result code", arguments: Storage.allCases)
    func constraintErrors(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.execute(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE child (id TEXT UNIQUE, parent INTEGER REFERENCES parent(id), amount INTEGER CHECK (amount >= 0));
            INSERT INTO parent VALUES (1);
            """)
        try db.run("INSERT INTO child VALUES ('a', 1, 5)")
        var matched = false
        do {
            try db.run("INSERT INTO child VALUES ('a', 1, 5)")
        } catch SQLiteError.Code.constraint {
            matched = true
        } catch {}
        #expect(matched, "catch SQLiteError.Code.constraint matches a UNIQUE violation")
        let error = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO child VALUES ('a', 1, 5)") }
        #expect(error?.code == .constraintUnique)
        #expect(error?.resultCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(error?.message.contains("UNIQUE") == true)
        #expect(error?.sql?.contains("INSERT INTO child") == true)
        // Foreign keys are on.
        let foreign = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO child VALUES ('b', 99, 5)") }
        #expect(foreign?.code.primary == .constraint)
        #expect(foreign?.code == .constraintForeignKey)
        expectSQLiteError(.constraint) { try db.run("INSERT INTO child VALUES ('c', 1, -1)") }
        #expect(try db.query("SELECT count(*) AS n FROM child").first?.int64("n") == 1)
    }

    @Test("bad SQL is refused with SQLite's message", arguments: Storage.allCases)
    func badSQL(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        let syntax = #expect(throws: SQLiteError.self) { try db.prepare("SELEC 1") }
        #expect(syntax?.code == .error)
        #expect(syntax?.message.contains("syntax error") == true)
        expectSQLiteError(.misuse) { try db.prepare("SELECT 1; SELECT 2") }
        expectSQLiteError(.misuse) { try db.prepare("   ") }
        #expect(try db.prepare("SELECT 1;").rows().count == 1)
    }

    @Test("files use WAL mode, foreign keys on")
    func pragmas() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-test")
        defer { folder.remove() }
        let db = try Connection(path: folder.path("wal.sqlite"))
        #expect(try db.query("PRAGMA journal_mode").first?["journal_mode"] == .text("wal"))
        #expect(try db.query("PRAGMA foreign_keys").first?["foreign_keys"] == .integer(1))
        try db.execute("CREATE TABLE t (v INTEGER)")
        #expect(FileManager.default.fileExists(atPath: folder.path("wal.sqlite-wal")))
    }

    @Test("opening fails cleanly: missing folder, not a database, read-only")
    func openFailures() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-test")
        defer { folder.remove() }
        expectSQLiteError(.cannotOpen) { try Connection(path: folder.path("no/such/folder/db.sqlite")) }
        let garbage = folder.path("garbage.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: garbage))
        expectSQLiteError(.corrupt) { try Connection(path: garbage) }

        let path = folder.path("ro.sqlite")
        try Connection(path: path).execute("CREATE TABLE t (v INTEGER)")
        let readOnly = try Connection(path: path, readOnly: true)
        expectSQLiteError(.readOnly) { try readOnly.run("INSERT INTO t VALUES (1)") }
    }

    @Test("any busy timeout opens: huge ones are capped, negative ones turn waiting off")
    func busyTimeoutRange() throws {
        for timeout: Duration in [.seconds(Int64.max), .seconds(Int64.min), .seconds(3_000_000), .milliseconds(-5)] {
            let db = try Connection(path: ":memory:", busyTimeout: timeout)
            #expect(try db.query("SELECT 1 AS one").first?.int64("one") == 1)
        }
    }

    @Test("a second writer waits for the busy timeout, then fails with busy")
    func busy() throws {
        let (folder, path, first) = try newDatabase(prefix: "sqlite-test", "busy.sqlite")
        defer { folder.remove() }
        let second = try Connection(path: path, busyTimeout: .milliseconds(100))
        try first.execute("BEGIN IMMEDIATE")
        let start = ContinuousClock.now
        expectSQLiteError(.busy) {
            try second.transaction { db in try db.run("INSERT INTO t VALUES (1)") }
        }
        #expect(ContinuousClock.now - start >= .milliseconds(90))
        #expect(!second.isInTransaction)
        try first.execute("COMMIT")
        _ = try second.transaction { db in try db.run("INSERT INTO t VALUES (1)") }
        #expect(try first.query("SELECT count(*) AS n FROM t").first?.int64("n") == 1)
    }

    @Test(
        "run and query reuse prepared statements without keeping the connection or a read lock",
        arguments: Storage.allCases)
    func statementCache(storage: Storage) throws {
        let (db, folder) = try storage.open()
        defer { folder?.remove() }
        try db.execute("CREATE TABLE t (v INTEGER)")
        for value in 0..<100 { try db.run("INSERT INTO t VALUES (?)", .integer(Int64(value))) }
        for value in 0..<100 {
            #expect(
                try db.query("SELECT v FROM t WHERE v = ?", .integer(Int64(value))).first?.int64("v") == Int64(value))
        }
        // A query stopped early by its own bind error leaves the cached statement usable.
        expectSQLiteError(.range) { try db.query("SELECT v FROM t WHERE v = ?", .integer(1), .integer(2)) }
        #expect(try db.query("SELECT count(*) AS n FROM t WHERE v < ?", .integer(10)).first?.int64("n") == 10)
        // Cached statements are reset after each call: the schema can change under them, and they re-prepare.
        try db.execute("DROP TABLE t")
        try db.execute("CREATE TABLE t (w TEXT, v INTEGER)")
        try db.run("INSERT INTO t VALUES ('x', ?)", .integer(7))
        #expect(try db.query("SELECT v FROM t WHERE v = ?", .integer(7)).first?.int64("v") == 7)
        // More distinct SQL texts than the cache holds still run.
        for value in 0..<300 { _ = try db.query("SELECT \(value) AS n").first }
        #expect(try db.query("SELECT 299 AS n").first?.int64("n") == 299)
    }

    @Test("a connection whose statements are cached is still released (and closed) when its owner lets go")
    func cachedStatementsDoNotLeakTheConnection() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-test")
        defer { folder.remove() }
        let path = folder.path("release.sqlite")
        weak var released: Connection?
        do {
            let db = try Connection(path: path)
            try db.execute("CREATE TABLE t (v INTEGER)")
            try db.run("INSERT INTO t VALUES (?)", .integer(1))
            _ = try db.query("SELECT v FROM t")
            released = db
        }
        #expect(released == nil)
        // Closed: another connection can take the write lock and checkpoint the WAL at once.
        let other = try Connection(path: path, busyTimeout: .zero)
        try other.execute("BEGIN EXCLUSIVE")
        try other.execute("COMMIT")
        #expect(try other.query("SELECT count(*) AS n FROM t").first?.int64("n") == 1)
    }
}

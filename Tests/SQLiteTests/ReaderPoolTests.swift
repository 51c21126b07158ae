import Foundation
import SQLite
import Synchronization
import TestSupport
import Testing

/// A database file `name` in a new temporary folder (for the caller to remove), with a table `t (v INTEGER)`: the
/// folder, the file's path and the connection that made the table.
func newDatabase(prefix: String, _ name: String) throws -> (TemporaryDirectory, String, Connection) {
    let folder = try TemporaryDirectory(prefix: prefix)
    let path = folder.path(name)
    do {
        let connection = try Connection(path: path)
        try connection.execute("CREATE TABLE t (v INTEGER)")
        return (folder, path, connection)
    } catch {
        folder.remove()
        throw error
    }
}

@Suite("Reader pool beside a writer")
struct ReaderPoolTests {
    @Test("readers see each committed write, never an open transaction's, and cannot write")
    func isolation() throws {
        let (folder, path, writer) = try newDatabase(prefix: "sqlite-readers", "db.sqlite")
        defer { folder.remove() }
        let readers = ReaderPool(path: path, maximumIdle: 2)
        func count() throws -> Value? {
            try readers.read { connection throws(SQLiteError) in
                try connection.query("SELECT count(*) AS n FROM t").first?["n"]
            }
        }

        #expect(try count() == .integer(0))
        try writer.run("INSERT INTO t (v) VALUES (1)")
        #expect(try count() == .integer(1))
        // Inside the writer's transaction: readers still see the last commit, and are not blocked by it.
        try writer.execute("BEGIN IMMEDIATE")
        try writer.run("INSERT INTO t (v) VALUES (2)")
        #expect(try count() == .integer(1))
        try writer.execute("COMMIT")
        #expect(try count() == .integer(2))
        expectSQLiteError(.readOnly) {
            try readers.read { connection throws(SQLiteError) in try connection.run("INSERT INTO t (v) VALUES (3)") }
        }
        #expect(try count() == .integer(2))
    }

    @Test("reads from many threads at once all succeed; idle connections are kept up to the limit")
    func concurrentReads() throws {
        let (folder, path, writer) = try newDatabase(prefix: "sqlite-readers", "db.sqlite")
        defer { folder.remove() }
        for value in 0..<100 { try writer.run("INSERT INTO t (v) VALUES (?)", .integer(Int64(value))) }
        let readers = ReaderPool(path: path, maximumIdle: 3)
        let failures = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<200 {
                let sum = try? readers.read { connection throws(SQLiteError) in
                    try connection.query("SELECT sum(v) AS s FROM t").first?["s"]
                }
                if sum != .integer(4950) { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}

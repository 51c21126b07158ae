import Foundation
import SQLite
import Synchronization
import TestSupport
import Testing

@Suite("Reader pool beside a writer")
struct ReaderPoolTests {
    @Test("readers see each committed write, never an open transaction's, and cannot write")
    func isolation() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-readers")
        defer { folder.remove() }
        let path = folder.path("db.sqlite")
        let writer = try Connection(path: path)
        try writer.execute("CREATE TABLE t (v INTEGER)")
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
        let folder = try TemporaryDirectory(prefix: "sqlite-readers")
        defer { folder.remove() }
        let path = folder.path("db.sqlite")
        let writer = try Connection(path: path)
        try writer.execute("CREATE TABLE t (v INTEGER)")
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

import Foundation
import SQLCore
import TestSupport
import Testing

@testable import SQLite

@Suite("SQLite's WAL frames gathered into one write a commit")
struct WALWriteGatheringTests {
    private static func insertRows(_ connection: Connection, from first: Int, count: Int) throws {
        try connection.execute("BEGIN IMMEDIATE")
        for value in first..<first + count {
            // 1,000 bytes a row: a page holds about four, so a commit of 40 rows writes about ten pages.
            _ = try connection.run(
                "INSERT INTO t (v, padding) VALUES (?, ?)", .integer(Int64(value)),
                .text(String(repeating: "x", count: 1000)))
        }
        try connection.execute("COMMIT")
    }

    private static func count(_ connection: Connection) throws -> Int64? {
        try connection.query("SELECT count(*) AS n FROM t").first?["n"]?.integerPayload
    }

    @Test("a commit of many pages is one write; another connection sees each commit at once, synced or not")
    func gathered() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-wal-gathering")
        defer { folder.remove() }
        let path = folder.path("db.sqlite")
        let writer = try Connection(path: path)
        try writer.execute("CREATE TABLE t (v INTEGER, padding TEXT)")
        let reader = try Connection(path: path, readOnly: true)
        #expect(reader.walWriteCounts == nil)  // a reader's WAL is the default VFS's own
        var expected: Int64 = 0
        for (round, synchronous) in ["FULL", "NORMAL", "FULL", "NORMAL"].enumerated() {
            try writer.execute("PRAGMA synchronous = \(synchronous)")
            let before = try #require(writer.walWriteCounts)
            try Self.insertRows(writer, from: round * 40, count: 40)
            expected += 40
            let after = try #require(writer.walWriteCounts)
            // Two writes a frame (header, page) came in; at most two went out (the WAL's header after a restart).
            #expect(after.received - before.received >= 20, "\(synchronous): \(before) -> \(after)")
            #expect(after.written - before.written <= 2, "\(synchronous): \(before) -> \(after)")
            // Nothing waits in the buffer once the commit returns: the reader sees every row (unsynced too).
            #expect(try Self.count(reader) == expected)
        }
        #expect(try writer.query("PRAGMA integrity_check").first?["integrity_check"] == .text("ok"))
    }

    @Test("a transaction larger than the buffer, a checkpoint and a restarted WAL: every row read back")
    func largeTransactionsAndCheckpoints() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-wal-gathering-large")
        defer { folder.remove() }
        let path = folder.path("db.sqlite")
        do {
            let writer = try Connection(path: path)
            try writer.execute("CREATE TABLE t (v INTEGER, padding TEXT)")
            // About 1,000 pages (4 MiB) in one transaction: more than the 1 MiB buffer, and than the pager's cache,
            // which spills frames into the WAL before the commit and reads some back.
            try Self.insertRows(writer, from: 0, count: 4000)
            let reader = try Connection(path: path, readOnly: true)
            #expect(try Self.count(reader) == 4000)
            // A checkpoint copies the frames into the database; the next write starts the WAL over from its header.
            _ = try writer.query("PRAGMA wal_checkpoint(TRUNCATE)")
            try Self.insertRows(writer, from: 4000, count: 40)
            try writer.execute("UPDATE t SET padding = 'y' WHERE v % 7 = 0")
            #expect(try Self.count(reader) == 4040)
            #expect(
                try reader.query("SELECT count(*) AS n FROM t WHERE padding = 'y'").first?["n"]?.integerPayload == 578)
            let counts = try #require(writer.walWriteCounts)
            #expect(counts.written * 10 < counts.received, "\(counts)")
        }
        // Opened again (the last connection closed checkpointed the WAL away): the rows are in the database.
        let again = try Connection(path: path)
        #expect(try Self.count(again) == 4040)
        #expect(try again.query("PRAGMA integrity_check").first?["integrity_check"] == .text("ok"))
    }

    @Test("a WAL left by a process that ended without checkpointing is recovered, then gathered again")
    func recovery() throws {
        let folder = try TemporaryDirectory(prefix: "sqlite-wal-gathering-recovery")
        defer { folder.remove() }
        let path = folder.path("db.sqlite")
        let first = try Connection(path: path)
        try first.execute("CREATE TABLE t (v INTEGER, padding TEXT)")
        try Self.insertRows(first, from: 0, count: 40)
        // A second connection keeps the WAL from being checkpointed away when the first closes.
        let keeper = try Connection(path: path, readOnly: true)
        #expect(try Self.count(keeper) == 40)
        let second = try Connection(path: path)
        try Self.insertRows(second, from: 40, count: 40)
        #expect(try Self.count(first) == 80)
        #expect(try Self.count(keeper) == 80)
        let counts = try #require(second.walWriteCounts)
        #expect(counts.received >= 20)
    }
}

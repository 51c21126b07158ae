import Foundation
import SQLCore
import SQLite
import TestSupport
import Testing

@Suite("SQLite group commits: synced writes, and written ones that skip the sync")
struct WriteDurabilityTests {
    /// The `synchronous` setting the commit of the write running `body` will use: 2 (FULL) syncs the WAL, 1
    /// (NORMAL) leaves it to the next synced commit or checkpoint.
    private static func synchronous(_ connection: Connection) throws(SQLError) -> Int64? {
        let pragma: SQLQuery = "PRAGMA synchronous"
        return try connection.query(pragma).first?.optionalInt64("synchronous")
    }

    private static func insert(_ value: Int64, _ connection: Connection) throws(SQLError) {
        let insert: SQLQuery = "INSERT INTO t (v) VALUES (\(bind: value))"
        try connection.run(insert)
    }

    @Test("written writes alone commit unsynced; one synced write syncs its whole group; both are in the file")
    func durability() async throws {
        let (folder, path, setup) = try newDatabase(prefix: "sqlite-durability", "db.sqlite")
        defer { folder.remove() }
        _ = setup
        let database = try SQLiteDatabase(path: path)

        let plain = try await database.write { connection throws(SQLError) in
            try Self.insert(1, connection)
            return try Self.synchronous(connection)
        }
        #expect(plain == 2)
        let written = try await database.write(.written) { connection throws(SQLError) in
            try Self.insert(2, connection)
            return try Self.synchronous(connection)
        }
        #expect(written == 1)
        #expect(await database.unsyncedGroupSwitches == 1)
        // In the WAL file, not only in this process: a connection of its own (as another process) reads it.
        let other = try Connection(path: path)
        #expect(try other.query("SELECT count(*) AS n FROM t").first?["n"] == .integer(2))

        // Many at once: a group holding one synced write syncs, whatever else it holds.
        let settings = try await withThrowingTaskGroup(of: (WriteDurability, Int64?).self) { group in
            for index in 0..<40 {
                let durability: WriteDurability = index == 20 ? .synced : .written
                group.addTask {
                    let setting = try await database.write(durability) { connection throws(SQLError) in
                        try Self.insert(Int64(index), connection)
                        return try Self.synchronous(connection)
                    }
                    return (durability, setting)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(settings.filter { $0.0 == .synced }.allSatisfy { $0.1 == 2 })
        #expect(try other.query("SELECT count(*) AS n FROM t").first?["n"] == .integer(42))
        // And a synced write after unsynced ones syncs again.
        let after = try await database.write { connection throws(SQLError) in try Self.synchronous(connection) }
        #expect(after == 2)
    }
}

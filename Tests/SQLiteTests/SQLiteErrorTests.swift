import SQLite
import TestSupport
import Testing

@Suite("SQLite error codes")
struct SQLiteErrorTests {
    /// A database file with one table for each constraint kind.
    private func openConstrained() throws -> (Connection, TemporaryDirectory) {
        let folder = try TemporaryDirectory(prefix: "sqlite-error-test")
        let db = try Connection(path: folder.path("constraints.sqlite"))
        try db.execute(
            """
            CREATE TABLE accounts (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL UNIQUE,
                balance INTEGER NOT NULL CHECK (balance >= 0)
            );
            INSERT INTO accounts VALUES ('acc_1', 'a@example.com', 10);
            """)
        return (db, folder)
    }

    /// The first pattern that matches the error `body` throws, in the order a caller would write the `catch`es.
    private func caught(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "nothing thrown"
        } catch SQLiteError.Code.constraintUnique {
            return "constraintUnique"
        } catch SQLiteError.Code.constraintPrimaryKey {
            return "constraintPrimaryKey"
        } catch SQLiteError.Code.constraintCheck {
            return "constraintCheck"
        } catch SQLiteError.Code.constraint {
            return "constraint"
        } catch {
            return "other: \(error)"
        }
    }

    @Test("catch clauses tell a unique violation from a primary-key and a check violation (on a file)")
    func extendedCodesMatch() throws {
        let (db, folder) = try openConstrained()
        defer { folder.remove() }
        #expect(
            caught { try db.run("INSERT INTO accounts VALUES ('acc_2', 'a@example.com', 1)") } == "constraintUnique")
        #expect(
            caught { try db.run("INSERT INTO accounts VALUES ('acc_1', 'b@example.com', 1)") } == "constraintPrimaryKey"
        )
        #expect(
            caught { try db.run("INSERT INTO accounts VALUES ('acc_3', 'c@example.com', -1)") } == "constraintCheck")
        // Not one of the three above: falls through to the primary code.
        #expect(caught { try db.run("INSERT INTO accounts VALUES ('acc_4', NULL, 1)") } == "constraint")
        #expect(try db.query("SELECT count(*) AS n FROM accounts").first?.int64("n") == 1)
    }

    @Test("the code comes from the extended result code; the primary code matches every refinement")
    func codesAndPrimary() throws {
        let (db, folder) = try openConstrained()
        defer { folder.remove() }
        let unique = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO accounts VALUES ('acc_2', 'a@example.com', 1)")
        }
        #expect(unique?.code == .constraintUnique)
        #expect(unique?.resultCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(unique?.code.primary == .constraint)
        let primaryKey = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO accounts VALUES ('acc_1', 'b@example.com', 1)")
        }
        #expect(primaryKey?.code == .constraintPrimaryKey)
        #expect(primaryKey?.resultCode == 1555)  // SQLITE_CONSTRAINT_PRIMARYKEY
        let check = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO accounts VALUES ('acc_3', 'c@example.com', -1)")
        }
        #expect(check?.code == .constraintCheck)
        #expect(check?.resultCode == 275)  // SQLITE_CONSTRAINT_CHECK
        let notNull = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO accounts VALUES ('acc_4', NULL, 1)")
        }
        #expect(notNull?.code == .constraintNotNull)
        // Equality is on the code: two unique violations are equal, a unique and a check violation are not.
        #expect(unique == SQLiteError(.constraintUnique, ""))
        #expect(unique != check)
        // An extended pattern matches only itself; a primary pattern matches its refinements and nothing else.
        if let unique, let check {
            #expect(SQLiteError.Code.constraint ~= unique)
            #expect(SQLiteError.Code.constraint ~= check)
            #expect(!(SQLiteError.Code.constraintUnique ~= check))
            #expect(!(SQLiteError.Code.busy ~= unique))
        }
        #expect(SQLiteError.Code.constraint.primary == .constraint)
        #expect(SQLiteError.Code.busyTimeout.primary == .busy)
    }

    @Test("wrapper codes do not match SQLite's codes, and other errors match nothing")
    func wrapperCodes() {
        let error = SQLiteError(.typeMismatch, "no column")
        #expect(SQLiteError.Code.typeMismatch ~= error)
        #expect(!(SQLiteError.Code.error ~= error))
        struct Other: Error {}
        #expect(!(SQLiteError.Code.constraint ~= Other()))
        #expect(error.description == "SQLite typeMismatch: no column")
    }
}

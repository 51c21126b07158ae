import SQLCore
import Testing

@Suite("SQLQuery and SQLDialect")
struct SQLQueryTests {
    @Test("each bound value stands where its placeholder does, in either dialect")
    func interpolationBinds() {
        let id = "chk_1"
        let limit = 5
        let note: String? = nil
        let query: SQLQuery =
            "SELECT a FROM t WHERE id = \(bind: id) AND n > \(bind: 2 as Int64) AND x IS \(bind: note) LIMIT \(bind: limit)"
        #expect(query.text == "SELECT a FROM t WHERE id = ? AND n > ? AND x IS ? LIMIT ?")
        #expect(query.binds == [.text("chk_1"), .integer(2), .null, .integer(5)])
        #expect(query.sql(for: .sqlite) == query.text)
        #expect(query.sql(for: .postgres) == "SELECT a FROM t WHERE id = $1 AND n > $2 AND x IS $3 LIMIT $4")
    }

    @Test("fragments keep their values in order, raw text binds nothing, a literal alone has no values")
    func fragments() {
        var condition: SQLQuery = "kind = \(bind: "a")"
        condition.append(" AND flag = \(bind: true)")
        let query: SQLQuery = "SELECT \(raw: "id, kind") FROM t WHERE n = \(bind: 1) AND \(condition) ORDER BY id"
        #expect(query.binds == [.integer(1), .text("a"), .boolean(true)])
        #expect(
            query.sql(for: .postgres) == "SELECT id, kind FROM t WHERE n = $1 AND kind = $2 AND flag = $3 ORDER BY id")
        let literal: SQLQuery = "DELETE FROM t"
        #expect(literal.binds.isEmpty && literal.sql(for: .postgres) == "DELETE FROM t")
        // Multi-byte text before a placeholder does not move it.
        let accented: SQLQuery = "SELECT 'café' || \(bind: "x"), \(bind: "y")"
        #expect(accented.sql(for: .postgres) == "SELECT 'café' || $1, $2")
    }

    @Test("a query's description shows kinds and sizes, never the values")
    func noValuesInDescription() {
        let query: SQLQuery = "UPDATE t SET pan = \(bind: "4817499999010019") WHERE id = \(bind: 7)"
        #expect(!query.description.contains("4817"))
        #expect(query.description.contains("text(16 bytes)"))
    }

    @Test("dialects: row locks only where the writer does not serialise, the same upsert and lists, schema types")
    func dialects() {
        #expect(SQLDialect.sqlite.forUpdate.isEmpty && !SQLDialect.sqlite.locksRows)
        #expect(SQLDialect.postgres.forUpdate == " FOR UPDATE" && SQLDialect.postgres.locksRows)
        #expect(SQLDialect.postgres.forUpdateSkipLocked == " FOR UPDATE SKIP LOCKED")
        #expect(SQLDialect.sqlite.onConflictDoNothing("a", "b") == "ON CONFLICT (a, b) DO NOTHING")
        #expect(SQLDialect.inList(["pending", "it's"]) == "IN ('pending', 'it''s')")
        #expect(SQLDialect.sqlite.bigintType == "INTEGER" && SQLDialect.postgres.bigintType == "bigint")
        #expect(SQLDialect.sqlite.booleanType == "INTEGER" && SQLDialect.postgres.booleanType == "boolean")
        #expect(SQLDialect.sqlite.migrationLock == nil && SQLDialect.postgres.migrationLock != nil)
        #expect(SQLDialect.sqlite != SQLDialect.postgres)
    }

    @Test("errors compare by code and match catch patterns")
    func errors() {
        let error = SQLError(.uniqueViolation, "one")
        #expect(error == SQLError(.uniqueViolation, "two"))
        #expect(error.isConstraintViolation && !SQLError(.other, "").isConstraintViolation)
        #expect(SQLError.Code.uniqueViolation ~= error)
        #expect(!(SQLError.Code.typeMismatch ~= error))
        #expect(error.description == "uniqueViolation: one")
    }
}

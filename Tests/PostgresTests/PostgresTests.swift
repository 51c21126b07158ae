import Foundation
import Postgres
import SQLCore
import TestSupport
import Testing

/// The PostgreSQL under test: `APPLEPAY_TEST_POSTGRES` (a libpq URI), set by `make test` after it started a private
/// cluster (scripts/test-postgres.sh).
enum TestDatabase {
    static let uri = ProcessInfo.processInfo.environment["APPLEPAY_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
    static var isAvailable: Bool { uri != nil }
}

@Suite("PostgreSQL wrapper", .enabled(if: TestDatabase.isAvailable, "APPLEPAY_TEST_POSTGRES is not set"))
struct PostgresTests {
    @Test("parameters, NULLs, typed reads and changed-row counts")
    func roundTrip() async throws {
        let pool = ConnectionPool(uri: try #require(TestDatabase.uri), size: 2)
        defer { pool.close() }
        let rows = try await pool.withConnection { connection in
            try connection.execute("CREATE TEMPORARY TABLE t (id bigint PRIMARY KEY, name text, ok boolean)")
            #expect(
                try connection.run("INSERT INTO t VALUES ($1, $2, $3)", .integer(1), .text("a'b"), .boolean(true)) == 1)
            #expect(try connection.run("INSERT INTO t VALUES ($1, $2, $3)", .integer(2), .null, .boolean(false)) == 1)
            #expect(try connection.run("UPDATE t SET ok = true WHERE id > $1", .integer(0)) == 2)
            return try connection.query("SELECT id, name, ok FROM t ORDER BY id")
        }
        #expect(try rows.map { try $0.int64("id") } == [1, 2])
        #expect(try rows[0].string("name") == "a'b")
        #expect(try rows[1].optionalString("name") == nil)
        #expect(try rows[1].bool("ok"))
        #expect(throws: PostgresError(.typeMismatch, "")) { try rows[0].string("nope") }
    }

    @Test("SQLSTATEs become stable codes; a failed transaction rolls back")
    func errors() async throws {
        let pool = ConnectionPool(uri: try #require(TestDatabase.uri), size: 1)
        defer { pool.close() }
        try await pool.withConnection { connection in
            try connection.execute("CREATE TEMPORARY TABLE u (id bigint PRIMARY KEY, n bigint CHECK (n > 0))")
            try connection.run("INSERT INTO u VALUES (1, 1)")
            #expect(throws: PostgresError(.uniqueViolation, "")) { try connection.run("INSERT INTO u VALUES (1, 2)") }
            #expect(throws: PostgresError(.checkViolation, "")) { try connection.run("INSERT INTO u VALUES (2, 0)") }
            #expect(throws: PostgresError(.syntaxError, "")) { try connection.run("SELEC 1") }
            #expect(throws: PostgresError(.uniqueViolation, "")) {
                try connection.transaction { connection in
                    try connection.run("INSERT INTO u VALUES (3, 3)")
                    try connection.run("INSERT INTO u VALUES (1, 3)")
                }
            }
            #expect(try connection.query("SELECT count(*) AS n FROM u").first?.int64("n") == 1)
        }
        let error = await #expect(throws: PostgresError.self) {
            try await ConnectionPool(uri: "postgresql:///x?host=/nonexistent", size: 1).withConnection { _ in 1 }
        }
        #expect(error?.code == .connectionFailure)
    }

    @Test("a connection killed by the server is replaced on the next use")
    func reconnects() async throws {
        let pool = ConnectionPool(uri: try #require(TestDatabase.uri), size: 1)
        defer { pool.close() }
        let pid = try await pool.withConnection { try $0.query("SELECT pg_backend_pid() AS p").first?.int64("p") }
        let killer = ConnectionPool(uri: try #require(TestDatabase.uri), size: 1)
        defer { killer.close() }
        try await killer.withConnection { connection in
            _ = try connection.query("SELECT pg_terminate_backend($1::int)", .integer(pid ?? 0))
        }
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { try $0.query("SELECT 1 AS one") }
        }
        #expect(error?.code == .connectionFailure)
        let again = try await pool.withConnection { try $0.query("SELECT pg_backend_pid() AS p").first?.int64("p") }
        #expect(again != nil && again != pid)
    }

    @Test("a server that does not answer in time: the call fails, the connection is abandoned, the next one works")
    func answerDeadline() async throws {
        let pool = ConnectionPool(
            uri: try #require(TestDatabase.uri), size: 1, timeouts: PostgresTimeouts(answer: .seconds(2)))
        defer { pool.close() }
        let started = ContinuousClock.now
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { try $0.query("SELECT pg_sleep(120)") }
        }
        #expect(error?.code == .connectionFailure, "\(String(describing: error))")
        // Two seconds of deadline; the bound only says it did not wait for the two minutes of the sleep.
        #expect(ContinuousClock.now - started < .seconds(60))
        let one = try await pool.withConnection { try $0.query("SELECT 1 AS one").first?.int64("one") }
        #expect(one == 1)
    }

    @Test("work that finds no free connection within the pool's wait fails without running; the pool serves on")
    func boundedWait() async throws {
        let uri = try #require(TestDatabase.uri)
        let pool = ConnectionPool(uri: uri, size: 1, maximumWait: .seconds(1))
        defer { pool.close() }
        let ran = Latch()
        // Holds the only connection until the second call has given up (or 60 s, whichever comes first).
        let holder = Task {
            try await pool.withConnection { connection in
                _ = try connection.query("SELECT pg_sleep(8)")
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { _ in ran.open() }
        }
        #expect(error?.code == .connectionFailure)
        #expect(!ran.isOpen, "the late work must not run")
        try await holder.value
        let one = try await pool.withConnection { try $0.query("SELECT 1 AS one").first?.int64("one") }
        #expect(one == 1)
    }

    @Test("settings in the URI still apply beside the default timeouts (connect_timeout, application_name)")
    func uriSettings() async throws {
        let uri = try #require(TestDatabase.uri)
        let custom = uri + (uri.contains("?") ? "&" : "?") + "connect_timeout=7&application_name=pgtest"
        let pool = ConnectionPool(uri: custom, size: 1)
        defer { pool.close() }
        let name = try await pool.withConnection {
            try $0.query("SELECT current_setting('application_name') AS n").first?.string("n")
        }
        #expect(name == "pgtest")
    }
}

@Suite(
    "PostgreSQL round trips of reads and writes",
    .enabled(if: TestDatabase.isAvailable, "APPLEPAY_TEST_POSTGRES is not set"))
struct PostgresRoundTripTests {
    /// The round trips between the end of one call's body and the start of the next on the same connection: the
    /// first call's `COMMIT` and the second's `BEGIN`, if any.
    private func roundTripsBetween(
        _ first: (PostgresDatabase, @escaping @Sendable (PostgresConnection) throws(SQLError) -> Int) async throws ->
            Int,
        _ second: (PostgresDatabase, @escaping @Sendable (PostgresConnection) throws(SQLError) -> Int) async throws ->
            Int
    ) async throws -> Int {
        let database = PostgresDatabase(uri: try #require(TestDatabase.uri), poolSize: 1)
        defer { database.close() }
        let end = try await first(database) { connection throws(SQLError) in
            _ = try connection.query("SELECT 1 AS one" as SQLQuery)
            return connection.exchanges
        }
        let start = try await second(database) { connection throws(SQLError) in connection.exchanges }
        return start - end
    }

    @Test("a read sends its statements alone (no BEGIN, no COMMIT); a write's SET LOCAL goes with its BEGIN")
    func roundTrips() async throws {
        let read = {
            (database: PostgresDatabase, body: @escaping @Sendable (PostgresConnection) throws(SQLError) -> Int) in
            try await database.read(body)
        }
        func write(_ durability: WriteDurability)
            -> (PostgresDatabase, @escaping @Sendable (PostgresConnection) throws(SQLError) -> Int) async throws -> Int
        {
            { database, body in try await database.write(durability, body) }
        }
        #expect(try await roundTripsBetween(read, read) == 0)
        #expect(try await roundTripsBetween(write(.synced), write(.synced)) == 2)
        #expect(try await roundTripsBetween(write(.synced), write(.written)) == 2)
        // The setting is the transaction's alone, and it holds inside it.
        let database = PostgresDatabase(uri: try #require(TestDatabase.uri), poolSize: 1)
        defer { database.close() }
        func setting(_ durability: WriteDurability) async throws -> String? {
            try await database.write(durability) { connection throws(SQLError) in
                try connection.query("SHOW synchronous_commit" as SQLQuery).first?.optionalString("synchronous_commit")
            }
        }
        #expect(try await setting(.written) == "off")
        #expect(try await setting(.synced) == "on")
        #expect(
            try await database.read { connection throws(SQLError) in
                try connection.query("SHOW synchronous_commit" as SQLQuery).first?.optionalString("synchronous_commit")
            } == "on")
    }
}

@Suite("PostgreSQL under make test")
struct PostgresAvailabilityTests {
    @Test("make test provides a PostgreSQL cluster (APPLEPAY_TEST_POSTGRES) and it answers")
    func available() async throws {
        guard ProcessInfo.processInfo.environment["APPLEPAY_REQUIRE_POSTGRES"] == "1" || TestDatabase.isAvailable
        else { return }
        let uri = try #require(TestDatabase.uri, "make test sets APPLEPAY_TEST_POSTGRES (scripts/test-postgres.sh)")
        let pool = ConnectionPool(uri: uri, size: 1)
        defer { pool.close() }
        let one = try await pool.withConnection { try $0.query("SELECT 1 AS one").first?.int64("one") }
        #expect(one == 1)
    }
}

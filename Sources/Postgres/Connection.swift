internal import CPostgres
import Foundation

/// One connection to a PostgreSQL server: the only owner of its `PGconn*`. Statements with parameters are
/// prepared once per connection (`PQprepare`) and then run with `PQexecPrepared`.
///
/// Every call blocks the calling thread until the server answers: use a connection from a thread of its own
/// (``ConnectionPool`` does), never from Swift's shared pool. Not `Sendable`: one thread at a time.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// SQL text → name of its prepared statement on this connection.
    private var prepared: [String: String] = [:]
    private var transactionDepth = 0

    /// Connects with a libpq connection string or URI (`postgresql://user@host:5432/db`,
    /// `postgresql:///db?host=/run/postgresql`).
    /// - Throws: ``PostgresError`` `connectionFailure` with libpq's reason.
    public init(_ uri: String) throws(PostgresError) {
        guard let handle = PQconnectdb(uri) else {
            throw PostgresError(.connectionFailure, "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.message(handle)
            PQfinish(handle)
            throw PostgresError(.connectionFailure, "cannot connect: \(message)")
        }
        // Notices (`... already exists, skipping`) would otherwise go to standard error.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is still usable (libpq notices a broken socket when a call fails).
    public var isOpen: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs one or more statements without parameters (migrations, `BEGIN`).
    /// - Throws: ``PostgresError``.
    public func execute(_ sql: String) throws(PostgresError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs a statement and returns its rows.
    /// - Throws: ``PostgresError``.
    @discardableResult
    public func query(_ sql: String, _ parameters: PostgresValue...) throws(PostgresError) -> [PostgresRow] {
        try query(sql, parameters: parameters)
    }

    /// Runs a statement and returns its rows.
    /// - Throws: ``PostgresError``.
    public func query(_ sql: String, parameters: [PostgresValue]) throws(PostgresError) -> [PostgresRow] {
        try withResult(sql, parameters) { result in
            let columns = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
            return (0..<PQntuples(result)).map { row in
                PostgresRow(
                    columns: columns,
                    values: (0..<Int32(columns.count)).map { column in
                        PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                    })
            }
        }
    }

    /// Runs a statement and returns the number of rows it changed.
    /// - Throws: ``PostgresError``.
    @discardableResult
    public func run(_ sql: String, _ parameters: PostgresValue...) throws(PostgresError) -> Int {
        try run(sql, parameters: parameters)
    }

    /// Runs a statement and returns the number of rows it changed.
    /// - Throws: ``PostgresError``.
    @discardableResult
    public func run(_ sql: String, parameters: [PostgresValue]) throws(PostgresError) -> Int {
        try withResult(sql, parameters) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
    }

    /// The isolation level of ``transaction(_:_:)``.
    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws. Nested calls use savepoints.
    /// - Throws: what `body` throws, or ``PostgresError`` from `BEGIN`/`COMMIT` (a `COMMIT` that fails leaves
    ///   nothing written).
    public func transaction<T>(
        _ isolation: Isolation = .readCommitted, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        let depth = transactionDepth
        try execute(depth == 0 ? "BEGIN ISOLATION LEVEL \(isolation.rawValue)" : "SAVEPOINT s\(depth)")
        transactionDepth += 1
        defer { transactionDepth = depth }
        let value: T
        do {
            value = try body(self)
        } catch {
            if isOpen { try? execute(depth == 0 ? "ROLLBACK" : "ROLLBACK TO SAVEPOINT s\(depth)") }
            throw error
        }
        do {
            try execute(depth == 0 ? "COMMIT" : "RELEASE SAVEPOINT s\(depth)")
        } catch {
            if isOpen, depth == 0 { try? execute("ROLLBACK") }
            throw error
        }
        return value
    }

    // MARK: Private

    private func withResult<T>(_ sql: String, _ parameters: [PostgresValue], _ body: (OpaquePointer) -> T)
        throws(PostgresError) -> T
    {
        let name = try statementName(for: sql, parameterCount: parameters.count)
        let texts = parameters.map(\.wireText)
        let result = withCStrings(texts) { pointers in
            PQexecPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
        }
        defer { PQclear(result) }
        try check(result, sql: sql)
        guard let result else { throw PostgresError(.connectionFailure, Self.message(handle)) }
        return body(result)
    }

    private func statementName(for sql: String, parameterCount: Int) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count + 1)"
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        try check(result, sql: sql)
        prepared[sql] = name
        return name
    }

    private func check(_ result: OpaquePointer?, sql: String) throws(PostgresError) {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK, status != PGRES_EMPTY_QUERY else { return }
        let state = result.flatMap { PQresultErrorField($0, CPostgres_DIAG_SQLSTATE()) }.map { String(cString: $0) }
        let primary = result.flatMap { PQresultErrorField($0, CPostgres_DIAG_MESSAGE_PRIMARY()) }.map {
            String(cString: $0)
        }
        let message = primary ?? Self.message(handle)
        if let state {
            throw PostgresError(PostgresError.Code(sqlState: state), message, sqlState: state)
        }
        // No SQLSTATE: the server never answered (the socket closed, the server went away).
        throw PostgresError(isOpen ? .other : .connectionFailure, message)
    }

    private static func message(_ handle: OpaquePointer) -> String {
        guard let text = PQerrorMessage(handle) else { return "unknown libpq error" }
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}

/// Calls `body` with C strings for `texts` (`nil` stays a null pointer: SQL NULL); the pointers live only inside it.
private func withCStrings<T>(_ texts: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = texts.map { text in text.map { strdup($0) } }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}

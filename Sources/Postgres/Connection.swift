internal import CPostgres
import Foundation

/// One connection to a PostgreSQL server: the only owner of its `PGconn*`. Statements with parameters are
/// prepared once per connection (`PQsendPrepare`) and then run with `PQsendQueryPrepared`.
///
/// Every call blocks the calling thread until the server answers, at most ``PostgresTimeouts/answer`` (the socket
/// is polled with that deadline, so a server that went away cannot hold the thread): use a connection from a thread
/// of its own (``ConnectionPool`` does), never from Swift's shared pool. Not `Sendable`: one thread at a time.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// SQL text → name of its prepared statement on this connection.
    private var prepared: [String: String] = [:]
    private var transactionDepth = 0
    private let timeouts: PostgresTimeouts
    /// Set when an answer did not come in time: the connection is in an unknown state and is never used again.
    private var abandoned = false
    /// Round trips to the server so far (commands sent and answered, or failed), for tests.
    package private(set) var exchanges = 0

    /// Connects with a libpq connection string or URI (`postgresql://user@host:5432/db`,
    /// `postgresql:///db?host=/run/postgresql`).
    ///
    /// Unless the URI says otherwise, libpq gets `connect_timeout` from `timeouts` and TCP keepalives and
    /// `tcp_user_timeout`, so a server that vanished from the network is noticed instead of waited for.
    /// - Throws: ``PostgresError`` `connectionFailure` with libpq's reason.
    public init(_ uri: String, timeouts: PostgresTimeouts = .standard) throws(PostgresError) {
        let handle = withCStrings(timeouts.connectionSettings.map(\.0) + ["dbname", nil]) { keywords in
            withCStrings(timeouts.connectionSettings.map(\.1) + [uri, nil]) { values in
                // Settings first, then the URI expanded in `dbname`: what the URI says wins.
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let handle else { throw PostgresError(.connectionFailure, "libpq could not allocate a connection") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.message(handle)
            PQfinish(handle)
            throw PostgresError(.connectionFailure, "cannot connect: \(message)")
        }
        // Notices (`... already exists, skipping`) would otherwise go to standard error.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        self.handle = handle
        self.timeouts = timeouts
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is still usable (libpq notices a broken socket when a call fails).
    public var isOpen: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    /// Runs one or more statements without parameters (migrations, `BEGIN`).
    /// - Throws: ``PostgresError``.
    public func execute(_ sql: String) throws(PostgresError) {
        let result = try exchange { PQsendQuery(handle, sql) }
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
    /// With `synchronousCommit` false the transaction commits without waiting for its WAL to be flushed
    /// (`SET LOCAL synchronous_commit TO OFF`, sent with `BEGIN` in one round trip; ignored by a nested call).
    /// - Throws: what `body` throws, or ``PostgresError`` from `BEGIN`/`COMMIT` (a `COMMIT` that fails leaves
    ///   nothing written).
    public func transaction<T>(
        _ isolation: Isolation = .readCommitted, synchronousCommit: Bool = true,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        let depth = transactionDepth
        let begin =
            "BEGIN ISOLATION LEVEL \(isolation.rawValue)"
            + (synchronousCommit ? "" : "; SET LOCAL synchronous_commit TO OFF")
        try execute(depth == 0 ? begin : "SAVEPOINT s\(depth)")
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
        let result = try exchange {
            withCStrings(texts) { pointers in
                PQsendQueryPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
            }
        }
        defer { PQclear(result) }
        try check(result, sql: sql)
        return body(result)
    }

    private func statementName(for sql: String, parameterCount: Int) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count + 1)"
        let result = try exchange { PQsendPrepare(handle, name, sql, 0, nil) }
        defer { PQclear(result) }
        try check(result, sql: sql)
        prepared[sql] = name
        return name
    }

    /// Sends a command (`send` is one of libpq's `PQsend...` calls) and waits for its answer without ever blocking
    /// longer than ``PostgresTimeouts/answer``: the socket is polled, never read blindly. Returns the command's
    /// result (its error, when one of several statements failed).
    /// - Throws: ``PostgresError`` `connectionFailure` when the command cannot be sent, the connection breaks,
    ///   or no answer comes in time (the connection is then abandoned: the pool opens another).
    private func exchange(_ send: () -> Int32) throws(PostgresError) -> OpaquePointer {
        guard !abandoned else {
            throw PostgresError(.connectionFailure, "the connection was abandoned after an answer came too late")
        }
        exchanges += 1
        guard send() == 1 else { throw PostgresError(.connectionFailure, Self.message(handle)) }
        let deadline = ContinuousClock.now + timeouts.answer
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                do {
                    try waitForInput(until: deadline)
                } catch {
                    PQclear(kept)
                    throw error
                }
                guard PQconsumeInput(handle) == 1 else {
                    PQclear(kept)
                    throw PostgresError(.connectionFailure, Self.message(handle))
                }
            }
            guard let result = PQgetResult(handle) else { break }
            if let previous = kept, PQresultStatus(previous) == PGRES_FATAL_ERROR {
                PQclear(result)  // the first failure is the answer
            } else {
                PQclear(kept)
                kept = result
            }
        }
        guard let kept else { throw PostgresError(isOpen ? .other : .connectionFailure, Self.message(handle)) }
        return kept
    }

    /// Returns when the socket has something to read; throws once `deadline` passed.
    private func waitForInput(until deadline: ContinuousClock.Instant) throws(PostgresError) {
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(.connectionFailure, Self.message(handle)) }
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                abandoned = true
                throw PostgresError(
                    .connectionFailure, "no answer from the server within \(timeouts.answer); connection abandoned")
            }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(max(1, min(milliseconds, 1000))))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR {
                throw PostgresError(.connectionFailure, "poll failed on the connection's socket (errno \(errno))")
            }
        }
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

/// How long a connection waits for the server: a server that stopped, restarted or vanished from the network makes
/// calls fail with `connectionFailure` within these bounds, never block a thread for good.
public struct PostgresTimeouts: Sendable, Equatable {
    /// Opening a connection (libpq's `connect_timeout`, in whole seconds, at least 2).
    public var connect: Duration
    /// The answer to one statement: past it the connection is abandoned (its outcome is unknown, like any lost
    /// connection's) and the call fails. Also the bound on TCP retransmissions (`tcp_user_timeout`).
    public var answer: Duration
    /// Idle time before TCP keepalive probes start (libpq's `keepalives_idle`; three probes `keepaliveInterval`
    /// apart).
    public var keepaliveIdle: Duration
    public var keepaliveInterval: Duration

    public init(
        connect: Duration = .seconds(5), answer: Duration = .seconds(30), keepaliveIdle: Duration = .seconds(10),
        keepaliveInterval: Duration = .seconds(5)
    ) {
        self.connect = connect
        self.answer = answer
        self.keepaliveIdle = keepaliveIdle
        self.keepaliveInterval = keepaliveInterval
    }

    /// 5 s to connect, 30 s for an answer, keepalives after 10 s idle.
    public static let standard = PostgresTimeouts()

    /// libpq's settings for these limits (a URI that names any of them wins).
    var connectionSettings: [(String, String)] {
        func seconds(_ duration: Duration, atLeast minimum: Int64) -> String {
            String(max(minimum, duration.components.seconds))
        }
        return [
            ("connect_timeout", seconds(connect, atLeast: 2)),
            ("keepalives", "1"),
            ("keepalives_idle", seconds(keepaliveIdle, atLeast: 1)),
            ("keepalives_interval", seconds(keepaliveInterval, atLeast: 1)),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", String(max(1000, answer.components.seconds * 1000))),
        ]
    }
}

/// Calls `body` with C strings for `texts` (`nil` stays a null pointer: SQL NULL); the pointers live only inside it.
private func withCStrings<T>(_ texts: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = texts.map { text in text.map { strdup($0) } }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}

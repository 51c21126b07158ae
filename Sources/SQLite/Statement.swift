internal import CSQLite
import Foundation

/// One prepared statement: prepared in the throwing `init`, finalized in `deinit`.
///
/// A statement from ``Connection/prepare(_:)`` keeps its ``Connection`` alive. The connection's own cache of
/// prepared statements (behind `run` and `query`) holds statements that do not: the connection owns them and
/// finalizes them before it closes. Not `Sendable` (a statement is used where its connection is).
public final class Statement {
    private let handle: OpaquePointer
    /// Strong for a statement handed out by `prepare`; nil for one in the connection's cache (the connection owns
    /// the cache, so the statement cannot outlive it, and a strong reference would be a cycle).
    private let owner: Connection?
    private unowned let runsOn: Connection
    /// The connection the statement runs on.
    public var connection: Connection { runsOn }
    /// The SQL text.
    public let sql: String
    /// The result's column names, read once: every row shares the one array (a row of an order's 29 columns made
    /// 29 strings, some on the heap, each time). Read again if the column count changes (a `SELECT *` that SQLite
    /// prepared again after a schema change).
    private var columnNames: [String] = []

    /// Prepares exactly one SQL statement.
    /// - Parameters:
    ///   - retainingConnection: false only for the connection's statement cache (see `owner`).
    /// - Throws: ``SQLiteError`` for invalid SQL, empty SQL, or trailing statements after the first.
    init(connection: Connection, sql: String, retainingConnection: Bool = true) throws(SQLiteError) {
        var pointer: OpaquePointer?
        var trailingText = ""
        let status = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            let status = sqlite3_prepare_v2(connection.handle, text, -1, &pointer, &tail)
            if let tail { trailingText = String(cString: tail) }
            return status
        }
        guard status == SQLITE_OK else {
            if let pointer { sqlite3_finalize(pointer) }
            throw connection.lastError(status, sql: sql)
        }
        guard let pointer else { throw SQLiteError(.misuse, "the SQL holds no statement", sql: sql) }
        guard
            trailingText.trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: ";"))).isEmpty
        else {
            sqlite3_finalize(pointer)
            throw SQLiteError(.misuse, "prepare takes one statement; use execute for several", sql: sql)
        }
        self.handle = pointer
        self.owner = retainingConnection ? connection : nil
        self.runsOn = connection
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Number of `?` parameters.
    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// Resets the statement and binds values to its parameters, in order (`?1`, `?2`, ...).
    /// - Throws: ``SQLiteError`` (`range`) if the count does not match the statement's parameters.
    public func bind(_ values: [Value]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        guard values.count == parameterCount else {
            throw SQLiteError(
                .range, "the statement takes \(parameterCount) values, \(values.count) given", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)  // at most parameterCount, an Int32, by the guard above
            let status: Int32
            switch value {
            case .null:
                status = sqlite3_bind_null(handle, index)
            case .integer(let integer):
                status = sqlite3_bind_int64(handle, index, integer)
            case .real(let real):
                status = sqlite3_bind_double(handle, index, real)
            case .text(let text):
                // The 64-bit binds take any length: SQLite answers SQLITE_TOOBIG past its limit.
                status = text.withCString { chars in
                    sqlite3_bind_text64(
                        handle, index, chars, UInt64(text.utf8.count), CSQLite_TRANSIENT(), UInt8(SQLITE_UTF8))
                }
            case .blob(let data):
                if data.isEmpty {
                    status = sqlite3_bind_zeroblob(handle, index, 0)
                } else {
                    status = data.withUnsafeBytes { bytes in
                        sqlite3_bind_blob64(handle, index, bytes.baseAddress, UInt64(bytes.count), CSQLite_TRANSIENT())
                    }
                }
            }
            guard status == SQLITE_OK else { throw connection.lastError(status, sql: sql) }
        }
    }

    /// Advances to the next row.
    /// - Returns: `true` when a row is available (read it with ``row()``), `false` when done.
    /// - Throws: ``SQLiteError``; the statement is reset.
    public func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.lastError(status, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Resets the statement so it can run again (bindings are kept).
    public func reset() { sqlite3_reset(handle) }

    /// The current row's values.
    public func row() -> Row {
        let count = sqlite3_column_count(handle)
        if columnNames.count != Int(count) {
            columnNames = (0..<count).map { String(cString: sqlite3_column_name(handle, $0)) }
        }
        var values: [Value] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count { values.append(value(at: column)) }
        return Row(columns: columnNames, values: values)
    }

    private func value(at column: Int32) -> Value {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard let text = sqlite3_column_text(handle, column) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard let bytes = sqlite3_column_blob(handle, column), count > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default:
            return .null
        }
    }

    /// Binds, runs to completion, and returns the number of rows changed.
    /// - Throws: ``SQLiteError``.
    @discardableResult
    public func run(_ values: [Value] = []) throws(SQLiteError) -> Int {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {}
        return Int(sqlite3_changes(connection.handle))
    }

    /// Binds, runs, and returns every row.
    /// - Throws: ``SQLiteError``.
    public func rows(_ values: [Value] = []) throws(SQLiteError) -> [Row] {
        try bind(values)
        defer { sqlite3_reset(handle) }
        var rows: [Row] = []
        while try step() { rows.append(row()) }
        return rows
    }
}

@available(*, unavailable, message: "a Statement is used where its Connection is")
extension Statement: Sendable {}

import Foundation
import SQLCore

/// The SQLite connection as an ``SQLConnection``: queries with `?` placeholders run through the connection's cache
/// of prepared statements, exactly as `run` and `query` with SQL text do.
extension Connection: SQLConnection {
    public var dialect: SQLDialect { .sqlite }

    public func query(_ query: SQLQuery) throws(SQLError) -> [SQLiteRow] {
        let values = query.binds.map(Value.init)
        return try SQLError.translating(SQLError.init(sqlite:)) { () throws(SQLiteError) in
            try self.query(query.text, values: values).map(SQLiteRow.init)
        }
    }

    @discardableResult
    public func run(_ query: SQLQuery) throws(SQLError) -> Int {
        let values = query.binds.map(Value.init)
        return try SQLError.translating(SQLError.init(sqlite:)) { () throws(SQLiteError) in
            try run(query.text, values: values)
        }
    }

    public func execute(script: String) throws(SQLError) {
        try SQLError.translating(SQLError.init(sqlite:)) { () throws(SQLiteError) in try execute(script) }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction (a savepoint inside another), errors as ``SQLError``.
    public func writeTransaction<T>(_ body: (Connection) throws(SQLError) -> T) throws(SQLError) -> T {
        do {
            return try transaction(.immediate) { connection throws(SQLError) in try body(connection) }
        } catch {
            throw SQLError(any: error)
        }
    }
}

extension Value {
    /// A bound value in SQLite's storage classes (a boolean as the integer 0 or 1).
    public init(_ value: SQLValue) {
        self = value.converted(
            null: .null, integer: { .integer($0) }, text: { .text($0) }, boolean: { .integer($0 ? 1 : 0) })
    }
}

/// A result row of an ``SQLConnection`` query on SQLite.
public struct SQLiteRow: SQLRow, Hashable {
    /// The row as the SQLite wrapper read it.
    public let row: Row

    public init(_ row: Row) { self.row = row }

    private func value(_ column: String) throws(SQLError) -> Value {
        guard let value = row[column] else { throw SQLError(.typeMismatch, "no column \"\(column)\" in the row") }
        return value
    }

    public func optionalString(_ column: String) throws(SQLError) -> String? {
        switch try value(column) {
        case .text(let text): return text
        case .null: return nil
        case let other: throw Self.mismatch(column, other, "text")
        }
    }

    public func optionalInt64(_ column: String) throws(SQLError) -> Int64? {
        switch try value(column) {
        case .integer(let number): return number
        case .null: return nil
        case let other: throw Self.mismatch(column, other, "an integer")
        }
    }

    public func optionalBool(_ column: String) throws(SQLError) -> Bool? {
        switch try value(column) {
        case .integer(let number): return number != 0
        case .null: return nil
        case let other: throw Self.mismatch(column, other, "a boolean (0 or 1)")
        }
    }

    private static func mismatch(_ column: String, _ value: Value, _ expected: String) -> SQLError {
        SQLError(.typeMismatch, "column \"\(column)\" is \(value), expected \(expected)")
    }
}

extension SQLError {
    /// SQLite's error under the code that means the same for every backend.
    public init(sqlite error: SQLiteError) {
        let code: SQLError.Code =
            switch error.code {
            case .constraintUnique, .constraintPrimaryKey, .constraintRowID: .uniqueViolation
            case .typeMismatch: .typeMismatch
            // A trigger's RAISE, as PostgreSQL's RAISE EXCEPTION: not a constraint of the schema's columns.
            case .constraintTrigger: .other
            case .cannotOpen: .connectionFailure
            case .busySnapshot: .serializationFailure
            case .migration: .renamedMigration
            default: error.code.primary == .constraint ? .constraintViolation : .other
            }
        self.init(code, "\(error)", underlying: error)
    }

    /// `error` if it is one, SQLite's translated, anything else as `other`.
    init(any error: any Error) { self.init(error, translating: SQLError.init(sqlite:)) }
}

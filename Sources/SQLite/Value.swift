import Foundation

/// A value bound to or read from a statement: SQLite's storage classes.
///
/// Store money as `.integer` minor units, never `.real`.
public enum Value: Sendable, Hashable, CustomStringConvertible {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case null

    /// `.integer`, or `.null` for `nil`.
    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    /// `.integer`, or `.null` for `nil`.
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    /// `.text`, or `.null` for `nil`.
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    /// `.blob`, or `.null` for `nil`.
    public init(_ value: Data?) { self = value.map { .blob($0) } ?? .null }

    /// The payload of an `.integer`, `.text` or `.blob` (nil for another kind).
    var integerPayload: Int64? { if case .integer(let value) = self { value } else { nil } }
    var textPayload: String? { if case .text(let value) = self { value } else { nil } }
    var blobPayload: Data? { if case .blob(let value) = self { value } else { nil } }

    /// Describes the kind and size only, so that bound secrets never reach a log through a value.
    public var description: String {
        switch self {
        case .integer: "integer"
        case .real: "real"
        case .text(let text): "text(\(text.utf8.count) bytes)"
        case .blob(let data): "blob(\(data.count) bytes)"
        case .null: "null"
        }
    }
}

extension Value: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// One result row: column names and values, read eagerly so it outlives the statement.
public struct Row: Sendable, Hashable {
    /// Column names, in select order.
    public let columns: [String]
    /// Values, in select order.
    public let values: [Value]

    public init(columns: [String], values: [Value]) {
        self.columns = columns
        self.values = values
    }

    /// The value of a column by name (`nil` if the row has no such column).
    public subscript(_ column: String) -> Value? {
        // The lengths first: a row of thirty columns read by name compared most names in full (the names SQLite
        // hands back and the program's literals never share storage, so no comparison took the identical fast path).
        let length = column.utf8.count
        return columns.firstIndex { $0.utf8.count == length && $0 == column }.map { values[$0] }
    }

    private func value(_ column: String) throws(SQLiteError) -> Value {
        guard let value = self[column] else { throw SQLiteError(.typeMismatch, "no column \"\(column)\" in the row") }
        return value
    }

    /// An INTEGER column. - Throws: ``SQLiteError/Code/typeMismatch`` for another type or NULL.
    public func int64(_ column: String) throws(SQLiteError) -> Int64 {
        try required(column, "an integer") { $0.integerPayload }
    }

    /// An INTEGER column or NULL.
    public func optionalInt64(_ column: String) throws(SQLiteError) -> Int64? {
        try optional(column, "an integer or NULL") { $0.integerPayload }
    }

    /// A TEXT column. - Throws: ``SQLiteError/Code/typeMismatch`` for another type or NULL.
    public func string(_ column: String) throws(SQLiteError) -> String {
        try required(column, "text") { $0.textPayload }
    }

    /// A TEXT column or NULL.
    public func optionalString(_ column: String) throws(SQLiteError) -> String? {
        try optional(column, "text or NULL") { $0.textPayload }
    }

    /// A BLOB column. - Throws: ``SQLiteError/Code/typeMismatch`` for another type or NULL.
    public func data(_ column: String) throws(SQLiteError) -> Data {
        try required(column, "a blob") { $0.blobPayload }
    }

    /// What `read` takes from the column's value; `typeMismatch` naming `expected` when it takes nothing.
    private func required<T>(_ column: String, _ expected: String, _ read: (Value) -> T?) throws(SQLiteError) -> T {
        guard let value = read(try value(column)) else { throw mismatch(column, expected) }
        return value
    }

    /// `nil` for NULL, else what `read` takes from the column's value; `typeMismatch` naming `expected` otherwise.
    private func optional<T>(_ column: String, _ expected: String, _ read: (Value) -> T?) throws(SQLiteError) -> T? {
        let value = try value(column)
        if case .null = value { return nil }
        guard let read = read(value) else { throw mismatch(column, expected) }
        return read
    }

    private func mismatch(_ column: String, _ expected: String) -> SQLiteError {
        SQLiteError(
            .typeMismatch, "column \"\(column)\" is \(self[column]?.description ?? "missing"), expected \(expected)")
    }
}

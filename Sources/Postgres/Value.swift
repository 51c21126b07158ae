/// A parameter of a statement. Sent in PostgreSQL's text format; the server infers each parameter's type from the
/// statement (`$1` compared with a `bigint` column is read as one).
public enum PostgresValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case text(String)
    case integer(Int64)
    case boolean(Bool)

    /// `.text` or `.null`.
    public init(_ text: String?) { self = text.map { .text($0) } ?? .null }

    /// The text format, `nil` for NULL.
    var wireText: String? {
        switch self {
        case .null: nil
        case .text(let text): text
        case .integer(let value): String(value)
        case .boolean(let value): value ? "t" : "f"
        }
    }

    /// Sizes only: statement parameters may be personal data.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .text(let text): "text(\(text.utf8.count) bytes)"
        case .integer: "integer"
        case .boolean: "boolean"
        }
    }
}

/// One row of a result, its columns by name, as the server sent them in text format.
public struct PostgresRow: Sendable, Equatable {
    /// Column names, in order.
    public let columns: [String]
    /// Values in text format; `nil` is NULL.
    public let values: [String?]

    public init(columns: [String], values: [String?]) {
        self.columns = columns
        self.values = values
    }

    /// The value of `column` (`nil` for NULL).
    /// - Throws: ``PostgresError`` `typeMismatch` when there is no such column.
    public func optionalString(_ column: String) throws(PostgresError) -> String? {
        guard let index = columns.firstIndex(of: column) else {
            throw PostgresError(.typeMismatch, "no column \(column) in the result")
        }
        return values[index]
    }

    /// The text of a NOT NULL column.
    public func string(_ column: String) throws(PostgresError) -> String {
        guard let value = try optionalString(column) else {
            throw PostgresError(.typeMismatch, "column \(column) is NULL")
        }
        return value
    }

    /// An integer column (`bigint`, `integer`, a `count(*)`).
    public func int64(_ column: String) throws(PostgresError) -> Int64 {
        guard let value = Int64(try string(column)) else {
            throw PostgresError(.typeMismatch, "column \(column) is not an integer")
        }
        return value
    }

    /// A `boolean` column.
    public func bool(_ column: String) throws(PostgresError) -> Bool { try string(column) == "t" }
}

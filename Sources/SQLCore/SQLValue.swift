/// A value bound to a statement, in the types every backend has. Money is `.integer` minor units, times `.integer`
/// Unix milliseconds.
public enum SQLValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case text(String)
    /// Stored as `boolean` where the backend has one, else as the integer 0 or 1.
    case boolean(Bool)

    /// The value in a backend's own type: one function per kind.
    public func converted<Value>(
        null: Value, integer: (Int64) -> Value, text: (String) -> Value, boolean: (Bool) -> Value
    ) -> Value {
        switch self {
        case .null: null
        case .integer(let number): integer(number)
        case .text(let string): text(string)
        case .boolean(let flag): boolean(flag)
        }
    }

    /// Kind and size only: bound values may be personal data.
    public var description: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .text(let text): "text(\(text.utf8.count) bytes)"
        case .boolean: "boolean"
        }
    }
}

/// A Swift value that binds as an ``SQLValue`` (`\(bind: value)` in an ``SQLQuery``).
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .boolean(self) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    /// NULL for `nil`.
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

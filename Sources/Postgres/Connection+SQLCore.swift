import SQLCore

/// The PostgreSQL connection as an ``SQLConnection``: a query's `?` placeholders become `$1, $2, ...`, and each
/// statement is prepared once per connection as with SQL text.
extension PostgresConnection: SQLConnection {
    public var dialect: SQLDialect { .postgres }

    public func query(_ query: SQLQuery) throws(SQLError) -> [PostgresSQLRow] {
        do {
            return try self.query(query.sql(for: .postgres), parameters: query.binds.map(PostgresValue.init)).map(
                PostgresSQLRow.init)
        } catch {
            throw SQLError(postgres: error)
        }
    }

    @discardableResult
    public func run(_ query: SQLQuery) throws(SQLError) -> Int {
        do {
            return try run(query.sql(for: .postgres), parameters: query.binds.map(PostgresValue.init))
        } catch {
            throw SQLError(postgres: error)
        }
    }

    public func execute(script: String) throws(SQLError) {
        do {
            try execute(script)
        } catch {
            throw SQLError(postgres: error)
        }
    }
}

extension PostgresValue {
    /// A parameter in PostgreSQL's text format.
    public init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .text(let text): self = .text(text)
        case .boolean(let flag): self = .boolean(flag)
        }
    }
}

/// A result row of an ``SQLConnection`` query on PostgreSQL (values in text format, parsed by the getters).
public struct PostgresSQLRow: SQLRow, Equatable {
    /// The row as the PostgreSQL wrapper read it.
    public let row: PostgresRow

    public init(_ row: PostgresRow) { self.row = row }

    public func optionalString(_ column: String) throws(SQLError) -> String? {
        do {
            return try row.optionalString(column)
        } catch {
            throw SQLError(postgres: error)
        }
    }

    public func optionalInt64(_ column: String) throws(SQLError) -> Int64? {
        guard let text = try optionalString(column) else { return nil }
        guard let number = Int64(text) else { throw SQLError(.typeMismatch, "column \"\(column)\" is not an integer") }
        return number
    }

    public func optionalBool(_ column: String) throws(SQLError) -> Bool? {
        switch try optionalString(column) {
        case nil: return nil
        case "t": return true
        case "f": return false
        default: throw SQLError(.typeMismatch, "column \"\(column)\" is not a boolean")
        }
    }
}

extension SQLError {
    /// PostgreSQL's error under the code that means the same for every backend.
    public init(postgres error: PostgresError) {
        let code: SQLError.Code =
            switch error.code {
            case .uniqueViolation: .uniqueViolation
            case .foreignKeyViolation, .checkViolation, .notNullViolation, .integrityViolation: .constraintViolation
            case .serializationFailure, .deadlockDetected: .serializationFailure
            case .connectionFailure: .connectionFailure
            case .typeMismatch: .typeMismatch
            case .migration: .renamedMigration
            default: .other
            }
        self.init(code, "\(error)", underlying: error)
    }

    /// `error` if it is one, PostgreSQL's translated, anything else as `other`.
    init(any error: any Error) {
        switch error {
        case let error as SQLError: self = error
        case let error as PostgresError: self.init(postgres: error)
        default: self.init(.other, "\(error)")
        }
    }
}

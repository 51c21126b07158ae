import SQLCore

/// The PostgreSQL connection as an ``SQLConnection``: a query's `?` placeholders become `$1, $2, ...`, and each
/// statement is prepared once per connection as with SQL text.
extension PostgresConnection: SQLConnection {
    public var dialect: SQLDialect { .postgres }

    public func query(_ query: SQLQuery) throws(SQLError) -> [PostgresSQLRow] {
        try statement(query) { sql, parameters throws(PostgresError) in
            try self.query(sql, parameters: parameters).map(PostgresSQLRow.init)
        }
    }

    @discardableResult
    public func run(_ query: SQLQuery) throws(SQLError) -> Int {
        try statement(query) { sql, parameters throws(PostgresError) in try run(sql, parameters: parameters) }
    }

    public func execute(script: String) throws(SQLError) {
        try SQLError.translating(SQLError.init(postgres:)) { () throws(PostgresError) in try execute(script) }
    }

    /// `query` in `$n` form and its parameters, handed to `body`; errors translated.
    private func statement<T>(_ query: SQLQuery, _ body: (String, [PostgresValue]) throws(PostgresError) -> T)
        throws(SQLError) -> T
    {
        let parameters = query.binds.map(PostgresValue.init)
        return try SQLError.translating(SQLError.init(postgres:)) { () throws(PostgresError) in
            try body(query.sql(for: .postgres), parameters)
        }
    }
}

extension PostgresValue {
    /// A parameter in PostgreSQL's text format.
    public init(_ value: SQLValue) {
        self = value.converted(null: .null, integer: { .integer($0) }, text: { .text($0) }, boolean: { .boolean($0) })
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
        self.init(Self.postgresCodes[error.code] ?? .other, "\(error)", underlying: error)
    }

    /// The codes that mean the same; every other one is `other`.
    private static let postgresCodes: [PostgresError.Code: SQLError.Code] = [
        .uniqueViolation: .uniqueViolation, .foreignKeyViolation: .constraintViolation,
        .checkViolation: .constraintViolation, .notNullViolation: .constraintViolation,
        .integrityViolation: .constraintViolation, .serializationFailure: .serializationFailure,
        .deadlockDetected: .serializationFailure, .connectionFailure: .connectionFailure,
        .typeMismatch: .typeMismatch, .migration: .renamedMigration,
    ]

    /// `error` if it is one, PostgreSQL's translated, anything else as `other`.
    init(any error: any Error) { self.init(error, translating: SQLError.init(postgres:)) }
}

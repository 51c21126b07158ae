/// One result row, its columns read by name. A getter throws ``SQLError`` `typeMismatch` naming the column when it
/// is missing, NULL where a value is required, or of another type.
public protocol SQLRow: Sendable {
    /// A text column, `nil` for NULL.
    func optionalString(_ column: String) throws(SQLError) -> String?
    /// An integer column, `nil` for NULL.
    func optionalInt64(_ column: String) throws(SQLError) -> Int64?
    /// A boolean column (an integer 0 or 1 on SQLite), `nil` for NULL.
    func optionalBool(_ column: String) throws(SQLError) -> Bool?
}

extension SQLRow {
    /// A NOT NULL text column.
    public func string(_ column: String) throws(SQLError) -> String {
        guard let value = try optionalString(column) else { throw Self.null(column) }
        return value
    }

    /// A NOT NULL integer column.
    public func int64(_ column: String) throws(SQLError) -> Int64 {
        guard let value = try optionalInt64(column) else { throw Self.null(column) }
        return value
    }

    /// A NOT NULL boolean column.
    public func bool(_ column: String) throws(SQLError) -> Bool {
        guard let value = try optionalBool(column) else { throw Self.null(column) }
        return value
    }

    private static func null(_ column: String) -> SQLError {
        SQLError(.typeMismatch, "column \"\(column)\" is NULL")
    }
}

/// A connection inside a read or a write transaction of an ``SQLDatabase``. Its calls block: it is used only inside
/// the body that the database runs on a thread of its own (or the caller's, for an SQLite read).
public protocol SQLConnection {
    associatedtype ResultRow: SQLRow
    /// The SQL this connection speaks.
    var dialect: SQLDialect { get }
    /// Runs a query and returns every row.
    func query(_ query: SQLQuery) throws(SQLError) -> [ResultRow]
    /// Runs a statement and returns how many rows it changed.
    @discardableResult func run(_ query: SQLQuery) throws(SQLError) -> Int
    /// Runs one or more statements with no values and no result (a schema).
    func execute(script: String) throws(SQLError)
}

extension SQLConnection {
    /// Runs a statement that must change exactly `count` rows (an update from an expected state): any other number
    /// throws ``SQLError`` `unexpectedRowCount`, which rolls the transaction back.
    public func run(_ query: SQLQuery, expectingRows count: Int) throws(SQLError) {
        let changed = try run(query)
        guard changed == count else {
            throw SQLError(.unexpectedRowCount, "expected \(count) changed rows, got \(changed): \(query.text)")
        }
    }
}

/// A database the stores are written against: reads and write transactions, each a closure given a connection.
///
/// A write commits when its body returns and rolls back when it throws; an adapter may run it again after a lost
/// race or a connection lost before it began (the body must be a function of what it reads). A read sees committed
/// data only. Each adapter keeps its backend's strengths: SQLite's one writer thread with group commit and readers
/// on the caller's thread, PostgreSQL's pool and retries.
public protocol SQLDatabase: Sendable {
    associatedtype Connection: SQLConnection
    /// The SQL this database speaks.
    var dialect: SQLDialect { get }
    /// Runs `body` with a connection that reads committed data.
    func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws(SQLError) -> T) async throws(SQLError) -> T
    /// Runs `body` in a write transaction and returns what it returned once the transaction committed, with
    /// `durability`'s guarantee.
    func write<T: Sendable>(
        _ durability: WriteDurability, _ body: @escaping @Sendable (Connection) throws(SQLError) -> T
    ) async throws(SQLError) -> T
}

extension SQLDatabase {
    /// A write that is on disk when it returns (``WriteDurability/synced``).
    public func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws(SQLError) -> T)
        async throws(SQLError) -> T
    {
        try await write(.synced, body)
    }
}

/// What a committed write survives when it returns.
public enum WriteDurability: Sendable, Equatable {
    /// On disk (synced): it survives the machine losing power. Every write of money is this.
    case synced
    /// Handed to the operating system, not yet synced: it survives the server's process crashing or being killed,
    /// but the last of these may be lost if the machine itself stops (a power cut, a kernel crash). The next synced
    /// write makes it durable too (the log is synced in order). For what losing costs nothing but a retry: a new
    /// checkout, which a payment needs to find and price again, so that a lost one is refused, never charged.
    case written
}

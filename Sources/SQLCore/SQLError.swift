/// A database failure as the code above the adapters sees it: a stable ``code`` to switch on, a message a person can
/// act on (never a bound value), and the backend's own error (``SQLiteError``, ``PostgresError``) when there is one.
///
/// Equality is on the code. Match in `catch` clauses with the code constants:
/// ```swift
/// do { try connection.run("INSERT ...") }
/// catch SQLError.Code.uniqueViolation { ... }
/// ```
public struct SQLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code, its message, and the backend's error when the failure came from the database library.
    public let code: Code, message: String, underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        (self.code, self.message, self.underlying) = (code, message, underlying)
    }

    /// Whether the database refused the write because of a constraint (UNIQUE or any other).
    public var isConstraintViolation: Bool { [.uniqueViolation, .constraintViolation].contains(code) }
    public var description: String { "\(code): \(message)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Stable error codes, the same for every backend.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as a string, e.g. `"uniqueViolation"`.
        public let rawValue: String
        public var description: String { rawValue }
        private init(_ rawValue: String) { self.rawValue = rawValue }
        /// Lets a code match a thrown ``SQLError`` in `catch` or `switch`: `catch SQLError.Code.uniqueViolation`.
        public static func ~= (pattern: Code, value: any Error) -> Bool { (value as? SQLError)?.code == pattern }

        public static let
            /// A UNIQUE or PRIMARY KEY constraint refused the write.
            uniqueViolation = Code("uniqueViolation"),
            /// Another integrity rule refused the write: CHECK, FOREIGN KEY, NOT NULL.
            constraintViolation = Code("constraintViolation"),
            /// A write changed another number of rows than the caller expected (a row left the state it was read
            /// in); the transaction is rolled back.
            unexpectedRowCount = Code("unexpectedRowCount"),
            /// A column missing from the row, NULL where a value was required, or of another type than asked for;
            /// also a stored value that cannot be decoded.
            typeMismatch = Code("typeMismatch"),
            /// The transaction lost a race with another one (serialization failure, deadlock): running it again
            /// may succeed.
            serializationFailure = Code("serializationFailure"),
            /// The database cannot be reached, or the connection broke.
            connectionFailure = Code("connectionFailure"),
            /// The database records migrations this program does not know: it was written by a newer version.
            newerDatabase = Code("newerDatabase"),
            /// A recorded migration has another name than the program's migration at that position.
            renamedMigration = Code("renamedMigration"),
            /// Everything else (I/O, a statement the database refused, a trigger's RAISE, ...).
            other = Code("other")
    }
}

extension SQLError {
    /// `error` itself if it is an ``SQLError``, translated if it is the backend's `Failure`, else `other`.
    public init<Failure: Error>(_ error: any Error, translating translate: (Failure) -> SQLError) {
        switch error {
        case let error as SQLError: self = error
        case let error as Failure: self = translate(error)
        default: self.init(.other, "\(error)")
        }
    }

    /// Runs a call of a database library, its error translated (`SQLError.init(sqlite:)`, `init(postgres:)`).
    public static func translating<T, Failure: Error>(
        _ translate: (Failure) -> SQLError, _ body: () throws(Failure) -> T
    ) throws(SQLError) -> T {
        do {
            return try body()
        } catch {
            throw translate(error)
        }
    }
}

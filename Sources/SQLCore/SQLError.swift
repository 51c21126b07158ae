/// A database failure as the code above the adapters sees it: a stable ``code`` to switch on, a message a person can
/// act on (never a bound value), and the backend's own error (``SQLiteError``, ``PostgresError``) when there is one.
///
/// Equality is on the code. Match in `catch` clauses with the code constants:
/// ```swift
/// do { try connection.run("INSERT ...") }
/// catch SQLError.Code.uniqueViolation { ... }
/// ```
public struct SQLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes, the same for every backend.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as a string, e.g. `"uniqueViolation"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Lets a code match a thrown ``SQLError`` in `catch` or `switch`: `catch SQLError.Code.uniqueViolation`.
        public static func ~= (pattern: Code, value: any Error) -> Bool { (value as? SQLError)?.code == pattern }

        /// A UNIQUE or PRIMARY KEY constraint refused the write.
        public static let uniqueViolation = Code("uniqueViolation")
        /// Another integrity rule refused the write: CHECK, FOREIGN KEY, NOT NULL, a trigger.
        public static let constraintViolation = Code("constraintViolation")
        /// A write changed another number of rows than the caller expected (a row left the state it was read in);
        /// the transaction is rolled back.
        public static let unexpectedRowCount = Code("unexpectedRowCount")
        /// A column missing from the row, NULL where a value was required, or of another type than asked for; also
        /// a stored value that cannot be decoded.
        public static let typeMismatch = Code("typeMismatch")
        /// The transaction lost a race with another one (serialization failure, deadlock): running it again may
        /// succeed.
        public static let serializationFailure = Code("serializationFailure")
        /// The database cannot be reached, or the connection broke.
        public static let connectionFailure = Code("connectionFailure")
        /// The database records migrations this program does not know: it was written by a newer version.
        public static let newerDatabase = Code("newerDatabase")
        /// A recorded migration has another name than the program's migration at that position.
        public static let renamedMigration = Code("renamedMigration")
        /// Everything else (I/O, a statement the database refused, ...).
        public static let other = Code("other")
    }

    public let code: Code
    public let message: String
    /// The backend's error, when the failure came from the database library.
    public let underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Whether the database refused the write because of a constraint (UNIQUE or any other).
    public var isConstraintViolation: Bool { code == .uniqueViolation || code == .constraintViolation }

    public var description: String { "\(code): \(message)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}

/// A failed PostgreSQL call: a stable ``code`` to switch on, the server's SQLSTATE when there is one, and its message.
///
/// Equality is on the code. Match in `catch` clauses with the code constants:
/// ```swift
/// do { try connection.run("INSERT ...") }
/// catch PostgresError.Code.uniqueViolation { ... }
/// catch PostgresError.Code.serializationFailure { ... }   // retry the transaction
/// ```
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes: the SQLSTATEs callers act on, their classes, and the wrapper's own.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as a string, e.g. `"uniqueViolation"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Lets a code match a thrown ``PostgresError`` in `catch` or `switch`.
        public static func ~= (pattern: Code, value: any Error) -> Bool { (value as? PostgresError)?.code == pattern }

        /// 23505: a UNIQUE or PRIMARY KEY constraint.
        public static let uniqueViolation = Code("uniqueViolation")
        /// 23503.
        public static let foreignKeyViolation = Code("foreignKeyViolation")
        /// 23514.
        public static let checkViolation = Code("checkViolation")
        /// 23502.
        public static let notNullViolation = Code("notNullViolation")
        /// Any other class 23 state.
        public static let integrityViolation = Code("integrityViolation")
        /// 40001: a serialisable transaction lost a race; run it again.
        public static let serializationFailure = Code("serializationFailure")
        /// 40P01: run the transaction again.
        public static let deadlockDetected = Code("deadlockDetected")
        /// Class 08, an administrator shutdown (57P01-57P03), or a connection that is gone or was never made.
        public static let connectionFailure = Code("connectionFailure")
        /// 57014: statement timeout or cancellation.
        public static let queryCanceled = Code("queryCanceled")
        /// P0001: a `RAISE EXCEPTION` (the event log's append-only trigger, for one).
        public static let raiseException = Code("raiseException")
        /// Class 42: the statement itself is wrong.
        public static let syntaxError = Code("syntaxError")
        /// 22xxx: a value the column's type refuses.
        public static let dataException = Code("dataException")
        /// A result column missing or not of the type asked for.
        public static let typeMismatch = Code("typeMismatch")
        /// A recorded migration differs from the program's list.
        public static let migration = Code("migration")
        /// Everything else.
        public static let other = Code("other")

        /// The code for a five-character SQLSTATE.
        public init(sqlState: String) {
            switch sqlState {
            case "23505": self = .uniqueViolation
            case "23503": self = .foreignKeyViolation
            case "23514": self = .checkViolation
            case "23502": self = .notNullViolation
            case "40001": self = .serializationFailure
            case "40P01": self = .deadlockDetected
            case "57014": self = .queryCanceled
            case "57P01", "57P02", "57P03": self = .connectionFailure
            case "P0001": self = .raiseException
            default:
                switch sqlState.prefix(2) {
                case "23": self = .integrityViolation
                case "08": self = .connectionFailure
                case "42": self = .syntaxError
                case "22": self = .dataException
                default: self = .other
                }
            }
        }
    }

    public let code: Code
    /// The server's SQLSTATE, when the server answered.
    public let sqlState: String?
    public let message: String

    public init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    /// Whether running the same transaction again may succeed (a lost race or a lost connection).
    public var isTransient: Bool {
        code == .serializationFailure || code == .deadlockDetected || code == .connectionFailure
    }

    public var description: String {
        sqlState.map { "\(code) (\($0)): \(message)" } ?? "\(code): \(message)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}

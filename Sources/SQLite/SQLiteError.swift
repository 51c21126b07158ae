internal import CSQLite

/// A failed SQLite call: a stable ``code`` to switch on, SQLite's extended result code, and its message.
///
/// Equality is on the code. Match in `catch` clauses with the code constants:
/// ```swift
/// do { try connection.run("INSERT ...") } catch SQLiteError.constraint { ... }
/// ```
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes (one per SQLite primary result code we distinguish, plus the wrapper's own).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Lets `catch SQLiteError.constraint` (or `SQLiteError.Code.constraint`) match a thrown error.
        public static func ~= (pattern: Code, value: any Error) -> Bool { (value as? SQLiteError)?.code == pattern }

        public static let error = Code("error")
        public static let permission = Code("permission")
        public static let abort = Code("abort")
        public static let busy = Code("busy")
        public static let locked = Code("locked")
        public static let noMemory = Code("noMemory")
        public static let readOnly = Code("readOnly")
        public static let interrupted = Code("interrupted")
        public static let ioError = Code("ioError")
        public static let corrupt = Code("corrupt")
        public static let full = Code("full")
        public static let cannotOpen = Code("cannotOpen")
        public static let schema = Code("schema")
        public static let tooBig = Code("tooBig")
        /// UNIQUE, PRIMARY KEY, FOREIGN KEY, CHECK, NOT NULL or a trigger's RAISE.
        public static let constraint = Code("constraint")
        public static let mismatch = Code("mismatch")
        public static let misuse = Code("misuse")
        public static let range = Code("range")
        /// A column read as the wrong type, or a column that is not in the row (wrapper).
        public static let typeMismatch = Code("typeMismatch")
        /// The recorded migrations do not match the code's list (wrapper).
        public static let migration = Code("migration")
    }

    public static let constraint = Code.constraint
    public static let busy = Code.busy
    public static let locked = Code.locked
    public static let cannotOpen = Code.cannotOpen
    public static let readOnly = Code.readOnly
    public static let corrupt = Code.corrupt
    public static let misuse = Code.misuse
    public static let typeMismatch = Code.typeMismatch
    public static let migration = Code.migration

    /// The stable code.
    public let code: Code
    /// SQLite's extended result code (`2067` is `SQLITE_CONSTRAINT_UNIQUE`); `0` for wrapper errors.
    public let resultCode: Int32
    /// `sqlite3_errmsg` at the time of the failure, or the wrapper's explanation.
    public let message: String
    /// The statement involved, when there is one (SQL text only: bound values are never included).
    public let sql: String?

    /// An error from a result code and message.
    public init(resultCode: Int32, message: String, sql: String? = nil) {
        self.code = Self.code(for: resultCode)
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
    }

    /// A wrapper-level error.
    public init(_ code: Code, _ message: String, sql: String? = nil) {
        self.code = code
        self.resultCode = 0
        self.message = message
        self.sql = sql
    }

    /// Whether this is a UNIQUE or PRIMARY KEY violation.
    public var isUniqueViolation: Bool {
        resultCode == Self.constraintUnique || resultCode == Self.constraintPrimaryKey
    }

    // Extended codes are function-like macros in sqlite3.h that Swift does not import: SQLITE_CONSTRAINT | (n << 8).
    private static let constraintForeignKey = SQLITE_CONSTRAINT | (3 << 8)
    private static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)
    private static let constraintUnique = SQLITE_CONSTRAINT | (8 << 8)

    /// Whether this is a FOREIGN KEY violation.
    public var isForeignKeyViolation: Bool { resultCode == Self.constraintForeignKey }

    public var description: String {
        var text = "SQLite \(code)"
        if resultCode != 0 { text += " (\(resultCode))" }
        text += ": \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }

    public static func == (lhs: SQLiteError, rhs: SQLiteError) -> Bool { lhs.code == rhs.code }

    static func code(for resultCode: Int32) -> Code {
        switch resultCode & 0xff {
        case SQLITE_PERM, SQLITE_AUTH: .permission
        case SQLITE_ABORT: .abort
        case SQLITE_BUSY: .busy
        case SQLITE_LOCKED: .locked
        case SQLITE_NOMEM: .noMemory
        case SQLITE_READONLY: .readOnly
        case SQLITE_INTERRUPT: .interrupted
        case SQLITE_IOERR: .ioError
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
        case SQLITE_FULL: .full
        case SQLITE_CANTOPEN: .cannotOpen
        case SQLITE_SCHEMA: .schema
        case SQLITE_TOOBIG: .tooBig
        case SQLITE_CONSTRAINT: .constraint
        case SQLITE_MISMATCH: .mismatch
        case SQLITE_MISUSE: .misuse
        case SQLITE_RANGE: .range
        default: .error
        }
    }
}

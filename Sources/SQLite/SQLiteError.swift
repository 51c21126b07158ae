internal import CSQLite

/// A failed SQLite call: a stable ``code`` to switch on, SQLite's extended result code, and its message.
///
/// Equality is on the code. Match in `catch` clauses with the code constants; a primary code matches its extended
/// codes too, and an extended code matches only itself:
/// ```swift
/// do { try connection.run("INSERT ...") }
/// catch SQLiteError.Code.constraintUnique { ... }   // only a UNIQUE violation
/// catch SQLiteError.Code.constraint { ... }         // any other constraint (CHECK, NOT NULL, FOREIGN KEY, ...)
/// ```
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes: one per SQLite primary result code we distinguish, the extended codes callers act on
    /// (constraint kinds, busy variants), and the wrapper's own.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as a string, e.g. `"constraintUnique"`.
        public let rawValue: String
        private let primaryRawValue: String
        private init(_ rawValue: String) {
            self.rawValue = rawValue
            self.primaryRawValue = rawValue
        }
        private init(_ rawValue: String, refining primary: Code) {
            self.rawValue = rawValue
            self.primaryRawValue = primary.rawValue
        }
        public var description: String { rawValue }

        /// The primary code this one refines (`constraint` for `constraintUnique`); the code itself for a primary
        /// or wrapper code.
        public var primary: Code { primaryRawValue == rawValue ? self : Code(primaryRawValue) }

        /// Lets a code match a thrown ``SQLiteError`` in `catch` or `switch`: `catch SQLiteError.Code.busy`.
        ///
        /// A primary code (`constraint`) matches the error's code or any extended code refining it
        /// (`constraintUnique`, `constraintCheck`, ...); an extended code matches only itself.
        public static func ~= (pattern: Code, value: any Error) -> Bool {
            guard let error = value as? SQLiteError else { return false }
            return error.code == pattern || error.code.primary == pattern
        }

        // Primary result codes.
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
        /// UNIQUE, PRIMARY KEY, FOREIGN KEY, CHECK, NOT NULL or a trigger's RAISE; matches every `constraint…` code.
        public static let constraint = Code("constraint")
        public static let mismatch = Code("mismatch")
        public static let misuse = Code("misuse")
        public static let range = Code("range")

        // Extended result codes (`sqlite3_extended_errcode`).
        /// `SQLITE_CONSTRAINT_CHECK`: a CHECK constraint failed.
        public static let constraintCheck = Code("constraintCheck", refining: .constraint)
        /// `SQLITE_CONSTRAINT_FOREIGNKEY`: a foreign key has no parent row.
        public static let constraintForeignKey = Code("constraintForeignKey", refining: .constraint)
        /// `SQLITE_CONSTRAINT_NOTNULL`: NULL in a NOT NULL column.
        public static let constraintNotNull = Code("constraintNotNull", refining: .constraint)
        /// `SQLITE_CONSTRAINT_PRIMARYKEY`: a duplicate (non-rowid) primary key.
        public static let constraintPrimaryKey = Code("constraintPrimaryKey", refining: .constraint)
        /// `SQLITE_CONSTRAINT_UNIQUE`: a duplicate in a UNIQUE column or index.
        public static let constraintUnique = Code("constraintUnique", refining: .constraint)
        /// `SQLITE_CONSTRAINT_TRIGGER`: a trigger's `RAISE(ABORT, ...)` or similar.
        public static let constraintTrigger = Code("constraintTrigger", refining: .constraint)
        /// `SQLITE_CONSTRAINT_ROWID`: a duplicate rowid (an `INTEGER PRIMARY KEY`).
        public static let constraintRowID = Code("constraintRowID", refining: .constraint)
        /// `SQLITE_CONSTRAINT_DATATYPE`: a value of the wrong type in a STRICT table.
        public static let constraintDatatype = Code("constraintDatatype", refining: .constraint)
        /// `SQLITE_BUSY_RECOVERY`.
        public static let busyRecovery = Code("busyRecovery", refining: .busy)
        /// `SQLITE_BUSY_SNAPSHOT`: a WAL read transaction cannot be upgraded to a write.
        public static let busySnapshot = Code("busySnapshot", refining: .busy)
        /// `SQLITE_BUSY_TIMEOUT`.
        public static let busyTimeout = Code("busyTimeout", refining: .busy)
        /// `SQLITE_LOCKED_SHAREDCACHE`.
        public static let lockedSharedCache = Code("lockedSharedCache", refining: .locked)

        // The wrapper's own.
        /// A column read as the wrong type, or a column that is not in the row.
        public static let typeMismatch = Code("typeMismatch")
        /// The recorded migrations do not match the code's list.
        public static let migration = Code("migration")
    }

    /// The stable code: the extended code when it is one we name, otherwise the primary code.
    public let code: Code
    /// SQLite's extended result code (`2067` is `SQLITE_CONSTRAINT_UNIQUE`); `0` for wrapper errors.
    public let resultCode: Int32
    /// `sqlite3_errmsg` at the time of the failure, or the wrapper's explanation. Never holds bound values.
    public let message: String
    /// The statement involved, when there is one (SQL text only: bound values are never included).
    public let sql: String?

    /// An error from a (possibly extended) result code and message.
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

    public var description: String {
        var text = "SQLite \(code)"
        if resultCode != 0 { text += " (\(resultCode))" }
        text += ": \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }

    public static func == (lhs: SQLiteError, rhs: SQLiteError) -> Bool { lhs.code == rhs.code }

    // Extended codes are function-like macros in sqlite3.h that Swift does not import: primary | (n << 8).
    private static let extendedCodes: [Int32: Code] = [
        SQLITE_CONSTRAINT | (1 << 8): .constraintCheck,
        SQLITE_CONSTRAINT | (3 << 8): .constraintForeignKey,
        SQLITE_CONSTRAINT | (5 << 8): .constraintNotNull,
        SQLITE_CONSTRAINT | (6 << 8): .constraintPrimaryKey,
        SQLITE_CONSTRAINT | (7 << 8): .constraintTrigger,
        SQLITE_CONSTRAINT | (8 << 8): .constraintUnique,
        SQLITE_CONSTRAINT | (10 << 8): .constraintRowID,
        SQLITE_CONSTRAINT | (12 << 8): .constraintDatatype,
        SQLITE_BUSY | (1 << 8): .busyRecovery,
        SQLITE_BUSY | (2 << 8): .busySnapshot,
        SQLITE_BUSY | (3 << 8): .busyTimeout,
        SQLITE_LOCKED | (1 << 8): .lockedSharedCache,
    ]

    static func code(for resultCode: Int32) -> Code {
        if let extended = extendedCodes[resultCode] { return extended }
        return switch resultCode & 0xff {
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

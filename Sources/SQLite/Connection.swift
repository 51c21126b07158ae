internal import CSQLite
import Foundation

/// One SQLite database connection: the only owner of its `sqlite3*`, closed in `deinit`.
///
/// Opened with extended result codes, foreign keys on, a busy timeout, and (for files) WAL journal mode. A database
/// file opened for writing is private to its owner: created 0600 (an existing one, and its `-wal`, `-shm` and
/// `-journal` files, made 0600); SQLite gives the `-wal` and `-shm` files it
/// creates the database file's mode.
/// Not `Sendable`: a connection belongs to one actor or serial executor at a time.
public final class Connection {
    /// How a transaction starts.
    public enum TransactionKind: String, Sendable {
        /// `BEGIN DEFERRED`: takes locks when first needed.
        case deferred = "DEFERRED"
        /// `BEGIN IMMEDIATE`: takes the write lock at once, so two writers queue on the busy timeout instead of
        /// failing with `SQLITE_BUSY` half-way through (the default).
        case immediate = "IMMEDIATE"
        /// `BEGIN EXCLUSIVE`.
        case exclusive = "EXCLUSIVE"

        var beginStatement: String {
            switch self {
            case .deferred: "BEGIN DEFERRED"
            case .immediate: "BEGIN IMMEDIATE"
            case .exclusive: "BEGIN EXCLUSIVE"
            }
        }
    }

    let handle: OpaquePointer
    /// The file path, or `:memory:`.
    public let path: String
    private var savepointCounter = 0
    /// Statements prepared by `run` and `query`, by SQL text, reused instead of prepared again for each call
    /// (preparing is SQLite's parser and planner each time). Owned here and finalized before the handle closes.
    private var statementCache: [StatementKey: Statement] = [:]
    /// Beyond this many distinct SQL texts the cache starts over (SQL built with varying text would otherwise grow
    /// it without bound).
    static let statementCacheLimit = 256

    /// Opens (creating if needed) a database file, or an in-memory database for `":memory:"`.
    /// - Parameters:
    ///   - path: a file path, or `":memory:"`.
    ///   - readOnly: open without write access (the file must exist).
    ///   - busyTimeout: how long a statement waits for another connection's lock before failing with `busy`.
    /// - Throws: ``SQLiteError`` (`cannotOpen`, `corrupt`, ...); the handle SQLite returns on failure is closed
    ///   before throwing.
    public init(path: String, readOnly: Bool = false, busyTimeout: Duration = .seconds(5)) throws(SQLiteError) {
        if !readOnly && path != ":memory:" && !path.isEmpty && !path.hasPrefix("file:") {
            try Self.makePrivate(path)
        }
        _ = Self.libraryConfigured
        var pointer: OpaquePointer?
        // No mutex of the connection's own (SQLite's "multi-thread" mode): a connection is used by one thread at a
        // time (the writer's, or a reader's borrower), and each call into SQLite took and released it, about 1,200
        // times a payment.
        let access = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let flags = access | SQLITE_OPEN_NOMUTEX
        // A file's writer gathers each commit's WAL frames into one write (``WALWriteGathering``).
        let vfs = readOnly || path == ":memory:" || path.isEmpty ? nil : WALWriteGathering.registeredName
        let status = sqlite3_open_v2(path, &pointer, flags, vfs)
        guard let pointer else {
            throw SQLiteError(resultCode: status == SQLITE_OK ? SQLITE_NOMEM : status, message: "cannot open \(path)")
        }
        guard status == SQLITE_OK else {
            let error = SQLiteError(
                resultCode: sqlite3_extended_errcode(pointer),
                message: "cannot open \(path): \(String(cString: sqlite3_errmsg(pointer)))")
            sqlite3_close_v2(pointer)
            throw error
        }
        handle = pointer
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.milliseconds(busyTimeout))
        // `deinit` closes the handle if any of these throw.
        try execute("PRAGMA foreign_keys = ON")
        // Statement and savepoint journals (each write of a group commit has a savepoint) and temporary b-trees in
        // memory: by default a savepoint journal past 64 KiB spills to a temporary file, a file created, written and
        // unlinked within the commit.
        try execute("PRAGMA temp_store = MEMORY")
        if !readOnly && path != ":memory:" && !path.isEmpty {
            let mode = try query("PRAGMA journal_mode = WAL").first?["journal_mode"]
            guard mode == .text("wal") else {
                throw SQLiteError(
                    .error, "cannot switch \(path) to WAL journal mode (got \(mode?.description ?? "nothing"))")
            }
        }
    }

    /// SQLite's process-wide settings, made once before the first connection opens: no memory statistics (each of
    /// SQLite's allocations counted itself under a process-wide mutex).
    private static let libraryConfigured: Bool = CSQLite_disableMemoryStatus() == SQLITE_OK

    /// How many writes this connection's WAL file received and how many went to the file (``WALWriteGathering``);
    /// `nil` before the WAL is open, or when it is not gathered (for tests).
    var walWriteCounts: (received: Int, written: Int)? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) == SQLITE_OK, let file else {
            return nil
        }
        return WALWriteGathering.counts(of: file)
    }

    /// Creates the database file 0600 or takes group and other bits off an existing one and its companion files;
    /// a symbolic link is refused rather than followed.
    private static func makePrivate(_ path: String) throws(SQLiteError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw SQLiteError(.cannotOpen, "cannot open \(path): \(reason)")
        }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else {
            throw SQLiteError(
                .permission, "cannot make \(path) private (chmod 600): \(String(cString: strerror(errno)))")
        }
        for suffix in ["-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: path + suffix) {
            _ = chmod(path + suffix, 0o600)
        }
    }

    /// A duration in whole milliseconds for `sqlite3_busy_timeout`: capped at `Int32.max` (about 24 days) without
    /// overflowing on the way; zero or negative turns waiting off.
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        guard seconds < Int64(Int32.max) / 1000 else { return Int32.max }
        return Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// A private in-memory database.
    /// - Throws: ``SQLiteError`` if SQLite cannot allocate it.
    public static func inMemory() throws(SQLiteError) -> Connection { try Connection(path: ":memory:") }

    deinit {
        // The cached statements do not keep the connection alive; finalize them while the handle is still open.
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Number of statements in the cache (for tests).
    var cachedStatementCount: Int { statementCache.count }

    /// The cached statement for `sql`, prepared now on a miss. `run` and `query` reset it before returning, so a
    /// cached statement never holds a read transaction open between calls.
    private func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        let key = StatementKey(sql)
        if let statement = statementCache[key] { return statement }
        let statement = try Statement(connection: self, sql: sql, retainingConnection: false)
        if statementCache.count >= Self.statementCacheLimit { statementCache.removeAll() }
        statementCache[key] = statement
        return statement
    }

    /// Runs one or more SQL statements with no parameters and no results (schema, pragmas).
    /// - Throws: ``SQLiteError``.
    public func execute(_ sql: String) throws(SQLiteError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw lastError(status, sql: sql) }
    }

    /// Prepares one statement.
    /// - Throws: ``SQLiteError`` for invalid SQL or more than one statement.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// Runs one statement with bound values and returns the number of rows it changed.
    /// - Throws: ``SQLiteError`` (`constraint` for a violated UNIQUE, CHECK, FOREIGN KEY, ...).
    @discardableResult
    public func run(_ sql: String, _ values: Value...) throws(SQLiteError) -> Int {
        try cachedStatement(sql).run(values)
    }

    /// Runs one statement with bound values and returns the number of rows it changed.
    @discardableResult
    public func run(_ sql: String, values: [Value]) throws(SQLiteError) -> Int {
        try cachedStatement(sql).run(values)
    }

    /// Runs one query with bound values and returns every row.
    /// - Throws: ``SQLiteError``.
    public func query(_ sql: String, _ values: Value...) throws(SQLiteError) -> [Row] {
        try cachedStatement(sql).rows(values)
    }

    /// Runs one query with bound values and returns every row.
    public func query(_ sql: String, values: [Value]) throws(SQLiteError) -> [Row] {
        try cachedStatement(sql).rows(values)
    }

    /// Whether a transaction is open.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws (then rethrows).
    ///
    /// Inside another transaction it uses a SAVEPOINT, so nested calls roll back only their own part.
    /// - Parameters:
    ///   - kind: how the outermost transaction begins; `.immediate` by default.
    ///   - body: the work; the connection is passed for convenience.
    /// - Throws: what `body` throws, or ``SQLiteError`` if BEGIN or COMMIT fails (after a failed COMMIT the
    ///   transaction is rolled back).
    public func transaction<T, Failure: Error>(
        _ kind: TransactionKind = .immediate, _ body: (Connection) throws(Failure) -> T
    ) throws -> T {
        if isInTransaction {
            savepointCounter += 1
            let names = Self.savepointNames(savepointCounter)
            defer { savepointCounter -= 1 }
            try control(names.begin)
            do {
                let result = try body(self)
                try control(names.release)
                return result
            } catch {
                try? execute("ROLLBACK TO SAVEPOINT \(names.name)")
                try? control(names.release)
                throw error
            }
        }
        try control(kind.beginStatement)
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        do {
            try control("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        return result
    }

    /// Runs a transaction's BEGIN, COMMIT, SAVEPOINT or RELEASE as a cached statement: through `sqlite3_exec` each
    /// was parsed and prepared again, four to six times a write.
    private func control(_ sql: String) throws(SQLiteError) {
        try cachedStatement(sql).run([])
    }

    /// The savepoint of nesting `depth` and its statements, the first few made once.
    private static func savepointNames(_ depth: Int) -> (name: String, begin: String, release: String) {
        depth < commonSavepoints.count ? commonSavepoints[depth] : savepoint(depth)
    }

    private static let commonSavepoints = (0..<8).map(savepoint)

    private static func savepoint(_ depth: Int) -> (name: String, begin: String, release: String) {
        ("sp\(depth)", "SAVEPOINT sp\(depth)", "RELEASE SAVEPOINT sp\(depth)")
    }

    private func rollbackQuietly() {
        // The transaction may already be gone (SQLite rolls back by itself after some errors).
        if isInTransaction { try? execute("ROLLBACK") }
    }

    func lastError(_ status: Int32, sql: String?) -> SQLiteError {
        let extended = sqlite3_extended_errcode(handle)
        let code = (extended & 0xff) == (status & 0xff) ? extended : status
        return SQLiteError(resultCode: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

@available(*, unavailable, message: "a Connection belongs to one actor or serial executor")
extension Connection: Sendable {}

/// A statement cache's key: the SQL text's bytes (what SQLite compiles), hashed by their count and their last 64
/// only. A payment looks up some thirty statements of a few hundred bytes each, and hashing each whole text was
/// about 1 % of its instructions; the texts are the program's own (no one can choose them to collide), the ones that
/// share an ending differ in length or further up, and equality compares every byte.
struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    static func == (lhs: Self, rhs: Self) -> Bool {
        let left = lhs.sql.utf8
        let right = rhs.sql.utf8
        guard left.count == right.count else { return false }
        let compared = left.withContiguousStorageIfAvailable { leftBytes in
            right.withContiguousStorageIfAvailable { rightBytes in
                guard let leftStart = leftBytes.baseAddress, let rightStart = rightBytes.baseAddress else {
                    return true
                }
                return memcmp(leftStart, rightStart, leftBytes.count) == 0
            }
        }
        return (compared ?? nil) ?? left.elementsEqual(right)
    }

    static let hashedSuffix = 64

    func hash(into hasher: inout Hasher) {
        let utf8 = sql.utf8
        hasher.combine(utf8.count)
        let hashedWithoutCopy = utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(
                bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(Self.hashedSuffix))))
        }
        if hashedWithoutCopy == nil {
            for byte in utf8.suffix(Self.hashedSuffix) { hasher.combine(byte) }
        }
    }
}

import Foundation
import Foundations
import MerchantCore
import Postgres
import SQLCore
import SQLite

/// Copies an embedded SQLite store into a PostgreSQL store (`applepay store migrate`): checkouts, orders, payments,
/// refunds, the event log, Wallet order fulfilments and device registrations, subscriptions, their charges and the
/// merchant-token events applied, every row with its own ids, secrets, times and event sequence numbers.
///
/// - One PostgreSQL transaction: a migration that fails or is interrupted leaves nothing of itself, and the SQLite
///   side is read in one read transaction (a consistent snapshot even while a server still writes to it).
/// - Idempotent: a row whose key is already in PostgreSQL is left as it is (not overwritten: a server on PostgreSQL
///   may have moved it on since), so running it again copies nothing, and a run after a failed one copies the rest.
/// - An event (or fulfilment) whose sequence number PostgreSQL already uses for a different row means the target
///   holds another store's data: the migration stops (`conflict`) and writes nothing, as it does for any other
///   constraint the copied rows break (a transaction id stored under another order, say).
/// - Afterwards the identity sequences continue after the copied numbers.
public enum StoreMigration {
    /// What one table gave.
    public struct TableCount: Sendable, Equatable, Encodable {
        public var table: String
        /// Rows written by this run.
        public var copied: Int
        /// Rows of the source that PostgreSQL already held (left unchanged).
        public var alreadyPresent: Int
    }

    /// Per table, in the order copied.
    public struct Report: Sendable, Equatable, Encodable {
        public var tables: [TableCount]
        public var copied: Int { tables.reduce(0) { $0 + $1.copied } }
        public var alreadyPresent: Int { tables.reduce(0) { $0 + $1.alreadyPresent } }
    }

    /// A table's columns (the same names on both sides) and its key in PostgreSQL.
    struct Table: Sendable {
        var name: String
        var columns: [String]
        var key: [String]
        /// Columns compared when the key is already taken: a difference means foreign data (`nil`: not compared).
        var identity: [String]? = nil
        /// Columns SQLite stores as the integer 0 or 1 and PostgreSQL as a `boolean`.
        var booleans: Set<String> = []
        /// The identity column whose sequence continues after the copied numbers.
        var sequence: String? = nil
    }

    /// In the order foreign keys need.
    static let tables: [Table] = [
        Table(
            name: "checkouts",
            columns: ["id", "currency", "state_json", "application_data", "created_at", "updated_at"], key: ["id"]),
        Table(
            name: "orders",
            columns: [
                "id", "checkout_id", "status", "currency", "subtotal_minor", "discount_minor", "shipping_minor",
                "tax_minor", "fee_minor", "total_minor", "refunded_minor", "items_json", "shipping_method_json",
                "coupon_code", "shipping_contact_json", "billing_contact_json", "payment_network", "pan_last_four",
                "view_secret", "created_at", "updated_at",
            ], key: ["id"]),
        Table(
            name: "payments",
            columns: [
                "id", "order_id", "transaction_id", "status", "amount_minor", "currency", "processor_reference",
                "failure_code", "failure_message", "created_at", "updated_at", "merchant_token",
            ], key: ["id"], booleans: ["merchant_token"]),
        Table(
            name: "refunds",
            columns: [
                "id", "order_id", "idempotency_key", "amount_minor", "status", "processor_reference", "created_at",
                "updated_at", "failure_code",
            ], key: ["id"]),
        Table(
            name: "events", columns: ["sequence", "at", "kind", "checkout_id", "order_id", "detail_json"],
            key: ["sequence"], identity: ["at", "kind", "checkout_id", "order_id", "detail_json"], sequence: "sequence"),
        Table(
            name: "fulfillments", columns: ["sequence", "order_id", "status", "carrier", "tracking_number", "at"],
            key: ["sequence"], identity: ["order_id", "status", "at"], sequence: "sequence"),
        Table(
            name: "device_registrations",
            columns: [
                "device_identifier", "order_type_identifier", "order_id", "push_token", "created_at", "updated_at",
            ], key: ["device_identifier", "order_type_identifier", "order_id"]),
        Table(
            name: "subscriptions",
            columns: [
                "id", "secret", "checkout_id", "order_id", "sku", "product_name", "plan_json", "amount_minor",
                "currency", "merchant_token_identifier", "payment_method_reference", "network", "card_suffix",
                "card_expiration", "card_art_url", "status", "status_reason", "cycle", "attempt", "anchor",
                "next_charge_at", "created_at", "updated_at", "version", "card_country", "card_short_description",
                "card_long_description", "skipped_cycles", "unresolved_charge_key", "unresolved_since",
                "unresolved_reference", "customer_reference",
            ], key: ["id"]),
        Table(
            name: "subscription_charges",
            columns: [
                "idempotency_key", "subscription_id", "cycle", "attempt", "amount_minor", "currency", "status",
                "processor_reference", "decline_code", "due_at", "charged_at", "refund_reference", "refunded_at",
                "refund_owed", "refunded_minor",
            ], key: ["idempotency_key"]),
        Table(
            name: "subscription_charge_refunds",
            columns: [
                "id", "charge_key", "refund_key", "processor_reference", "amount_minor", "status", "failure_code",
                "created_at", "updated_at",
            ], key: ["id"]),
        Table(
            name: "merchant_token_events",
            columns: ["event_id", "event_type", "merchant_token_identifier", "applied_at"], key: ["event_id"]),
        Table(
            name: "provider_events",
            columns: ["provider", "event_id", "kind", "order_id", "outcome", "received_at", "subscription_id"],
            key: ["provider", "event_id"]),
        Table(
            name: "disputes",
            columns: [
                "id", "order_id", "provider", "reference", "amount_minor", "currency", "reason", "opened_at",
                "subscription_charge_key",
            ], key: ["id"]),
        Table(
            name: "payment_discrepancies",
            columns: [
                "id", "order_id", "checkout_id", "recorded", "provider", "source", "corrected", "detail_json",
                "detected_at", "resolved_at", "resolution",
            ], key: ["id"]),
    ]

    /// Copies the SQLite store at `sqlitePath` into `target` (see the type's documentation).
    /// - Parameters:
    ///   - sqlitePath: an existing SQLite order store. One written by an older version is migrated first, as
    ///     `applepay serve` would on start.
    ///   - target: the PostgreSQL store (its schema is created or upgraded when it is opened).
    ///   - batch: rows read from SQLite at a time.
    /// - Throws: ``OrderStoreError`` `invalidLocation` when there is no SQLite store at the path, `conflict` when the
    ///   target holds data that contradicts the source, `storage` when either database fails. Nothing is written
    ///   then.
    public static func copy(sqlitePath: String, to target: PostgresOrderStore, batch: Int = 500)
        async throws(OrderStoreError) -> Report
    {
        try prepareSource(sqlitePath)
        let tables = Self.tables
        let batch = max(1, batch)
        do {
            return try await target.database.write { connection throws(SQLError) -> Report in
                let source = try sqlite { () throws(SQLiteError) in try Connection(path: sqlitePath, readOnly: true) }
                // One snapshot of the source for the whole copy.
                try sqlite { () throws(SQLiteError) in try source.execute("BEGIN DEFERRED") }
                defer { try? source.execute("ROLLBACK") }
                var counts: [TableCount] = []
                for table in tables {
                    counts.append(try copy(table, from: source, to: connection, batch: batch))
                }
                return Report(tables: counts)
            }
        } catch  where error.isConstraintViolation {
            throw OrderStoreError(
                .conflict, "the PostgreSQL store holds data that contradicts the SQLite store: \(error.message)")
        } catch  where error.code == .typeMismatch {
            throw OrderStoreError(.corrupt, "migrate from SQLite: \(error.message)")
        } catch {
            throw OrderStoreError(.storage, "migrate from SQLite: \(error)")
        }
    }

    /// Checks that the file is an order store, and brings its schema up to this version's.
    private static func prepareSource(_ path: String) throws(OrderStoreError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw OrderStoreError(.invalidLocation, "no SQLite store at \(path)")
        }
        let recorded: [String]
        do {
            let connection = try Connection(path: path, readOnly: true)
            let tables = try connection.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
            guard !tables.isEmpty else {
                throw OrderStoreError(.invalidLocation, "\(path) is not an order store (no schema_migrations)")
            }
            recorded = try connection.query("SELECT name FROM schema_migrations ORDER BY name").map {
                try $0.string("name")
            }
        } catch let error as OrderStoreError {
            throw error
        } catch {
            throw OrderStoreError(.invalidLocation, "cannot read the SQLite store at \(path): \(error)")
        }
        let current = StoreSchema.migrations.map(\.name)
        let known = Set(current + LegacySQLiteSchema.migrations.map(\.name))
        guard Set(recorded).isSubset(of: known) else {
            throw OrderStoreError(.invalidLocation, "\(path) was written by a newer version of this program")
        }
        if recorded.sorted() != current.sorted() {
            _ = try SQLiteOrderStore(path: path)
        }
    }

    /// An SQLite call inside the PostgreSQL transaction, its error as an ``SQLError``.
    private static func sqlite<T>(_ body: () throws(SQLiteError) -> T) throws(SQLError) -> T {
        do {
            return try body()
        } catch {
            throw SQLError(sqlite: error)
        }
    }

    private static func copy(_ table: Table, from source: Connection, to target: PostgresConnection, batch: Int)
        throws(SQLError) -> TableCount
    {
        let select = """
            SELECT rowid AS migration_rowid, \(table.columns.joined(separator: ", ")) FROM \(table.name)
            WHERE rowid > ? ORDER BY rowid LIMIT ?
            """
        let columns = table.columns.joined(separator: ", ")
        let onConflict = target.dialect.onConflictDoNothing(table.key.joined(separator: ", "))
        var count = TableCount(table: table.name, copied: 0, alreadyPresent: 0)
        var after: Int64 = 0
        while true {
            let rows = try sqlite { () throws(SQLiteError) in
                try source.query(select, .integer(after), .integer(Int64(batch)))
            }
            for row in rows {
                after = try sqlite { () throws(SQLiteError) in try row.int64("migration_rowid") }
                var values: [SQLValue] = []
                var insert: SQLQuery = "INSERT INTO \(raw: table.name) (\(raw: columns)) VALUES ("
                for (index, column) in table.columns.enumerated() {
                    let value = try value(row[column] ?? .null, table: table, column: column)
                    values.append(value)
                    insert.append(index == 0 ? "\(bind: value)" : ", \(bind: value)")
                }
                insert.append(") \(raw: onConflict)")
                if try target.run(insert) == 1 {
                    count.copied += 1
                } else {
                    try checkSame(table, values, in: target)
                    count.alreadyPresent += 1
                }
            }
            if rows.count < batch { break }
        }
        if let column = table.sequence {
            // The next number after both the copied ones and any the target handed out meanwhile.
            try target.execute(
                script: """
                    SELECT setval(pg_get_serial_sequence('\(table.name)', '\(column)'),
                        greatest((SELECT coalesce(max(\(column)), 0) + 1 FROM \(table.name)),
                            nextval(pg_get_serial_sequence('\(table.name)', '\(column)'))), false)
                    """)
        }
        return count
    }

    /// For a table whose key is a number PostgreSQL may also hand out: the stored row must be the copied one.
    private static func checkSame(_ table: Table, _ values: [SQLValue], in target: PostgresConnection)
        throws(SQLError)
    {
        guard let identity = table.identity else { return }
        func value(_ column: String) -> SQLValue {
            table.columns.firstIndex(of: column).map { values[$0] } ?? .null
        }
        var select: SQLQuery = "SELECT \(raw: identity.joined(separator: ", ")) FROM \(raw: table.name) WHERE "
        for (index, column) in table.key.enumerated() {
            select.append("\(raw: index == 0 ? "" : " AND ")\(raw: column) = \(bind: value(column))")
        }
        guard let row = try target.query(select).first else { return }
        for column in identity {
            let expected: String? =
                switch value(column) {
                case .null: nil
                case .text(let text): text
                case .integer(let number): String(number)
                case .boolean(let flag): flag ? "t" : "f"
                }
            guard try row.optionalString(column) == expected else {
                let key = table.key.map { "\($0) \(value($0))" }.joined(separator: ", ")
                throw SQLError(
                    .constraintViolation,
                    "\(table.name) row with \(key) differs in PostgreSQL (\(column)): the target holds another store's data"
                )
            }
        }
    }

    private static func value(_ value: SQLite.Value, table: Table, column: String) throws(SQLError) -> SQLValue {
        switch value {
        case .null: return .null
        case .integer(let number): return table.booleans.contains(column) ? .boolean(number != 0) : .integer(number)
        case .text(let text): return .text(text)
        default:
            throw SQLError(.typeMismatch, "\(table.name).\(column) holds a value of an unexpected type")
        }
    }
}

import Foundation
import Foundations
import JSONCoding
import MerchantCore
import SQLCore

/// The order, subscription and Wallet stores, written once over an ``SQLDatabase``: ``SQLiteOrderStore`` on an
/// embedded SQLite file, ``PostgresOrderStore`` on a PostgreSQL database shared by several instances.
///
/// What must hold is enforced by the database, the same way on both: a token charges once (`payments.transaction_id`
/// UNIQUE, and a payment takes its checkout's row lock before it looks for an existing order); a checkout has one
/// live order (the partial unique index `orders_one_live_order_per_checkout`); a state moves only from the state it
/// expects, and the UPDATE must change exactly the one row (``SQLConnection/run(_:expectingRows:)``), else the whole
/// transaction rolls back; every transition appends its event in the same transaction; the event log is append-only
/// (triggers). Row locks (`FOR UPDATE`) come from the dialect: on SQLite they are empty, as its one writer runs write
/// transactions one after the other.
///
/// The aggregates live in one file each: `OrderStoreSQL.swift`, `SubscriptionStoreSQL.swift`,
/// `WalletStoreSQL.swift`; the schema of each dialect under one list of migration names in `StoreSchema.swift`.
public final class SQLStore<Database: SQLDatabase>: Sendable {
    /// The database the store reads and writes.
    public let database: Database
    /// The time stamped on rows and events.
    let clock: @Sendable () -> Date

    /// A store over `database`, which must already hold ``StoreSchema`` (the backends' initialisers migrate it).
    init(database: Database, clock: @escaping @Sendable () -> Date) {
        self.database = database
        self.clock = clock
    }

    typealias Connection = Database.Connection
    typealias Row = Database.Connection.ResultRow

    /// The recorded migration names, in order.
    public func appliedMigrations() async throws(OrderStoreError) -> [String] {
        try await read("read migrations") { connection throws(SQLError) in
            try StoreSchema.migrator.recordedNames(connection)
        }
    }

    /// A read; errors become ``OrderStoreError`` (`corrupt` for an unreadable row, else `storage`).
    func read<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Connection) throws(SQLError) -> T)
        async throws(OrderStoreError) -> T
    { try await run(what, writing: nil, body) }

    /// A write transaction; errors become ``OrderStoreError`` (`conflict` for a constraint or a row that left its
    /// expected state, `corrupt` for an unreadable row, else `storage`).
    func write<T: Sendable>(
        _ what: String, _ durability: WriteDurability = .synced,
        _ body: @escaping @Sendable (Connection) throws(SQLError) -> T
    ) async throws(OrderStoreError) -> T { try await run(what, writing: durability, body) }

    private func run<T: Sendable>(
        _ what: String, writing: WriteDurability?, _ body: @escaping @Sendable (Connection) throws(SQLError) -> T
    ) async throws(OrderStoreError) -> T {
        do {
            if let writing { return try await database.write(writing, body) }
            return try await database.read(body)
        } catch {
            throw Self.storeError(what, error)
        }
    }

    /// A value as stored JSON, encoded before the transaction (off the SQLite writer's thread).
    static func encoded<T: Encodable>(_ value: T, _ what: String) throws(OrderStoreError) -> String {
        do {
            return try storedJSON(value)
        } catch {
            throw storeError(what, error)
        }
    }

    static func storeError(_ what: String, _ error: SQLError) -> OrderStoreError {
        if error.isConstraintViolation || error.code == .unexpectedRowCount {
            return OrderStoreError(.conflict, "\(what): \(error.message)")
        }
        if error.code == .typeMismatch { return OrderStoreError(.corrupt, "\(what): \(error)") }
        return OrderStoreError(.storage, "\(what): \(error)")
    }

    /// Appends to the event log, in the caller's transaction.
    func appendEvent(
        _ connection: Connection, _ kind: String, checkoutID: String?, orderID: String?, _ detail: [String: String],
        at time: Int64
    ) throws(SQLError) {
        try connection.run(
            """
            INSERT INTO events (at, kind, checkout_id, order_id, detail_json)
            VALUES (\(bind: time), \(bind: kind), \(bind: checkoutID), \(bind: orderID), \(bind: StoredJSON.text(detail)))
            """)
    }
}

/// A value as the JSON text stored in a `*_json` column (keys sorted).
func storedJSON<T: Encodable>(_ value: T) throws(SQLError) -> String {
    do {
        return String(decoding: try SortedJSONEncoder().encode(value), as: UTF8.self)
    } catch {
        throw SQLError(.other, "cannot encode \(T.self) as JSON")
    }
}

/// The JSON text of a `*_json` column decoded. - Throws: ``SQLError`` `typeMismatch` when it does not decode.
func decodeStored<T: Decodable>(_ type: T.Type, _ text: String) throws(SQLError) -> T {
    do {
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    } catch {
        throw SQLError(.typeMismatch, "corrupt JSON for \(T.self) in the store")
    }
}

/// A `*_json` column read by `fast` (``StoredJSON``'s readers, for the shape this store writes), or, for a text of
/// another shape, decoded by ``decodeStored(_:_:)``.
func decodeStored<T: Decodable>(_ type: T.Type, _ text: String, fast: (String) -> T?) throws(SQLError) -> T {
    if let value = fast(text) { return value }
    return try decodeStored(type, text)
}

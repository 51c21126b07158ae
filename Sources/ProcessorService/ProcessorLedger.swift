import Foundation
import Foundations
import HTTPCore
import ProcessorAPI
import SQLCore
import SQLite

/// The processor's durable ledger: charges and refunds in one SQLite file, amounts as INTEGER minor units. It
/// never holds a PAN or cryptogram (the last four digits at most). Each idempotency key is UNIQUE in its table.
///
/// An ``SQLiteDatabase``: every change is one short write, committed with the writes that arrive beside it in one
/// group commit (one sync for many charges, each acknowledged only once on disk); reads run beside the writer.
/// The ledger stands in for a processor elsewhere, so it should not be what bounds a benchmark of the merchant.
final class ProcessorLedger: Sendable {
    private let database: SQLiteDatabase

    static let migrations = [
        Migration(
            "001-create-charges-and-refunds",
            sql: """
                CREATE TABLE charges (
                    id INTEGER PRIMARY KEY,
                    reference TEXT NOT NULL UNIQUE,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    amount INTEGER NOT NULL CHECK (amount > 0),
                    currency_code TEXT NOT NULL CHECK (length(currency_code) = 3),
                    status TEXT NOT NULL
                        CHECK (status IN ('approved', 'declined', 'voided', 'refunded', 'partiallyRefunded')),
                    decline_code TEXT CHECK ((status = 'declined') = (decline_code IS NOT NULL)),
                    refunded_amount INTEGER NOT NULL DEFAULT 0
                        CHECK (refunded_amount >= 0 AND refunded_amount <= amount),
                    network TEXT,
                    pan_last_four TEXT CHECK (pan_last_four GLOB '[0-9][0-9][0-9][0-9]'),
                    root_fingerprint TEXT,
                    created_at TEXT NOT NULL
                );
                CREATE TABLE refunds (
                    id INTEGER PRIMARY KEY,
                    reference TEXT NOT NULL UNIQUE,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    charge_id INTEGER NOT NULL REFERENCES charges (id),
                    amount INTEGER NOT NULL CHECK (amount > 0),
                    created_at TEXT NOT NULL
                );
                CREATE INDEX refunds_by_charge ON refunds (charge_id);
                """),
        Migration(
            "002-kept-payment-methods",
            sql: """
                CREATE TABLE payment_methods (
                    id INTEGER PRIMARY KEY,
                    reference TEXT NOT NULL UNIQUE,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    network TEXT,
                    pan_last_four TEXT CHECK (pan_last_four GLOB '[0-9][0-9][0-9][0-9]'),
                    root_fingerprint TEXT,
                    created_at TEXT NOT NULL
                );
                ALTER TABLE charges ADD COLUMN payment_method_reference TEXT REFERENCES payment_methods (reference);
                """),
    ]

    /// Opens (creating, mode 0600) and migrates the ledger at `path`.
    /// - Throws: ``ProcessorServiceError`` `cannotOpenLedger`.
    init(path: String) throws(ProcessorServiceError) {
        if path != ":memory:" && !FileManager.default.fileExists(atPath: path) {
            let descriptor = open(path, O_CREAT | O_WRONLY | O_EXCL, 0o600)
            if descriptor >= 0 { close(descriptor) }
        }
        do {
            database = try SQLiteDatabase(
                path: path, migrator: Migrator(Self.migrations.map { SQLMigration($0.name, sql: $0.sql) }))
        } catch {
            throw ProcessorServiceError(
                .cannotOpenLedger, "cannot open the ledger \(path): \(error.message)")
        }
    }

    /// The charge made with `idempotencyKey`, if any.
    func charge(idempotencyKey: String) async throws(HTTPError) -> ChargeResource? {
        try await read { connection in
            try Self.charge(where: "idempotency_key = ?", .text(idempotencyKey), in: connection)
        }
    }

    /// Every charge, oldest first.
    func charges() async throws(HTTPError) -> [ChargeResource] {
        try await read { connection in
            try connection.query("\(Self.selectCharges) ORDER BY id").map { row throws(SQLiteError) in
                try Self.resource(row)
            }
        }
    }

    /// Keeps a payment method (its network and last four digits: the ledger never holds a PAN), or answers the
    /// one kept under the same idempotency key.
    func keepPaymentMethod(_ method: PaymentMethodResource, rootFingerprint: String?) async throws(HTTPError)
        -> PaymentMethodResource
    {
        try await write { connection in
            try connection.transaction { connection throws(SQLiteError) -> PaymentMethodResource in
                if let earlier = try Self.paymentMethod(
                    where: "idempotency_key = ?", .text(method.idempotencyKey), in: connection)
                {
                    return earlier
                }
                try connection.run(
                    """
                    INSERT INTO payment_methods (reference, idempotency_key, network, pan_last_four, root_fingerprint,
                        created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """, .text(method.reference), .text(method.idempotencyKey), Value(method.network),
                    Value(method.lastFour), Value(rootFingerprint), .text(method.createdAt))
                return method
            }
        }
    }

    /// The kept payment method with this reference.
    func paymentMethod(reference: String) async throws(HTTPError) -> PaymentMethodResource? {
        try await read { connection in
            try Self.paymentMethod(where: "reference = ?", .text(reference), in: connection)
        }
    }

    private static func paymentMethod(where condition: String, _ value: Value, in connection: Connection)
        throws(SQLiteError) -> PaymentMethodResource?
    {
        try connection.query(
            """
            SELECT reference, idempotency_key, network, pan_last_four, created_at FROM payment_methods
            WHERE \(condition)
            """, value
        ).first.map { row throws(SQLiteError) in
            PaymentMethodResource(
                reference: try row.string("reference"), idempotencyKey: try row.string("idempotency_key"),
                network: try row.optionalString("network"), lastFour: try row.optionalString("pan_last_four"),
                createdAt: try row.string("created_at"))
        }
    }

    /// Records a decided charge, or answers the one already recorded under its key. An approved charge asked to
    /// keep its payment method keeps `keep` in the same transaction.
    /// - Throws: `409 idempotencyConflict` when the key was used with another amount or currency.
    func record(_ charge: ChargeResource, rootFingerprint: String?, keep: PaymentMethodResource? = nil)
        async throws(HTTPError) -> ChargeResource
    {
        var charge = charge
        if let keep, charge.status == .approved { charge.paymentMethodReference = keep.reference }
        let stored = charge
        let existing = try await write { connection -> ChargeResource? in
            try connection.transaction { connection throws(SQLiteError) -> ChargeResource? in
                let charge = stored
                if let earlier = try Self.charge(
                    where: "idempotency_key = ?", .text(charge.idempotencyKey), in: connection)
                {
                    return earlier
                }
                if let keep, charge.status == .approved {
                    try connection.run(
                        """
                        INSERT INTO payment_methods (reference, idempotency_key, network, pan_last_four,
                            root_fingerprint, created_at)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """, .text(keep.reference), .text(keep.idempotencyKey), Value(keep.network),
                        Value(keep.lastFour), Value(rootFingerprint), .text(keep.createdAt))
                }
                try connection.run(
                    """
                    INSERT INTO charges (reference, idempotency_key, amount, currency_code, status, decline_code,
                        refunded_amount, network, pan_last_four, root_fingerprint, created_at, payment_method_reference)
                    VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)
                    """, .text(charge.reference), .text(charge.idempotencyKey), .integer(charge.amount),
                    .text(charge.currencyCode), .text(charge.status.rawValue), Value(charge.declineCode),
                    Value(charge.network), Value(charge.lastFour), Value(rootFingerprint), .text(charge.createdAt),
                    Value(charge.paymentMethodReference))
                return nil
            }
        }
        guard let existing else { return stored }
        try Self.checkSameRequest(existing, amount: charge.amount, currencyCode: charge.currencyCode)
        return existing
    }

    static func checkSameRequest(_ existing: ChargeResource, amount: Int64, currencyCode: String) throws(HTTPError) {
        guard existing.amount == amount, existing.currencyCode == currencyCode else {
            throw HTTPError(
                status: 409, code: "idempotencyConflict",
                message: "The idempotency key \(existing.idempotencyKey) was used for another amount or currency.")
        }
    }

    /// Voids an approved charge without refunds; a voided charge is answered again.
    func void(reference: String) async throws(HTTPError) -> ChargeResource {
        let result = try await write { connection -> Result<ChargeResource, HTTPError> in
            try connection.transaction { connection throws(SQLiteError) -> Result<ChargeResource, HTTPError> in
                guard var charge = try Self.charge(where: "reference = ?", .text(reference), in: connection) else {
                    return .failure(Self.chargeNotFound(reference))
                }
                if charge.status == .voided { return .success(charge) }
                guard charge.status == .approved, charge.refundedAmount == 0 else {
                    return .failure(
                        HTTPError(
                            status: 409, code: "notVoidable",
                            message: "The charge \(reference) is \(charge.status.rawValue) and cannot be voided."))
                }
                try connection.run("UPDATE charges SET status = 'voided' WHERE reference = ?", .text(reference))
                charge.status = .voided
                return .success(charge)
            }
        }
        return try result.get()
    }

    /// Refunds `amount` of a charge once per `idempotencyKey`.
    func refund(reference: String, amount: Int64, idempotencyKey: String, newReference: String, createdAt: String)
        async throws(HTTPError) -> RefundEnvelope
    {
        let result = try await write { connection -> Result<RefundEnvelope, HTTPError> in
            try connection.transaction { connection throws(SQLiteError) -> Result<RefundEnvelope, HTTPError> in
                if let row = try connection.query(
                    """
                    SELECT r.reference, r.idempotency_key, r.amount, r.created_at, c.reference AS charge_reference,
                        c.currency_code
                    FROM refunds r JOIN charges c ON c.id = r.charge_id WHERE r.idempotency_key = ?
                    """, .text(idempotencyKey)
                ).first {
                    let chargeReference = try row.string("charge_reference")
                    guard chargeReference == reference, try row.int64("amount") == amount else {
                        return .failure(
                            HTTPError(
                                status: 409, code: "idempotencyConflict",
                                message: "The refund key \(idempotencyKey) was used for another charge or amount."))
                    }
                    guard let charge = try Self.charge(where: "reference = ?", .text(reference), in: connection) else {
                        return .failure(Self.chargeNotFound(reference))
                    }
                    let refund = RefundResource(
                        reference: try row.string("reference"), idempotencyKey: idempotencyKey,
                        chargeReference: reference, amount: amount, currencyCode: try row.string("currency_code"),
                        createdAt: try row.string("created_at"))
                    return .success(RefundEnvelope(refund: refund, charge: charge))
                }
                guard var charge = try Self.charge(where: "reference = ?", .text(reference), in: connection) else {
                    return .failure(Self.chargeNotFound(reference))
                }
                guard charge.status == .approved || charge.status == .partiallyRefunded else {
                    return .failure(
                        HTTPError(
                            status: 409, code: "notRefundable",
                            message: "The charge \(reference) is \(charge.status.rawValue) and cannot be refunded."))
                }
                let left = charge.amount - charge.refundedAmount
                guard amount <= left else {
                    return .failure(
                        HTTPError(
                            status: 422, code: "refundExceedsCharge",
                            message: "A refund of \(amount) exceeds the \(left) minor units left on \(reference)."))
                }
                charge.refundedAmount += amount
                charge.status = charge.refundedAmount == charge.amount ? .refunded : .partiallyRefunded
                try connection.run(
                    "UPDATE charges SET refunded_amount = ?, status = ? WHERE reference = ?",
                    .integer(charge.refundedAmount), .text(charge.status.rawValue), .text(reference))
                try connection.run(
                    """
                    INSERT INTO refunds (reference, idempotency_key, charge_id, amount, created_at)
                    SELECT ?, ?, id, ?, ? FROM charges WHERE reference = ?
                    """, .text(newReference), .text(idempotencyKey), .integer(amount), .text(createdAt),
                    .text(reference))
                let refund = RefundResource(
                    reference: newReference, idempotencyKey: idempotencyKey, chargeReference: reference,
                    amount: amount, currencyCode: charge.currencyCode, createdAt: createdAt)
                return .success(RefundEnvelope(refund: refund, charge: charge))
            }
        }
        return try result.get()
    }

    // MARK: - SQL

    /// A read beside the writer.
    private func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws(HTTPError) -> T {
        do {
            return try await database.read { connection throws(SQLError) in try Self.translated { try body(connection) }
            }
        } catch {
            throw Self.failed(error)
        }
    }

    /// A write in the next group commit, answered once that commit is on disk.
    private func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws(HTTPError) -> T {
        do {
            return try await database.write { connection throws(SQLError) in
                try Self.translated { try body(connection) }
            }
        } catch {
            throw Self.failed(error)
        }
    }

    private static func translated<T>(_ body: () throws -> T) throws(SQLError) -> T {
        do { return try body() } catch { throw SQLError(error, translating: SQLError.init(sqlite:)) }
    }

    private static func failed(_ error: SQLError) -> HTTPError {
        HTTPError.internalError("The ledger failed: \((error.underlying as? SQLiteError)?.message ?? error.message)")
    }

    private static func chargeNotFound(_ reference: String) -> HTTPError {
        HTTPError(status: 404, code: "chargeNotFound", message: "No charge \(reference).")
    }

    private static let selectCharges = """
        SELECT reference, idempotency_key, amount, currency_code, status, decline_code, refunded_amount, network,
            pan_last_four, created_at, payment_method_reference FROM charges
        """

    private static func charge(where condition: String, _ value: Value, in connection: Connection)
        throws(SQLiteError) -> ChargeResource?
    {
        try connection.query("\(selectCharges) WHERE \(condition)", value).first.map { row throws(SQLiteError) in
            try resource(row)
        }
    }

    private static func resource(_ row: Row) throws(SQLiteError) -> ChargeResource {
        let statusText = try row.string("status")
        guard let status = ChargeStatus(rawValue: statusText) else {
            throw SQLiteError(.typeMismatch, "unknown charge status \(statusText)")
        }
        return ChargeResource(
            reference: try row.string("reference"), idempotencyKey: try row.string("idempotency_key"),
            amount: try row.int64("amount"), currencyCode: try row.string("currency_code"), status: status,
            refundedAmount: try row.int64("refunded_amount"), declineCode: try row.optionalString("decline_code"),
            network: try row.optionalString("network"), lastFour: try row.optionalString("pan_last_four"),
            createdAt: try row.string("created_at"),
            paymentMethodReference: try row.optionalString("payment_method_reference"))
    }
}

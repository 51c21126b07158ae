import ApplePay
import Foundation
import Foundations
import JSONCoding
import MerchantCore
import Postgres

/// The order store for several server instances: one PostgreSQL database shared by all of them, reached through a
/// pool of libpq connections, each on a thread of its own.
///
/// The schema means what ``SQLiteOrderStore``'s does (money as `bigint` minor units, times as `bigint` Unix
/// milliseconds, `transaction_id` UNIQUE, at most one non-declined order per checkout, an append-only event log,
/// refunds with UNIQUE idempotency keys, `pan_last_four` exactly four digits, each order's view secret); its
/// migrations are recorded in `schema_migrations`.
///
/// What must hold across instances is enforced by the database, not by this process:
/// - a token charges once: `payments.transaction_id` is UNIQUE, and a payment locks its checkout's row
///   (`SELECT ... FOR UPDATE`) before it looks for an existing order, so two instances receiving the same token at
///   once write one order and both answer with it;
/// - checkout updates and the payment on that checkout serialise on the same row lock;
/// - a payment settles once: ``settlePayment(orderID:charge:)`` locks the order and settles only from `pending` or
///   `unknown`, so any number of reconcilers settle it once;
/// - a write is one transaction: when it fails, nothing of it is stored, and the caller gets `storage`. A lost race
///   (`serializationFailure`, `deadlockDetected`) is run again; a read that loses its connection is retried on a
///   new one. The pool opens new connections by itself once the database is back.
public final class PostgresOrderStore: OrderStore {
    /// The connections, each owned by a thread of the pool.
    public let pool: ConnectionPool
    let clock: @Sendable () -> Date

    /// The schema, in order. Never edit a released migration: append a new one.
    public static let migrations: [(name: String, sql: String)] = [
        ("001-checkouts-orders-payments-refunds-events", schema),
        ("002-prune-expired-checkouts", pruningSchema),
        ("003-wallet-orders-fulfillments-registrations", PostgresOrderStore.walletOrdersSchema),
        ("004-subscriptions-merchant-tokens", PostgresOrderStore.subscriptionsSchema),
    ]

    /// Connects, and creates or upgrades the schema (several instances may start at once: the migrations run under
    /// an advisory lock).
    /// - Parameters:
    ///   - uri: a libpq connection URI (`postgresql://user@host:5432/db`, `postgresql:///db?host=/socket/dir`).
    ///   - poolSize: how many connections (and threads) this store keeps.
    ///   - clock: the time stamped on rows and events.
    /// - Throws: ``OrderStoreError`` `storage` when the database cannot be reached or migrated.
    public init(uri: String, poolSize: Int = 4, clock: @escaping @Sendable () -> Date = { Date() })
        async throws(OrderStoreError)
    {
        self.pool = ConnectionPool(uri: uri, size: poolSize)
        self.clock = clock
        do {
            try await pool.withConnection { connection in try Self.migrate(connection) }
        } catch {
            pool.close()
            throw OrderStoreError(.storage, "cannot open the PostgreSQL order store: \(error)")
        }
    }

    deinit { pool.close() }

    /// The recorded migration names, in order.
    public func appliedMigrations() async throws(OrderStoreError) -> [String] {
        try await read("read migrations") { connection in
            try connection.query("SELECT name FROM schema_migrations ORDER BY position").map { try $0.string("name") }
        }
    }

    private static func migrate(_ connection: PostgresConnection) throws {
        try connection.transaction { connection in
            // One migrating instance at a time; the others wait here, then find the work done.
            try connection.query("SELECT pg_advisory_xact_lock(7142008851)")
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    position integer PRIMARY KEY,
                    name text NOT NULL UNIQUE,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let recorded = try connection.query("SELECT name FROM schema_migrations ORDER BY position").map {
                try $0.string("name")
            }
            guard recorded.count <= migrations.count else {
                throw PostgresError(
                    .migration,
                    "the database has \(recorded.count) migrations, this program knows \(migrations.count): it is newer than the program"
                )
            }
            for (position, name) in recorded.enumerated() where migrations[position].name != name {
                throw PostgresError(
                    .migration,
                    "migration \(position + 1) is recorded as \"\(name)\" but the program calls it \"\(migrations[position].name)\""
                )
            }
            for (offset, migration) in migrations.enumerated() where offset >= recorded.count {
                try connection.execute(migration.sql)
                try connection.run(
                    "INSERT INTO schema_migrations (position, name) VALUES ($1, $2)", .integer(Int64(offset + 1)),
                    .text(migration.name))
            }
        }
    }

    // MARK: Checkouts

    public func insertCheckout(_ checkout: Checkout) async throws(OrderStoreError) {
        let now = millis(clock())
        let inserted = try await write("insert checkout") { connection -> Bool in
            let changed = try connection.run(
                """
                INSERT INTO checkouts (id, currency, state_json, application_data, created_at, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING
                """, .text(checkout.id), .text(checkout.currencyCode), .text(try json(checkout)),
                .text(checkout.applicationData), .integer(millis(checkout.createdAt)), .integer(now))
            guard changed == 1 else { return false }
            try self.appendEvent(
                connection, "checkoutCreated", checkoutID: checkout.id, orderID: nil,
                ["items": String(checkout.items.count)], at: now)
            return true
        }
        if !inserted { throw OrderStoreError(.conflict, "checkout \(checkout.id) exists") }
    }

    public func checkout(id: String) async throws(OrderStoreError) -> Checkout? {
        try await read("read checkout") { connection in
            guard let row = try connection.query("SELECT state_json FROM checkouts WHERE id = $1", .text(id)).first
            else { return nil }
            return try decode(Checkout.self, try row.string("state_json"))
        }
    }

    public func updateCheckout(_ checkout: Checkout) async throws(OrderStoreError) {
        let now = millis(clock())
        let found = try await write("update checkout") { connection -> Bool in
            // The UPDATE takes the checkout's row lock: a payment on this checkout waits for it, and it for a payment.
            let changed = try connection.run(
                "UPDATE checkouts SET state_json = $1, updated_at = $2 WHERE id = $3", .text(try json(checkout)),
                .integer(now), .text(checkout.id))
            guard changed == 1 else { return false }
            var detail: [String: String] = [:]
            detail["countryCode"] = checkout.shippingAddress?.countryCode
            detail["shippingMethod"] = checkout.shippingMethodIdentifier
            detail["couponCode"] = checkout.couponCode
            detail["paymentMethodType"] = checkout.paymentMethodType
            try self.appendEvent(connection, "checkoutUpdated", checkoutID: checkout.id, orderID: nil, detail, at: now)
            return true
        }
        if !found { throw OrderStoreError(.notFound, "no checkout \(checkout.id)") }
    }

    // MARK: Payments

    private enum BeginAnswer: Sendable {
        case start(PaymentStart)
        case noCheckout
    }

    /// Locks the checkout's row, then looks for the transaction id and for a live order: two instances paying one
    /// checkout (with the same token or two) run this one after the other. A UNIQUE violation can then only come
    /// from the same token on two checkouts; the attempt runs again and answers with the order stored first.
    public func beginPayment(_ order: NewOrder) async throws(OrderStoreError) -> PaymentStart {
        var lastError: (any Error)?
        for _ in 0..<2 {
            do {
                switch try await transaction("begin payment", { connection in try self.begin(order, connection) }) {
                case .start(let start): return start
                case .noCheckout: throw OrderStoreError(.notFound, "no checkout \(order.checkoutID)")
                }
            } catch let error as OrderStoreError where error.code == .notFound {
                throw error
            } catch PostgresError.Code.uniqueViolation {
                lastError = PostgresError(.uniqueViolation, "transaction id stored twice")
                continue
            } catch {
                throw OrderStoreError(.storage, "begin payment: \(error)")
            }
        }
        throw OrderStoreError(.storage, "begin payment: \(lastError.map { "\($0)" } ?? "")")
    }

    private func begin(_ order: NewOrder, _ connection: PostgresConnection) throws -> BeginAnswer {
        if let existing = try loadOrder(connection, where: "p.transaction_id = $1", .text(order.transactionID)) {
            return .start(.existing(existing))
        }
        guard
            !(try connection.query("SELECT id FROM checkouts WHERE id = $1 FOR UPDATE", .text(order.checkoutID))
                .isEmpty)
        else { return .noCheckout }
        // Read again under the lock: another instance may have committed this token while we waited.
        if let existing = try loadOrder(connection, where: "p.transaction_id = $1", .text(order.transactionID)) {
            return .start(.existing(existing))
        }
        if let live = try loadOrder(
            connection, where: "o.checkout_id = $1 AND o.status <> 'declined'", .text(order.checkoutID))
        {
            return .start(.checkoutLocked(live))
        }
        let now = millis(clock())
        let orderID = "ord_" + randomHex(bytes: 12)
        try connection.run(
            """
            INSERT INTO orders (id, checkout_id, status, currency, subtotal_minor, discount_minor,
                shipping_minor, tax_minor, fee_minor, total_minor, items_json, shipping_method_json, coupon_code,
                shipping_contact_json, billing_contact_json, payment_network, pan_last_four, view_secret,
                created_at, updated_at)
            VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
            """,
            parameters: [
                .text(orderID), .text(order.checkoutID), .text(order.currencyCode),
                .integer(order.totals.subtotal), .integer(order.totals.discount),
                .integer(order.totals.shipping), .integer(order.totals.tax), .integer(order.totals.fee),
                .integer(order.totals.total),
                .text(try json(order.lines)), PostgresValue(try order.shippingMethod.map(json)),
                PostgresValue(order.couponCode), PostgresValue(try order.shippingContact.map(json)),
                PostgresValue(try order.billingContact.map(json)), PostgresValue(order.paymentNetwork),
                PostgresValue(order.panLastFour), .text(randomHex(bytes: 16)), .integer(now), .integer(now),
            ])
        try connection.run(
            """
            INSERT INTO payments (id, order_id, transaction_id, status, amount_minor, currency, created_at,
                updated_at)
            VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7)
            """, .text("pay_" + randomHex(bytes: 12)), .text(orderID), .text(order.transactionID),
            .integer(order.totals.total), .text(order.currencyCode), .integer(now), .integer(now))
        try appendEvent(
            connection, "paymentStarted", checkoutID: order.checkoutID, orderID: orderID,
            ["amount": String(order.totals.total), "currencyCode": order.currencyCode], at: now)
        guard let created = try loadOrder(connection, where: "o.id = $1", .text(orderID)) else {
            throw PostgresError(.other, "the order just written cannot be read back")
        }
        return .start(.started(created))
    }

    private enum CompleteAnswer: Sendable {
        case done(Order)
        case notFound
        case notPending(OrderStatus)
    }

    public func completePayment(orderID: String, outcome: ChargeAttempt) async throws(OrderStoreError) -> Order {
        let transition = PaymentTransition(outcome)
        let answer: CompleteAnswer
        do {
            answer = try await transaction("complete payment") { connection -> CompleteAnswer in
                guard let current = try self.lockOrder(connection, orderID) else { return .notFound }
                guard current.status == .pending else { return .notPending(current.status) }
                try self.apply(transition, to: current, from: ["pending"], connection: connection)
                guard let updated = try self.loadOrder(connection, where: "o.id = $1", .text(orderID)) else {
                    throw PostgresError(.other, "the order just updated cannot be read back")
                }
                return .done(updated)
            }
        } catch {
            throw OrderStoreError(.storage, "complete payment: \(error)")
        }
        switch answer {
        case .done(let order): return order
        case .notFound: throw OrderStoreError(.notFound, "no order \(orderID)")
        case .notPending(let status): throw OrderStoreError(.conflict, "order \(orderID) is already \(status.rawValue)")
        }
    }

    public func unsettledOrders(updatedBefore cutoff: Date, limit: Int) async throws(OrderStoreError) -> [Order] {
        try await read("read unsettled orders") { connection in
            try self.loadOrders(
                connection, where: "o.status IN ('pending', 'unknown') AND o.updated_at < $1",
                [.integer(millis(cutoff))], order: "o.updated_at ASC, o.id ASC", limit: limit)
        }
    }

    /// Locks the order, then settles it only if it is still `pending` or `unknown`: a second reconciler (in this
    /// instance or another) waits for the first and then finds nothing to do.
    public func settlePayment(orderID: String, charge: ProcessorCharge?) async throws(OrderStoreError) -> Order? {
        let transition = PaymentTransition(settling: charge)
        return try await write("settle payment") { connection -> Order? in
            guard let current = try self.lockOrder(connection, orderID), current.status.isUnsettled else { return nil }
            try self.apply(transition, to: current, from: ["pending", "unknown"], connection: connection)
            return try self.loadOrder(connection, where: "o.id = $1", .text(orderID))
        }
    }

    public func orders(status: OrderStatus?, limit: Int) async throws(OrderStoreError) -> [Order] {
        try await read("list orders") { connection in
            if let status {
                return try self.loadOrders(
                    connection, where: "o.status = $1", [.text(status.rawValue)], order: "o.created_at DESC, o.id DESC",
                    limit: limit)
            }
            return try self.loadOrders(
                connection, where: "TRUE", [], order: "o.created_at DESC, o.id DESC", limit: limit)
        }
    }

    // MARK: Refunds and voids

    public func beginRefund(orderID: String, amount: Int64, idempotencyKey: String) async throws(OrderStoreError)
        -> RefundStart
    {
        let answer = try await write("begin refund") { connection -> RefundStart? in
            // The order's lock orders refunds of one order; the key's UNIQUE constraint settles a key used twice.
            guard let order = try self.lockOrder(connection, orderID) else { return nil }
            if let existing = try self.loadRefunds(connection, where: "idempotency_key = $1", .text(idempotencyKey))
                .first
            {
                return existing.orderID == orderID && existing.amount == amount
                    ? .existing(existing, order) : .keyReused
            }
            guard order.status == .paid || order.status == .partiallyRefunded else { return .notRefundable(order) }
            let reserved =
                try connection.query(
                    "SELECT coalesce(sum(amount_minor), 0) AS n FROM refunds WHERE order_id = $1", .text(orderID)
                ).first?.int64("n") ?? 0
            let left = order.totals.total - reserved
            guard amount > 0, amount <= left else { return .exceedsRemaining(left: left, order) }
            let now = millis(self.clock())
            let refund = RefundRecord(
                id: "rfd_" + randomHex(bytes: 12), orderID: orderID, idempotencyKey: idempotencyKey, amount: amount,
                succeeded: false, processorReference: nil)
            try connection.run(
                """
                INSERT INTO refunds (id, order_id, idempotency_key, amount_minor, status, created_at, updated_at)
                VALUES ($1, $2, $3, $4, 'pending', $5, $6)
                """, .text(refund.id), .text(orderID), .text(idempotencyKey), .integer(amount), .integer(now),
                .integer(now))
            try self.appendEvent(
                connection, "refundRequested", checkoutID: order.checkoutID, orderID: orderID,
                ["refundId": refund.id, "amount": String(amount)], at: now)
            return .started(refund, order)
        }
        guard let answer else { throw OrderStoreError(.notFound, "no order \(orderID)") }
        return answer
    }

    public func completeRefund(id: String, processorReference: String) async throws(OrderStoreError) -> Order {
        let result = try await write("complete refund") { connection -> Order? in
            guard
                let orderID = try connection.query("SELECT order_id FROM refunds WHERE id = $1", .text(id)).first?
                    .string("order_id"),
                let order = try self.lockOrder(connection, orderID),
                let refund = try self.loadRefunds(connection, where: "id = $1", .text(id)).first
            else { return nil }
            guard !refund.succeeded else { return order }
            let now = millis(self.clock())
            try connection.run(
                "UPDATE refunds SET status = 'succeeded', processor_reference = $1, updated_at = $2 WHERE id = $3",
                .text(processorReference), .integer(now), .text(id))
            let refunded = order.refunded + refund.amount
            let status: OrderStatus = refunded >= order.totals.total ? .refunded : .partiallyRefunded
            try connection.run(
                "UPDATE orders SET refunded_minor = $1, status = $2, updated_at = $3 WHERE id = $4",
                .integer(refunded), .text(status.rawValue), .integer(now), .text(order.id))
            try self.appendEvent(
                connection, "refundSucceeded", checkoutID: order.checkoutID, orderID: order.id,
                ["refundId": id, "amount": String(refund.amount), "status": status.rawValue], at: now)
            return try self.loadOrder(connection, where: "o.id = $1", .text(order.id))
        }
        guard let result else { throw OrderStoreError(.notFound, "no refund \(id)") }
        return result
    }

    public func cancelRefund(id: String) async throws(OrderStoreError) {
        try await write("cancel refund") { connection in
            guard let refund = try self.loadRefunds(connection, where: "id = $1", .text(id)).first, !refund.succeeded
            else { return }
            guard try connection.run("DELETE FROM refunds WHERE id = $1 AND status = 'pending'", .text(id)) == 1
            else { return }
            try self.appendEvent(
                connection, "refundCancelled", checkoutID: nil, orderID: refund.orderID,
                ["refundId": id, "amount": String(refund.amount)], at: millis(self.clock()))
        }
    }

    /// Deletes checkouts created before `cutoff` that never got an order, with their events, `batch` at a time (one
    /// transaction each). The event log's trigger lets a DELETE through only for events of a checkout that is gone
    /// and never had an order (migration 002). Returns how many checkouts were deleted.
    public func pruneExpiredCheckouts(createdBefore cutoff: Date, batch: Int) async throws(OrderStoreError) -> Int {
        var total = 0
        while true {
            let deleted = try await write("prune expired checkouts") { connection -> Int in
                let ids = try connection.query(
                    """
                    SELECT id FROM checkouts c WHERE c.created_at < $1
                        AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.checkout_id = c.id)
                    ORDER BY c.created_at LIMIT $2 FOR UPDATE SKIP LOCKED
                    """, .integer(millis(cutoff)), .integer(Int64(max(1, batch)))
                ).map { try $0.string("id") }
                for id in ids {
                    try connection.run("DELETE FROM checkouts WHERE id = $1", .text(id))
                    try connection.run("DELETE FROM events WHERE checkout_id = $1 AND order_id IS NULL", .text(id))
                }
                return ids.count
            }
            total += deleted
            if deleted < max(1, batch) { return total }
        }
    }

    private enum VoidAnswer: Sendable {
        case done(Order)
        case conflict(OrderStatus)
        case notFound
    }

    public func recordVoid(orderID: String) async throws(OrderStoreError) -> Order {
        let answer = try await write("record void") { connection -> VoidAnswer in
            guard let order = try self.lockOrder(connection, orderID) else { return .notFound }
            if order.status == .voided { return .done(order) }
            let refunds =
                try connection.query("SELECT count(*) AS n FROM refunds WHERE order_id = $1", .text(orderID)).first?
                .int64("n") ?? 0
            guard order.status == .paid, refunds == 0 else { return .conflict(order.status) }
            let now = millis(self.clock())
            try connection.run(
                "UPDATE orders SET status = 'voided', updated_at = $1 WHERE id = $2 AND status = 'paid'",
                .integer(now), .text(orderID))
            try connection.run(
                "UPDATE payments SET status = 'voided', updated_at = $1 WHERE order_id = $2", .integer(now),
                .text(orderID))
            try self.appendEvent(
                connection, "paymentVoided", checkoutID: order.checkoutID, orderID: orderID, ["status": "voided"],
                at: now)
            guard let updated = try self.loadOrder(connection, where: "o.id = $1", .text(orderID)) else {
                return .notFound
            }
            return .done(updated)
        }
        switch answer {
        case .done(let order): return order
        case .conflict(let status):
            throw OrderStoreError(.conflict, "order \(orderID) is \(status.rawValue) or has refunds")
        case .notFound: throw OrderStoreError(.notFound, "no order \(orderID)")
        }
    }

    // MARK: Reads

    public func order(id: String) async throws(OrderStoreError) -> Order? {
        try await read("read order") { connection in try self.loadOrder(connection, where: "o.id = $1", .text(id)) }
    }

    public func order(transactionID: String) async throws(OrderStoreError) -> Order? {
        try await read("read order") { connection in
            try self.loadOrder(connection, where: "p.transaction_id = $1", .text(transactionID))
        }
    }

    public func events(checkoutID: String) async throws(OrderStoreError) -> [StoreEvent] {
        try await read("read events") { connection in
            try connection.query(
                """
                SELECT sequence, at, kind, checkout_id, order_id, detail_json FROM events
                WHERE checkout_id = $1 ORDER BY sequence
                """, .text(checkoutID)
            ).map { row in
                StoreEvent(
                    sequence: try row.int64("sequence"), at: date(try row.int64("at")), kind: try row.string("kind"),
                    checkoutID: try row.optionalString("checkout_id"), orderID: try row.optionalString("order_id"),
                    detail: try row.string("detail_json"))
            }
        }
    }

    // MARK: Transactions

    /// What one attempt at a transaction gave: its value, or its error and whether `BEGIN` had gone through.
    private enum Attempt<T: Sendable>: Sendable {
        case value(T)
        case failure(any Error, started: Bool)
    }

    /// Runs `body` in a transaction on a pool connection. A lost race (serialization failure, deadlock) is run
    /// again, and so is a connection that failed before the transaction began (nothing of it reached the
    /// database); with `retryingLostConnections` (reads), also one lost in the middle.
    /// - Throws: the last error (``PostgresError`` or what `body` threw).
    func transaction<T: Sendable>(
        _ what: String, retryingLostConnections: Bool = false,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            let result: Attempt<T>
            do {
                result = try await pool.withConnection { connection -> Attempt<T> in
                    var started = false
                    do {
                        return .value(
                            try connection.transaction { connection in
                                started = true
                                return try body(connection)
                            })
                    } catch {
                        return .failure(error, started: started)
                    }
                }
            } catch {
                result = .failure(error, started: false)  // no connection could be opened
            }
            switch result {
            case .value(let value): return value
            case .failure(let error, let started):
                guard attempt < 5, let postgres = error as? PostgresError else { throw error }
                let lostRace = postgres.code == .serializationFailure || postgres.code == .deadlockDetected
                let lostConnection =
                    postgres.code == .connectionFailure && (!started || retryingLostConnections) && attempt < 3
                guard lostRace || lostConnection else { throw error }
                try? await Task.sleep(for: .milliseconds(lostConnection ? 50 * attempt : Int.random(in: 1...10)))
            }
        }
    }

    /// A read-only transaction, retried on a lost connection; errors become ``OrderStoreError``.
    func read<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection) throws -> T)
        async throws(OrderStoreError) -> T
    {
        do {
            return try await transaction(what, retryingLostConnections: true, body)
        } catch {
            throw storeError(what, error)
        }
    }

    /// A write transaction; errors become ``OrderStoreError`` (`conflict` for a constraint, else `storage`).
    func write<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection) throws -> T)
        async throws(OrderStoreError) -> T
    {
        do {
            return try await transaction(what, body)
        } catch let error as PostgresError
            where [.uniqueViolation, .foreignKeyViolation, .checkViolation, .notNullViolation, .integrityViolation]
            .contains(error.code)
        {
            throw OrderStoreError(.conflict, "\(what): \(error.message)")
        } catch {
            throw storeError(what, error)
        }
    }

    private func storeError(_ what: String, _ error: any Error) -> OrderStoreError {
        if let error = error as? OrderStoreError { return error }
        if let error = error as? PostgresError, error.code == .typeMismatch {
            return OrderStoreError(.corrupt, "\(what): \(error)")
        }
        return OrderStoreError(.storage, "\(what): \(error)")
    }

    // MARK: Rows

    func appendEvent(
        _ connection: PostgresConnection, _ kind: String, checkoutID: String?, orderID: String?,
        _ detail: [String: String], at time: Int64
    ) throws {
        try connection.run(
            "INSERT INTO events (at, kind, checkout_id, order_id, detail_json) VALUES ($1, $2, $3, $4, $5)",
            .integer(time), .text(kind), PostgresValue(checkoutID), PostgresValue(orderID), .text(try json(detail)))
    }

    /// The order, its row locked until the transaction ends.
    func lockOrder(_ connection: PostgresConnection, _ id: String) throws -> Order? {
        guard !(try connection.query("SELECT id FROM orders WHERE id = $1 FOR UPDATE", .text(id)).isEmpty) else {
            return nil
        }
        return try loadOrder(connection, where: "o.id = $1", .text(id))
    }

    func loadOrder(_ connection: PostgresConnection, where condition: String, _ value: PostgresValue) throws
        -> Order?
    {
        try loadOrders(connection, where: condition, [value], order: "o.created_at DESC, o.id DESC", limit: 1).first
    }

    private func loadOrders(
        _ connection: PostgresConnection, where condition: String, _ values: [PostgresValue], order: String,
        limit: Int
    ) throws -> [Order] {
        let rows = try connection.query(
            """
            SELECT o.id, o.checkout_id, o.status, o.currency, o.subtotal_minor, o.discount_minor, o.shipping_minor,
                o.tax_minor, o.fee_minor, o.total_minor, o.items_json, o.shipping_method_json, o.coupon_code,
                o.shipping_contact_json, o.billing_contact_json, o.payment_network, o.pan_last_four, o.created_at,
                o.updated_at, o.refunded_minor, o.view_secret, p.id AS payment_id, p.transaction_id,
                p.status AS payment_status, p.amount_minor, p.currency AS payment_currency, p.processor_reference,
                p.failure_code, p.failure_message
            FROM orders o JOIN payments p ON p.order_id = o.id
            WHERE \(condition)
            ORDER BY \(order) LIMIT $\(values.count + 1)
            """, parameters: values + [.integer(Int64(max(1, limit)))])
        return try rows.map(orderRow)
    }

    private func orderRow(_ row: PostgresRow) throws -> Order {
        guard let status = OrderStatus(rawValue: try row.string("status")),
            let paymentStatus = PaymentStatus(rawValue: try row.string("payment_status"))
        else { throw PostgresError(.typeMismatch, "unknown order or payment status") }
        return Order(
            id: try row.string("id"), checkoutID: try row.string("checkout_id"), status: status,
            currencyCode: try row.string("currency"), lines: try decode([OrderLine].self, try row.string("items_json")),
            totals: OrderTotals(
                subtotal: try row.int64("subtotal_minor"), discount: try row.int64("discount_minor"),
                shipping: try row.int64("shipping_minor"), tax: try row.int64("tax_minor"),
                fee: try row.int64("fee_minor"), total: try row.int64("total_minor")),
            shippingMethod: try row.optionalString("shipping_method_json").map {
                try decode(OrderShippingMethod.self, $0)
            },
            couponCode: try row.optionalString("coupon_code"),
            shippingContact: try row.optionalString("shipping_contact_json").map { try decode(Contact.self, $0) },
            billingContact: try row.optionalString("billing_contact_json").map { try decode(Contact.self, $0) },
            paymentNetwork: try row.optionalString("payment_network"),
            panLastFour: try row.optionalString("pan_last_four"),
            payment: PaymentRecord(
                id: try row.string("payment_id"), transactionID: try row.string("transaction_id"),
                status: paymentStatus, amount: try row.int64("amount_minor"),
                currencyCode: try row.string("payment_currency"),
                processorReference: try row.optionalString("processor_reference"),
                failureCode: try row.optionalString("failure_code"),
                failureMessage: try row.optionalString("failure_message")),
            refunded: try row.int64("refunded_minor"), viewSecret: try row.string("view_secret"),
            createdAt: date(try row.int64("created_at")), updatedAt: date(try row.int64("updated_at")))
    }

    private func loadRefunds(_ connection: PostgresConnection, where condition: String, _ value: PostgresValue)
        throws -> [RefundRecord]
    {
        try connection.query(
            """
            SELECT id, order_id, idempotency_key, amount_minor, status, processor_reference FROM refunds
            WHERE \(condition)
            """, value
        ).map { row in
            RefundRecord(
                id: try row.string("id"), orderID: try row.string("order_id"),
                idempotencyKey: try row.string("idempotency_key"), amount: try row.int64("amount_minor"),
                succeeded: try row.string("status") == "succeeded",
                processorReference: try row.optionalString("processor_reference"))
        }
    }

    /// Moves a payment and its order to the transition's states, if the order is still in one of `states`.
    private func apply(
        _ transition: PaymentTransition, to current: Order, from states: [String], connection: PostgresConnection
    ) throws {
        let now = millis(clock())
        let changed = try connection.run(
            "UPDATE orders SET status = $1, updated_at = $2 WHERE id = $3 AND status = ANY($4::text[])",
            .text(transition.orderStatus.rawValue), .integer(now), .text(current.id),
            .text("{" + states.joined(separator: ",") + "}"))
        guard changed == 1 else { throw PostgresError(.other, "order \(current.id) changed state meanwhile") }
        try connection.run(
            """
            UPDATE payments SET status = $1, processor_reference = coalesce($2, processor_reference),
                failure_code = $3, failure_message = $4, updated_at = $5
            WHERE order_id = $6
            """, .text(transition.paymentStatus.rawValue), PostgresValue(transition.reference),
            PostgresValue(transition.failureCode), PostgresValue(transition.failureMessage), .integer(now),
            .text(current.id))
        var detail = ["status": transition.orderStatus.rawValue, "from": current.status.rawValue]
        detail["failureCode"] = transition.failureCode
        detail["processorReference"] = transition.reference
        try appendEvent(
            connection, transition.eventKind, checkoutID: current.checkoutID, orderID: current.id, detail, at: now)
    }
}

private func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
private func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

private func json<T: Encodable>(_ value: T) throws(PostgresError) -> String {
    do {
        return String(decoding: try SortedJSONEncoder().encode(value), as: UTF8.self)
    } catch {
        throw PostgresError(.other, "cannot encode \(T.self) as JSON")
    }
}

private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws(PostgresError) -> T {
    do {
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    } catch {
        throw PostgresError(.typeMismatch, "corrupt JSON for \(T.self) in the store")
    }
}

/// Migration 001: the schema of ``SQLiteOrderStore`` after its migration 004, in PostgreSQL's words.
private let schema = """
    CREATE TABLE checkouts (
        id text PRIMARY KEY,
        currency text NOT NULL CHECK (length(currency) = 3),
        state_json text NOT NULL,
        application_data text NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
    );
    CREATE TABLE orders (
        id text PRIMARY KEY,
        checkout_id text NOT NULL REFERENCES checkouts(id),
        status text NOT NULL CHECK (status IN (
            'pending', 'paid', 'declined', 'unknown', 'refunded', 'partiallyRefunded', 'voided')),
        currency text NOT NULL CHECK (length(currency) = 3),
        subtotal_minor bigint NOT NULL,
        discount_minor bigint NOT NULL CHECK (discount_minor >= 0),
        shipping_minor bigint NOT NULL CHECK (shipping_minor >= 0),
        tax_minor bigint NOT NULL CHECK (tax_minor >= 0),
        fee_minor bigint NOT NULL DEFAULT 0 CHECK (fee_minor >= 0),
        total_minor bigint NOT NULL CHECK (total_minor >= 0),
        refunded_minor bigint NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0 AND refunded_minor <= total_minor),
        items_json text NOT NULL,
        shipping_method_json text,
        coupon_code text,
        shipping_contact_json text,
        billing_contact_json text,
        payment_network text,
        pan_last_four text CHECK (pan_last_four IS NULL OR pan_last_four ~ '^[0-9]{4}$'),
        view_secret text NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
    );
    CREATE UNIQUE INDEX orders_one_live_order_per_checkout ON orders(checkout_id) WHERE status <> 'declined';
    CREATE INDEX orders_by_checkout ON orders(checkout_id);
    CREATE INDEX orders_by_status ON orders(status, updated_at);
    CREATE INDEX orders_by_creation ON orders(created_at DESC, id DESC);
    CREATE TABLE payments (
        id text PRIMARY KEY,
        order_id text NOT NULL UNIQUE REFERENCES orders(id),
        transaction_id text NOT NULL UNIQUE,
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'unknown', 'voided')),
        amount_minor bigint NOT NULL CHECK (amount_minor >= 0),
        currency text NOT NULL CHECK (length(currency) = 3),
        processor_reference text,
        failure_code text,
        failure_message text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
    );
    CREATE TABLE refunds (
        id text PRIMARY KEY,
        order_id text NOT NULL REFERENCES orders(id),
        idempotency_key text NOT NULL UNIQUE,
        amount_minor bigint NOT NULL CHECK (amount_minor > 0),
        status text NOT NULL CHECK (status IN ('pending', 'succeeded')),
        processor_reference text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
    );
    CREATE INDEX refunds_by_order ON refunds(order_id);
    CREATE TABLE events (
        sequence bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        at bigint NOT NULL,
        kind text NOT NULL,
        checkout_id text,
        order_id text,
        detail_json text NOT NULL DEFAULT '{}'
    );
    CREATE INDEX events_by_checkout ON events(checkout_id);
    CREATE INDEX events_by_order ON events(order_id);
    CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'events are append-only'; END $$;
    CREATE TRIGGER events_append_only_update BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION events_append_only();
    CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
    """

/// Migration 002: expired unpaid checkouts may be pruned with their events. The event log stays append-only for
/// everything else: a DELETE passes only for an event of a checkout that no longer exists and never had an order.
let pruningSchema = """
    CREATE OR REPLACE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND OLD.order_id IS NULL AND OLD.checkout_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM checkouts WHERE id = OLD.checkout_id)
            AND NOT EXISTS (SELECT 1 FROM orders WHERE checkout_id = OLD.checkout_id) THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'events are append-only';
    END $$;
    CREATE INDEX IF NOT EXISTS checkouts_by_created ON checkouts(created_at);
    """

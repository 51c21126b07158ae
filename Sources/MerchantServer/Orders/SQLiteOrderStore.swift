import Foundation
import SQLite

/// The embedded order store: one SQLite file in WAL mode, owned by this actor's single connection.
///
/// Tables (created by ``migrations``, recorded in `schema_migrations`):
/// - `checkouts`: id, currency, the checkout as JSON (items, redacted address, selections), applicationData.
/// - `orders`: status `pending`/`paid`/`failed`, money as INTEGER minor units + currency, items, contacts and
///   shipping method as JSON, payment network and the PAN's last four digits (a CHECK allows exactly four digits:
///   no full PAN, cryptogram or expiry has a column). At most one pending-or-paid order per checkout (partial
///   unique index).
/// - `payments`: one per order, `transaction_id` UNIQUE (the idempotency key), status, processor reference or
///   failure code.
/// - `events`: the append-only log (triggers refuse UPDATE and DELETE).
///
/// Several processes (or stores) may open the same file: writes use `BEGIN IMMEDIATE` and a busy timeout, and
/// the UNIQUE constraint settles a double submit between them.
/// Every call runs on the store's own thread (``ThreadExecutor``), never on Swift's shared pool.
public actor SQLiteOrderStore: OrderStore {
    /// The thread the connection lives on.
    nonisolated let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let connection: Connection
    private let clock: @Sendable () -> Date
    /// The database file (or `:memory:`).
    public nonisolated let path: String

    /// The schema, in order. Never edit a released migration: append a new one.
    public static let migrations: [Migration] = [
        Migration(
            "001-checkouts-orders-payments-events",
            sql: """
                CREATE TABLE checkouts (
                    id TEXT PRIMARY KEY,
                    currency TEXT NOT NULL CHECK (length(currency) = 3),
                    state_json TEXT NOT NULL,
                    application_data TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE orders (
                    id TEXT PRIMARY KEY,
                    checkout_id TEXT NOT NULL REFERENCES checkouts(id),
                    status TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
                    currency TEXT NOT NULL CHECK (length(currency) = 3),
                    subtotal_minor INTEGER NOT NULL,
                    discount_minor INTEGER NOT NULL CHECK (discount_minor >= 0),
                    shipping_minor INTEGER NOT NULL CHECK (shipping_minor >= 0),
                    tax_minor INTEGER NOT NULL CHECK (tax_minor >= 0),
                    total_minor INTEGER NOT NULL CHECK (total_minor >= 0),
                    items_json TEXT NOT NULL,
                    shipping_method_json TEXT,
                    coupon_code TEXT,
                    shipping_contact_json TEXT,
                    billing_contact_json TEXT,
                    payment_network TEXT,
                    pan_last_four TEXT CHECK (
                        pan_last_four IS NULL OR (length(pan_last_four) = 4 AND pan_last_four NOT GLOB '*[^0-9]*')),
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE payments (
                    id TEXT PRIMARY KEY,
                    order_id TEXT NOT NULL UNIQUE REFERENCES orders(id),
                    transaction_id TEXT NOT NULL UNIQUE,
                    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'error')),
                    amount_minor INTEGER NOT NULL CHECK (amount_minor >= 0),
                    currency TEXT NOT NULL CHECK (length(currency) = 3),
                    processor_reference TEXT,
                    failure_code TEXT,
                    failure_message TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE events (
                    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                    at INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    checkout_id TEXT,
                    order_id TEXT,
                    detail_json TEXT NOT NULL DEFAULT '{}'
                );
                CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
                BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
                CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
                BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
                """),
        Migration(
            "002-indexes",
            sql: """
                CREATE UNIQUE INDEX orders_one_live_order_per_checkout ON orders(checkout_id)
                    WHERE status IN ('pending', 'paid');
                CREATE INDEX orders_by_checkout ON orders(checkout_id);
                CREATE INDEX events_by_checkout ON events(checkout_id);
                CREATE INDEX events_by_order ON events(order_id);
                """),
        Migration(
            "003-order-payment-method-fee",
            sql: """
                ALTER TABLE orders ADD COLUMN fee_minor INTEGER NOT NULL DEFAULT 0 CHECK (fee_minor >= 0);
                """),
    ]

    /// Opens (creating and migrating if needed) the store.
    /// - Parameters:
    ///   - path: the database file, or `:memory:` for a private in-memory store.
    ///   - clock: the time stamped on rows and events.
    /// - Throws: ``OrderStoreError`` `storage` when the file cannot be opened or migrated.
    public init(path: String, clock: @escaping @Sendable () -> Date = { Date() }) throws(OrderStoreError) {
        do {
            let connection = try Connection(path: path)
            try connection.migrate(Self.migrations)
            self.connection = connection
        } catch {
            throw OrderStoreError(.storage, "cannot open the order store at \(path): \(error)")
        }
        self.path = path
        self.clock = clock
        self.executor = ThreadExecutor(name: "SQLiteOrderStore")
    }

    deinit { executor.stop() }

    // MARK: Checkouts

    public func insertCheckout(_ checkout: Checkout) throws(OrderStoreError) {
        try write("insert checkout") { connection throws(SQLiteError) in
            let now = millis(clock())
            do throws(SQLiteError) {
                try connection.run(
                    """
                    INSERT INTO checkouts (id, currency, state_json, application_data, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """, .text(checkout.id), .text(checkout.currencyCode), .text(try json(checkout)),
                    .text(checkout.applicationData), .integer(millis(checkout.createdAt)), .integer(now))
            } catch SQLiteError.Code.constraintUnique, SQLiteError.Code.constraintPrimaryKey {
                throw SQLiteError(.constraint, "checkout \(checkout.id) exists")
            } catch {
                throw error
            }
            try appendEvent(
                connection, "checkoutCreated", checkoutID: checkout.id, orderID: nil,
                ["items": String(checkout.items.count)], at: now)
        }
    }

    public func checkout(id: String) throws(OrderStoreError) -> Checkout? {
        try read("read checkout") { connection throws(SQLiteError) in
            guard let row = try connection.query("SELECT state_json FROM checkouts WHERE id = ?", .text(id)).first
            else { return nil }
            return try decode(Checkout.self, try row.string("state_json"))
        }
    }

    public func updateCheckout(_ checkout: Checkout) throws(OrderStoreError) {
        var missing = false
        try write("update checkout") { connection throws(SQLiteError) in
            let now = millis(clock())
            let changed = try connection.run(
                "UPDATE checkouts SET state_json = ?, updated_at = ? WHERE id = ?", .text(try json(checkout)),
                .integer(now), .text(checkout.id))
            guard changed == 1 else {
                missing = true
                return
            }
            var detail: [String: String] = [:]
            detail["countryCode"] = checkout.shippingAddress?.countryCode
            detail["shippingMethod"] = checkout.shippingMethodIdentifier
            detail["couponCode"] = checkout.couponCode
            detail["paymentMethodType"] = checkout.paymentMethodType
            try appendEvent(connection, "checkoutUpdated", checkoutID: checkout.id, orderID: nil, detail, at: now)
        }
        if missing { throw OrderStoreError(.notFound, "no checkout \(checkout.id)") }
    }

    // MARK: Payments

    public func beginPayment(_ order: NewOrder) throws(OrderStoreError) -> PaymentStart {
        try beginPayment(order, retryOnUniqueViolation: true)
    }

    /// The reads and writes run in one `BEGIN IMMEDIATE` transaction, so no other connection can write between
    /// the checks and the inserts. A UNIQUE violation can therefore only come from a writer that bypasses the
    /// lock (another program); the attempt is then re-run once and answers from what that writer stored.
    private func beginPayment(_ order: NewOrder, retryOnUniqueViolation: Bool) throws(OrderStoreError) -> PaymentStart {
        enum Answer {
            case start(PaymentStart)
            case noCheckout
        }
        let answer: Answer
        do {
            answer = try connection.transaction(.immediate) { connection -> Answer in
                if let existing = try loadOrder(connection, where: "p.transaction_id = ?", .text(order.transactionID)) {
                    return .start(.existing(existing))
                }
                guard try !connection.query("SELECT 1 FROM checkouts WHERE id = ?", .text(order.checkoutID)).isEmpty
                else { return .noCheckout }
                if let live = try loadOrder(
                    connection, where: "o.checkout_id = ? AND o.status IN ('pending', 'paid')", .text(order.checkoutID))
                {
                    return .start(.checkoutAlreadyPaid(live))
                }
                let now = millis(clock())
                let orderID = "ord_" + randomHex(bytes: 12)
                try connection.run(
                    """
                    INSERT INTO orders (id, checkout_id, status, currency, subtotal_minor, discount_minor,
                        shipping_minor, tax_minor, fee_minor, total_minor, items_json, shipping_method_json, coupon_code,
                        shipping_contact_json, billing_contact_json, payment_network, pan_last_four, created_at,
                        updated_at)
                    VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    values: [
                        .text(orderID), .text(order.checkoutID), .text(order.currencyCode),
                        .integer(order.totals.subtotal), .integer(order.totals.discount),
                        .integer(order.totals.shipping), .integer(order.totals.tax), .integer(order.totals.fee),
                        .integer(order.totals.total),
                        .text(try json(order.lines)), Value(try order.shippingMethod.map(json)),
                        Value(order.couponCode), Value(try order.shippingContact.map(json)),
                        Value(try order.billingContact.map(json)), Value(order.paymentNetwork),
                        Value(order.panLastFour), .integer(now), .integer(now),
                    ])
                try connection.run(
                    """
                    INSERT INTO payments (id, order_id, transaction_id, status, amount_minor, currency, created_at,
                        updated_at)
                    VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)
                    """, .text("pay_" + randomHex(bytes: 12)), .text(orderID), .text(order.transactionID),
                    .integer(order.totals.total), .text(order.currencyCode), .integer(now), .integer(now))
                try appendEvent(
                    connection, "paymentStarted", checkoutID: order.checkoutID, orderID: orderID,
                    ["amount": String(order.totals.total), "currencyCode": order.currencyCode], at: now)
                guard let created = try loadOrder(connection, where: "o.id = ?", .text(orderID)) else {
                    throw SQLiteError(.error, "the order just written cannot be read back")
                }
                return .start(.started(created))
            }
        } catch SQLiteError.Code.constraintUnique where retryOnUniqueViolation,
            SQLiteError.Code.constraintPrimaryKey where retryOnUniqueViolation
        {
            return try beginPayment(order, retryOnUniqueViolation: false)
        } catch {
            throw OrderStoreError(.storage, "begin payment: \(error)")
        }
        switch answer {
        case .start(let start): return start
        case .noCheckout: throw OrderStoreError(.notFound, "no checkout \(order.checkoutID)")
        }
    }

    public func completePayment(orderID: String, outcome: ChargeAttempt) throws(OrderStoreError) -> Order {
        enum Answer {
            case done(Order)
            case notFound
            case notPending(OrderStatus)
        }
        let orderStatus: OrderStatus
        let paymentStatus: PaymentStatus
        var reference: String?
        var failureCode: String?
        var failureMessage: String?
        let eventKind: String
        switch outcome {
        case .decided(.approved(let processorReference)):
            (orderStatus, paymentStatus, reference, eventKind) = (
                .paid, .approved, processorReference, "paymentApproved"
            )
        case .decided(.declined(let reason)):
            (orderStatus, paymentStatus, failureCode, eventKind) = (.failed, .declined, reason.code, "paymentDeclined")
        case .unknown(let error):
            (orderStatus, paymentStatus, failureCode, failureMessage, eventKind) = (
                .failed, .error, error.code.rawValue, error.message, "paymentFailed"
            )
        }
        let answer: Answer
        do {
            answer = try connection.transaction(.immediate) { connection -> Answer in
                guard let current = try loadOrder(connection, where: "o.id = ?", .text(orderID)) else {
                    return .notFound
                }
                guard current.status == .pending else { return .notPending(current.status) }
                let now = millis(clock())
                try connection.run(
                    "UPDATE orders SET status = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
                    .text(orderStatus.rawValue), .integer(now), .text(orderID))
                try connection.run(
                    """
                    UPDATE payments SET status = ?, processor_reference = ?, failure_code = ?, failure_message = ?,
                        updated_at = ?
                    WHERE order_id = ? AND status = 'pending'
                    """, .text(paymentStatus.rawValue), Value(reference), Value(failureCode), Value(failureMessage),
                    .integer(now), .text(orderID))
                var detail = ["status": orderStatus.rawValue]
                detail["failureCode"] = failureCode
                detail["processorReference"] = reference
                try appendEvent(
                    connection, eventKind, checkoutID: current.checkoutID, orderID: orderID, detail, at: now)
                guard let updated = try loadOrder(connection, where: "o.id = ?", .text(orderID)) else {
                    throw SQLiteError(.error, "the order just updated cannot be read back")
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

    public func order(id: String) throws(OrderStoreError) -> Order? {
        try read("read order") { connection throws(SQLiteError) in
            try loadOrder(connection, where: "o.id = ?", .text(id))
        }
    }

    public func order(transactionID: String) throws(OrderStoreError) -> Order? {
        try read("read order") { connection throws(SQLiteError) in
            try loadOrder(connection, where: "p.transaction_id = ?", .text(transactionID))
        }
    }

    public func events(checkoutID: String) throws(OrderStoreError) -> [StoreEvent] {
        try read("read events") { connection throws(SQLiteError) in
            try connection.query(
                """
                SELECT sequence, at, kind, checkout_id, order_id, detail_json FROM events
                WHERE checkout_id = ? ORDER BY sequence
                """, .text(checkoutID)
            ).map { row throws(SQLiteError) in
                StoreEvent(
                    sequence: try row.int64("sequence"), at: date(try row.int64("at")), kind: try row.string("kind"),
                    checkoutID: try row.optionalString("checkout_id"), orderID: try row.optionalString("order_id"),
                    detail: try row.string("detail_json"))
            }
        }
    }

    // MARK: Helpers

    private func write(_ what: String, _ body: (Connection) throws(SQLiteError) -> Void) throws(OrderStoreError) {
        do {
            try connection.transaction(.immediate) { connection in try body(connection) }
        } catch let error as SQLiteError where SQLiteError.Code.constraint ~= error {
            throw OrderStoreError(.conflict, "\(what): \(error.message)")
        } catch {
            throw OrderStoreError(.storage, "\(what): \(error)")
        }
    }

    private func read<T>(_ what: String, _ body: (Connection) throws(SQLiteError) -> T) throws(OrderStoreError) -> T {
        do {
            return try body(connection)
        } catch where error.code == .typeMismatch {
            throw OrderStoreError(.corrupt, "\(what): \(error)")
        } catch {
            throw OrderStoreError(.storage, "\(what): \(error)")
        }
    }

    private func appendEvent(
        _ connection: Connection, _ kind: String, checkoutID: String?, orderID: String?, _ detail: [String: String],
        at time: Int64
    ) throws(SQLiteError) {
        try connection.run(
            "INSERT INTO events (at, kind, checkout_id, order_id, detail_json) VALUES (?, ?, ?, ?, ?)", .integer(time),
            .text(kind), Value(checkoutID), Value(orderID), .text(try json(detail)))
    }

    private func loadOrder(_ connection: Connection, where condition: String, _ value: Value) throws(SQLiteError)
        -> Order?
    {
        let rows = try connection.query(
            """
            SELECT o.id, o.checkout_id, o.status, o.currency, o.subtotal_minor, o.discount_minor, o.shipping_minor,
                o.tax_minor, o.fee_minor, o.total_minor, o.items_json, o.shipping_method_json, o.coupon_code,
                o.shipping_contact_json, o.billing_contact_json, o.payment_network, o.pan_last_four, o.created_at,
                o.updated_at, p.id AS payment_id, p.transaction_id, p.status AS payment_status, p.amount_minor,
                p.currency AS payment_currency, p.processor_reference, p.failure_code, p.failure_message
            FROM orders o JOIN payments p ON p.order_id = o.id
            WHERE \(condition)
            ORDER BY o.created_at DESC LIMIT 1
            """, value)
        guard let row = rows.first else { return nil }
        guard let status = OrderStatus(rawValue: try row.string("status")),
            let paymentStatus = PaymentStatus(rawValue: try row.string("payment_status"))
        else { throw SQLiteError(.typeMismatch, "unknown order or payment status") }
        return Order(
            id: try row.string("id"), checkoutID: try row.string("checkout_id"), status: status,
            currencyCode: try row.string("currency"), lines: try decode([OrderLine].self, try row.string("items_json")),
            totals: OrderTotals(
                subtotal: try row.int64("subtotal_minor"), discount: try row.int64("discount_minor"),
                shipping: try row.int64("shipping_minor"), tax: try row.int64("tax_minor"),
                fee: try row.int64("fee_minor"),
                total: try row.int64("total_minor")),
            shippingMethod: try row.optionalString("shipping_method_json").map { text throws(SQLiteError) in
                try decode(OrderShippingMethod.self, text)
            },
            couponCode: try row.optionalString("coupon_code"),
            shippingContact: try row.optionalString("shipping_contact_json").map { text throws(SQLiteError) in
                try decode(OrderContact.self, text)
            },
            billingContact: try row.optionalString("billing_contact_json").map { text throws(SQLiteError) in
                try decode(OrderContact.self, text)
            },
            paymentNetwork: try row.optionalString("payment_network"),
            panLastFour: try row.optionalString("pan_last_four"),
            payment: PaymentRecord(
                id: try row.string("payment_id"), transactionID: try row.string("transaction_id"),
                status: paymentStatus,
                amount: try row.int64("amount_minor"), currencyCode: try row.string("payment_currency"),
                processorReference: try row.optionalString("processor_reference"),
                failureCode: try row.optionalString("failure_code"),
                failureMessage: try row.optionalString("failure_message")),
            createdAt: date(try row.int64("created_at")), updatedAt: date(try row.int64("updated_at")))
    }
}

private func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
private func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

private func json<T: Encodable>(_ value: T) throws(SQLiteError) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    do {
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    } catch {
        throw SQLiteError(.error, "cannot encode \(T.self) as JSON")
    }
}

private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws(SQLiteError) -> T {
    do {
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    } catch {
        throw SQLiteError(.typeMismatch, "corrupt JSON for \(T.self) in the store")
    }
}

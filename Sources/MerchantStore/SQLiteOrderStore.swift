import ApplePay
import Foundation
import Foundations
import JSONCoding
import MerchantCore
import SQLite
import Synchronization

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
/// Every write runs on the store's own thread (``ThreadExecutor``), never on Swift's shared pool. The reads on the
/// payment path (a checkout, an order by id or transaction) run on the caller's thread through read-only
/// connections (``ReaderPool``), which see every committed write and never wait for the writer; an in-memory store
/// reads on its own thread too.
public actor SQLiteOrderStore: OrderStore {
    /// The thread the connection lives on.
    nonisolated let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    let connection: Connection
    /// Writes waiting for the next group commit (see ``committed(_:)``).
    private var pendingWrites: [GroupedWrite] = []
    private var flushScheduled = false
    private var committedGroups = 0
    private var committedWrites = 0
    let clock: @Sendable () -> Date
    /// The database file (or `:memory:`).
    public nonisolated let path: String
    /// Readers beside the writer (a file store only: an in-memory database lives in its one connection).
    private nonisolated let readers: ReaderPool?

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
            if path != ":memory:" && !path.isEmpty {
                let readers = ReaderPool(path: path)
                try readers.openAll()
                self.readers = readers
            } else {
                self.readers = nil
            }
        } catch {
            throw OrderStoreError(.storage, "cannot open the order store at \(path): \(error)")
        }
        self.path = path
        self.clock = clock
        self.executor = ThreadExecutor(name: "SQLiteOrderStore")
    }

    deinit { executor.stop() }

    // MARK: Checkouts

    public func insertCheckout(_ checkout: Checkout) async throws(OrderStoreError) {
        try await write("insert checkout") { [self] connection throws(SQLiteError) in
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

    public nonisolated func checkout(id: String) async throws(OrderStoreError) -> Checkout? {
        try await reading("read checkout") { connection throws(SQLiteError) in
            guard let row = try connection.query("SELECT state_json FROM checkouts WHERE id = ?", .text(id)).first
            else { return nil }
            return try decode(Checkout.self, try row.string("state_json"))
        }
    }

    public func updateCheckout(_ checkout: Checkout) async throws(OrderStoreError) {
        nonisolated(unsafe) var missing = false
        try await write("update checkout") { [self] connection throws(SQLiteError) in
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

    public func beginPayment(_ order: NewOrder) async throws(OrderStoreError) -> PaymentStart {
        try await beginPayment(order, retryOnUniqueViolation: true)
    }

    /// The reads and writes run in one `BEGIN IMMEDIATE` transaction, so no other connection can write between
    /// the checks and the inserts. A UNIQUE violation can therefore only come from a writer that bypasses the
    /// lock (another program); the attempt is then re-run once and answers from what that writer stored.
    private func beginPayment(_ order: NewOrder, retryOnUniqueViolation: Bool) async throws(OrderStoreError)
        -> PaymentStart
    {
        // The rows are decoded into orders after the commit, on the caller's thread: the store's thread only
        // writes.
        enum Answer {
            case existing(Row)
            case checkoutLocked(Row)
            case started(Row)
            case noCheckout
        }
        let answer: Answer
        do {
            answer = try await committed { [self] connection throws(SQLiteError) -> Answer in
                if let existing = try loadOrderRow(
                    connection, where: "p.transaction_id = ?", .text(order.transactionID))
                {
                    return .existing(existing)
                }
                guard try !connection.query("SELECT 1 FROM checkouts WHERE id = ?", .text(order.checkoutID)).isEmpty
                else { return .noCheckout }
                if let live = try loadOrderRow(
                    connection, where: "o.checkout_id = ? AND o.status != 'declined'", .text(order.checkoutID))
                {
                    return .checkoutLocked(live)
                }
                let now = millis(clock())
                let orderID = "ord_" + randomHex(bytes: 12)
                try connection.run(
                    """
                    INSERT INTO orders (id, checkout_id, status, currency, subtotal_minor, discount_minor,
                        shipping_minor, tax_minor, fee_minor, total_minor, items_json, shipping_method_json, coupon_code,
                        shipping_contact_json, billing_contact_json, payment_network, pan_last_four, view_secret,
                        created_at, updated_at)
                    VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    values: [
                        .text(orderID), .text(order.checkoutID), .text(order.currencyCode),
                        .integer(order.totals.subtotal), .integer(order.totals.discount),
                        .integer(order.totals.shipping), .integer(order.totals.tax), .integer(order.totals.fee),
                        .integer(order.totals.total),
                        .text(try json(order.lines)), Value(try order.shippingMethod.map(json)),
                        Value(order.couponCode), Value(try order.shippingContact.map(json)),
                        Value(try order.billingContact.map(json)), Value(order.paymentNetwork),
                        Value(order.panLastFour), .text(randomHex(bytes: 16)), .integer(now), .integer(now),
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
                guard let created = try loadOrderRow(connection, where: "o.id = ?", .text(orderID)) else {
                    throw SQLiteError(.error, "the order just written cannot be read back")
                }
                return .started(created)
            }
        } catch SQLiteError.Code.constraintUnique where retryOnUniqueViolation,
            SQLiteError.Code.constraintPrimaryKey where retryOnUniqueViolation
        {
            return try await beginPayment(order, retryOnUniqueViolation: false)
        } catch {
            throw OrderStoreError(.storage, "begin payment: \(error)")
        }
        do {
            switch answer {
            case .existing(let row): return .existing(try orderRow(row))
            case .checkoutLocked(let row): return .checkoutLocked(try orderRow(row))
            case .started(let row): return .started(try orderRow(row))
            case .noCheckout: throw OrderStoreError(.notFound, "no checkout \(order.checkoutID)")
            }
        } catch let error as OrderStoreError {
            throw error
        } catch {
            throw OrderStoreError(.corrupt, "begin payment: \(error)")
        }
    }

    public func completePayment(orderID: String, outcome: ChargeAttempt) async throws(OrderStoreError) -> Order {
        enum Answer {
            case done(Row)
            case notFound
            case notPending(OrderStatus)
        }
        let transition = PaymentTransition(outcome)
        let answer: Answer
        do {
            // As in beginPayment: rows out of the transaction, decoded on the caller's thread.
            answer = try await committed { [self] connection throws(SQLiteError) -> Answer in
                guard
                    let current = try connection.query(
                        "SELECT id, checkout_id, status FROM orders WHERE id = ?", .text(orderID)
                    ).first.map(OrderKey.init)
                else {
                    return .notFound
                }
                guard current.status == .pending else { return .notPending(current.status) }
                try apply(transition, to: current, from: ["pending"], connection: connection)
                guard let updated = try loadOrderRow(connection, where: "o.id = ?", .text(orderID)) else {
                    throw SQLiteError(.error, "the order just updated cannot be read back")
                }
                return .done(updated)
            }
        } catch {
            throw OrderStoreError(.storage, "complete payment: \(error)")
        }
        switch answer {
        case .done(let row):
            do {
                return try orderRow(row)
            } catch {
                throw OrderStoreError(.corrupt, "complete payment: \(error)")
            }
        case .notFound: throw OrderStoreError(.notFound, "no order \(orderID)")
        case .notPending(let status): throw OrderStoreError(.conflict, "order \(orderID) is already \(status.rawValue)")
        }
    }

    public func unsettledOrders(updatedBefore cutoff: Date, limit: Int) throws(OrderStoreError) -> [Order] {
        try read("read unsettled orders") { connection throws(SQLiteError) in
            try loadOrders(
                connection, where: "o.status IN ('pending', 'unknown') AND o.updated_at < ?",
                .integer(millis(cutoff)), order: "o.updated_at ASC", limit: limit)
        }
    }

    public func settlePayment(orderID: String, charge: ProcessorCharge?) async throws(OrderStoreError) -> Order? {
        let transition = PaymentTransition(settling: charge)
        nonisolated(unsafe) var settled: Order?
        try await write("settle payment") { [self] connection throws(SQLiteError) in
            guard let current = try loadOrder(connection, where: "o.id = ?", .text(orderID)),
                current.status.isUnsettled
            else { return }
            try apply(transition, to: current, from: ["pending", "unknown"], connection: connection)
            settled = try loadOrder(connection, where: "o.id = ?", .text(orderID))
        }
        return settled
    }

    public func orders(status: OrderStatus?, limit: Int) throws(OrderStoreError) -> [Order] {
        try read("list orders") { connection throws(SQLiteError) in
            if let status {
                return try loadOrders(
                    connection, where: "o.status = ?", .text(status.rawValue), order: "o.created_at DESC", limit: limit)
            }
            return try loadOrders(connection, where: "1 = ?", .integer(1), order: "o.created_at DESC", limit: limit)
        }
    }

    public func beginRefund(orderID: String, amount: Int64, idempotencyKey: String) async throws(OrderStoreError)
        -> RefundStart
    {
        nonisolated(unsafe) var answer: RefundStart?
        try await write("begin refund") { [self] connection throws(SQLiteError) in
            guard let order = try loadOrder(connection, where: "o.id = ?", .text(orderID)) else { return }
            if let existing = try loadRefund(connection, key: idempotencyKey) {
                answer =
                    existing.orderID == orderID && existing.amount == amount
                    ? .existing(existing, order) : .keyReused
                return
            }
            guard order.status == .paid || order.status == .partiallyRefunded else {
                answer = .notRefundable(order)
                return
            }
            let reserved =
                try connection.query(
                    "SELECT coalesce(sum(amount_minor), 0) AS n FROM refunds WHERE order_id = ?", .text(orderID)
                ).first?.int64("n") ?? 0
            let left = order.totals.total - reserved
            guard amount > 0, amount <= left else {
                answer = .exceedsRemaining(left: left, order)
                return
            }
            let now = millis(clock())
            let refund = RefundRecord(
                id: "rfd_" + randomHex(bytes: 12), orderID: orderID, idempotencyKey: idempotencyKey, amount: amount,
                succeeded: false, processorReference: nil)
            try connection.run(
                """
                INSERT INTO refunds (id, order_id, idempotency_key, amount_minor, status, created_at, updated_at)
                VALUES (?, ?, ?, ?, 'pending', ?, ?)
                """, .text(refund.id), .text(orderID), .text(idempotencyKey), .integer(amount), .integer(now),
                .integer(now))
            try appendEvent(
                connection, "refundRequested", checkoutID: order.checkoutID, orderID: orderID,
                ["refundId": refund.id, "amount": String(amount)], at: now)
            answer = .started(refund, order)
        }
        guard let answer else { throw OrderStoreError(.notFound, "no order \(orderID)") }
        return answer
    }

    public func completeRefund(id: String, processorReference: String) async throws(OrderStoreError) -> Order {
        nonisolated(unsafe) var result: Order?
        try await write("complete refund") { [self] connection throws(SQLiteError) in
            guard let refund = try loadRefund(connection, id: id),
                let order = try loadOrder(connection, where: "o.id = ?", .text(refund.orderID))
            else { return }
            guard !refund.succeeded else {
                result = order
                return
            }
            let now = millis(clock())
            try connection.run(
                "UPDATE refunds SET status = 'succeeded', processor_reference = ?, updated_at = ? WHERE id = ?",
                .text(processorReference), .integer(now), .text(id))
            let refunded = order.refunded + refund.amount
            let status: OrderStatus = refunded >= order.totals.total ? .refunded : .partiallyRefunded
            try connection.run(
                "UPDATE orders SET refunded_minor = ?, status = ?, updated_at = ? WHERE id = ?", .integer(refunded),
                .text(status.rawValue), .integer(now), .text(order.id))
            try appendEvent(
                connection, "refundSucceeded", checkoutID: order.checkoutID, orderID: order.id,
                ["refundId": id, "amount": String(refund.amount), "status": status.rawValue], at: now)
            result = try loadOrder(connection, where: "o.id = ?", .text(order.id))
        }
        guard let result else { throw OrderStoreError(.notFound, "no refund \(id)") }
        return result
    }

    public func cancelRefund(id: String) async throws(OrderStoreError) {
        try await write("cancel refund") { [self] connection throws(SQLiteError) in
            guard let refund = try loadRefund(connection, id: id), !refund.succeeded else { return }
            try connection.run("DELETE FROM refunds WHERE id = ? AND status = 'pending'", .text(id))
            try appendEvent(
                connection, "refundCancelled", checkoutID: nil, orderID: refund.orderID,
                ["refundId": id, "amount": String(refund.amount)], at: millis(clock()))
        }
    }

    public func recordVoid(orderID: String) async throws(OrderStoreError) -> Order {
        nonisolated(unsafe) var result: Order?
        nonisolated(unsafe) var conflict: OrderStatus?
        try await write("record void") { [self] connection throws(SQLiteError) in
            guard let order = try loadOrder(connection, where: "o.id = ?", .text(orderID)) else { return }
            if order.status == .voided {
                result = order
                return
            }
            let refunds =
                try connection.query("SELECT count(*) AS n FROM refunds WHERE order_id = ?", .text(orderID)).first?
                .int64("n") ?? 0
            guard order.status == .paid, refunds == 0 else {
                conflict = order.status
                return
            }
            let now = millis(clock())
            try connection.run(
                "UPDATE orders SET status = 'voided', updated_at = ? WHERE id = ? AND status = 'paid'", .integer(now),
                .text(orderID))
            try connection.run(
                "UPDATE payments SET status = 'voided', updated_at = ? WHERE order_id = ?", .integer(now),
                .text(orderID))
            try appendEvent(
                connection, "paymentVoided", checkoutID: order.checkoutID, orderID: orderID, ["status": "voided"],
                at: now)
            result = try loadOrder(connection, where: "o.id = ?", .text(orderID))
        }
        if let conflict { throw OrderStoreError(.conflict, "order \(orderID) is \(conflict.rawValue) or has refunds") }
        guard let result else { throw OrderStoreError(.notFound, "no order \(orderID)") }
        return result
    }

    public nonisolated func order(id: String) async throws(OrderStoreError) -> Order? {
        try await reading("read order") { [self] connection throws(SQLiteError) in
            try loadOrder(connection, where: "o.id = ?", .text(id))
        }
    }

    public nonisolated func order(transactionID: String) async throws(OrderStoreError) -> Order? {
        try await reading("read order") { [self] connection throws(SQLiteError) in
            try loadOrder(connection, where: "p.transaction_id = ?", .text(transactionID))
        }
    }

    /// Deletes checkouts created before `cutoff` that have no order, with their events, in batches of `batch`
    /// (one transaction each, so writers are never held up for long). Returns how many checkouts were deleted.
    public func pruneExpiredCheckouts(createdBefore cutoff: Date, batch: Int = 500) async throws(OrderStoreError) -> Int
    {
        var total = 0
        while true {
            nonisolated(unsafe) var deleted = 0
            try await write("prune expired checkouts") { [self] connection throws(SQLiteError) in
                let ids = try connection.query(
                    """
                    SELECT id FROM checkouts c WHERE c.created_at < ?
                        AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.checkout_id = c.id)
                    LIMIT ?
                    """, .integer(millis(cutoff)), .integer(Int64(max(1, batch)))
                ).map { row throws(SQLiteError) in try row.string("id") }
                for id in ids {
                    deleted += try connection.run("DELETE FROM checkouts WHERE id = ?", .text(id))
                    _ = try connection.run("DELETE FROM events WHERE checkout_id = ?", .text(id))
                }
            }
            total += deleted
            if deleted < max(1, batch) { return total }
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

    func write(_ what: String, _ body: @escaping (Connection) throws(SQLiteError) -> Void)
        async throws(OrderStoreError)
    {
        do {
            try await committed(body)
        } catch  where SQLiteError.Code.constraint ~= error {
            throw OrderStoreError(.conflict, "\(what): \(error.message)")
        } catch {
            throw OrderStoreError(.storage, "\(what): \(error)")
        }
    }

    // MARK: Group commit

    /// Runs `body` in the next group commit and returns what it returned once that commit is on disk.
    ///
    /// Writes that arrive while the store's thread is busy are committed together: one `BEGIN IMMEDIATE`, each
    /// write in a savepoint of its own (a write that fails rolls back alone and fails alone), one `COMMIT`, one
    /// sync of the WAL (`synchronous = FULL`), and only then is every caller answered. Each acknowledged write is
    /// therefore durable, while a busy server pays one sync for many payments instead of one for each.
    func committed<T>(_ body: @escaping (Connection) throws(SQLiteError) -> T) async throws(SQLiteError) -> T {
        let result = GroupedResult<T>()
        let write = GroupedWrite { connection in
            do throws(SQLiteError) {
                result.value = try body(connection)
                return nil
            } catch {
                return error
            }
        }
        pendingWrites.append(write)
        if !flushScheduled {
            flushScheduled = true
            // Queued behind the calls already waiting for the store's thread, so their writes join this commit.
            Task { self.commitPendingWrites() }
        }
        // The continuation may be handed over after the commit already happened: `withCheckedContinuation` can
        // run its body off the store's thread (under a task executor preference), so `GroupedWrite` takes either
        // order.
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<SQLiteError?, Never>) in
            write.wait(continuation)
        }
        if let failure { throw failure }
        guard let value = result.value else { throw SQLiteError(.error, "a committed write returned nothing") }
        return value
    }

    /// Commits every queued write in one transaction and answers each.
    private func commitPendingWrites() {
        let batch = pendingWrites
        pendingWrites.removeAll()
        flushScheduled = false
        var failures = [SQLiteError?](repeating: nil, count: batch.count)
        do {
            try connection.transaction(.immediate) { connection throws(SQLiteError) in
                for (index, write) in batch.enumerated() {
                    do {
                        try connection.transaction(.immediate) { connection throws(SQLiteError) in
                            if let failure = write.run(connection) { throw failure }
                        }
                    } catch {
                        failures[index] = error as? SQLiteError ?? SQLiteError(.error, "\(error)")
                    }
                }
            }
        } catch {
            let failure = error as? SQLiteError ?? SQLiteError(.error, "\(error)")
            failures = Array(repeating: failure, count: batch.count)
        }
        committedGroups += 1
        committedWrites += batch.count
        for (index, write) in batch.enumerated() { write.finish(failures[index]) }
    }

    /// How many group commits and writes so far (the group size is their ratio).
    public var groupCommitCounts: (commits: Int, writes: Int) { (committedGroups, committedWrites) }

    func read<T>(_ what: String, _ body: (Connection) throws(SQLiteError) -> T) throws(OrderStoreError) -> T {
        do {
            return try body(connection)
        } catch {
            throw Self.readError(what, error)
        }
    }

    /// A read on the calling thread through ``readers``, or on the store's thread for an in-memory store.
    private nonisolated func reading<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (Connection) throws(SQLiteError) -> T
    ) async throws(OrderStoreError) -> T {
        guard let readers else { return try await read(what, body) }
        do {
            return try readers.read(body)
        } catch {
            throw Self.readError(what, error)
        }
    }

    private static func readError(_ what: String, _ error: SQLiteError) -> OrderStoreError {
        error.code == .typeMismatch
            ? OrderStoreError(.corrupt, "\(what): \(error)") : OrderStoreError(.storage, "\(what): \(error)")
    }

    func appendEvent(
        _ connection: Connection, _ kind: String, checkoutID: String?, orderID: String?, _ detail: [String: String],
        at time: Int64
    ) throws(SQLiteError) {
        try connection.run(
            "INSERT INTO events (at, kind, checkout_id, order_id, detail_json) VALUES (?, ?, ?, ?, ?)", .integer(time),
            .text(kind), Value(checkoutID), Value(orderID), .text(try json(detail)))
    }

    nonisolated func loadOrder(_ connection: Connection, where condition: String, _ value: Value)
        throws(SQLiteError)
        -> Order?
    {
        try loadOrders(connection, where: condition, value, order: "o.created_at DESC", limit: 1).first
    }

    /// The row ``orderRow(_:)`` decodes, for a caller that decodes it later (off the store's thread).
    private nonisolated func loadOrderRow(_ connection: Connection, where condition: String, _ value: Value)
        throws(SQLiteError) -> Row?
    {
        try orderRows(connection, where: condition, value, order: "o.created_at DESC", limit: 1).first
    }

    private nonisolated func loadOrders(
        _ connection: Connection, where condition: String, _ value: Value, order: String, limit: Int
    ) throws(SQLiteError) -> [Order] {
        try orderRows(connection, where: condition, value, order: order, limit: limit).map {
            row throws(SQLiteError) in try orderRow(row)
        }
    }

    private nonisolated func orderRows(
        _ connection: Connection, where condition: String, _ value: Value, order: String, limit: Int
    ) throws(SQLiteError) -> [Row] {
        try connection.query(
            """
            SELECT o.id, o.checkout_id, o.status, o.currency, o.subtotal_minor, o.discount_minor, o.shipping_minor,
                o.tax_minor, o.fee_minor, o.total_minor, o.items_json, o.shipping_method_json, o.coupon_code,
                o.shipping_contact_json, o.billing_contact_json, o.payment_network, o.pan_last_four, o.created_at,
                o.updated_at, o.refunded_minor, o.view_secret, p.id AS payment_id, p.transaction_id, p.status AS payment_status, p.amount_minor,
                p.currency AS payment_currency, p.processor_reference, p.failure_code, p.failure_message
            FROM orders o JOIN payments p ON p.order_id = o.id
            WHERE \(condition)
            ORDER BY \(order) LIMIT \(max(1, limit))
            """, value)
    }

    private nonisolated func orderRow(_ row: Row) throws(SQLiteError) -> Order {
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
                try decode(Contact.self, text)
            },
            billingContact: try row.optionalString("billing_contact_json").map { text throws(SQLiteError) in
                try decode(Contact.self, text)
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
            refunded: try row.int64("refunded_minor"), viewSecret: try row.string("view_secret"),
            createdAt: date(try row.int64("created_at")), updatedAt: date(try row.int64("updated_at")))
    }

    private func loadRefund(_ connection: Connection, key: String) throws(SQLiteError) -> RefundRecord? {
        try loadRefunds(connection, where: "idempotency_key = ?", .text(key)).first
    }

    private func loadRefund(_ connection: Connection, id: String) throws(SQLiteError) -> RefundRecord? {
        try loadRefunds(connection, where: "id = ?", .text(id)).first
    }

    private func loadRefunds(_ connection: Connection, where condition: String, _ value: Value) throws(SQLiteError)
        -> [RefundRecord]
    {
        try connection.query(
            """
            SELECT id, order_id, idempotency_key, amount_minor, status, processor_reference FROM refunds
            WHERE \(condition)
            """, value
        ).map { row throws(SQLiteError) in
            RefundRecord(
                id: try row.string("id"), orderID: try row.string("order_id"),
                idempotencyKey: try row.string("idempotency_key"), amount: try row.int64("amount_minor"),
                succeeded: try row.string("status") == "succeeded",
                processorReference: try row.optionalString("processor_reference"))
        }
    }

    /// Moves a payment and its order to the transition's states, if the order is still in one of `states`.
    private func apply(
        _ transition: PaymentTransition, to current: Order, from states: [String], connection: Connection
    ) throws(SQLiteError) {
        try apply(transition, to: OrderKey(current), from: states, connection: connection)
    }

    private func apply(
        _ transition: PaymentTransition, to current: OrderKey, from states: [String], connection: Connection
    ) throws(SQLiteError) {
        let now = millis(clock())
        let allowed = states.map { "'\($0)'" }.joined(separator: ", ")
        try connection.run(
            "UPDATE orders SET status = ?, updated_at = ? WHERE id = ? AND status IN (\(allowed))",
            .text(transition.orderStatus.rawValue), .integer(now), .text(current.id))
        try connection.run(
            """
            UPDATE payments SET status = ?, processor_reference = coalesce(?, processor_reference), failure_code = ?,
                failure_message = ?, updated_at = ?
            WHERE order_id = ?
            """, .text(transition.paymentStatus.rawValue), Value(transition.reference), Value(transition.failureCode),
            Value(transition.failureMessage), .integer(now), .text(current.id))
        var detail = ["status": transition.orderStatus.rawValue, "from": current.status.rawValue]
        detail["failureCode"] = transition.failureCode
        detail["processorReference"] = transition.reference
        try appendEvent(
            connection, transition.eventKind, checkoutID: current.checkoutID, orderID: current.id, detail, at: now)
    }
}

private func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
private func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

private func json<T: Encodable>(_ value: T) throws(SQLiteError) -> String {
    do {
        return String(decoding: try SortedJSONEncoder().encode(value), as: UTF8.self)
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

/// What a payment transition needs of the order it changes: read alone (no JSON decoded) inside a write.
private struct OrderKey {
    var id: String
    var checkoutID: String
    var status: OrderStatus

    init(_ order: Order) {
        id = order.id
        checkoutID = order.checkoutID
        status = order.status
    }

    init(_ row: Row) throws(SQLiteError) {
        guard let status = OrderStatus(rawValue: try row.string("status")) else {
            throw SQLiteError(.typeMismatch, "unknown order status")
        }
        id = try row.string("id")
        checkoutID = try row.string("checkout_id")
        self.status = status
    }
}

import ApplePay
import Foundation
import Foundations
import MerchantCore
import SQLCore

/// Checkouts, orders, payments, refunds and the event log (the ``OrderStore`` contract), once for every dialect.
///
/// `beginPayment` looks the transaction id up, takes the checkout's row lock (`FOR UPDATE`; on SQLite the writer's
/// transaction), looks again under the lock, checks for a live order and inserts. `completePayment`,
/// `settlePayment`, refunds and voids lock the order row first and move it only from the states they expect. On the
/// payment path the rows are decoded into orders after the commit, on the caller's thread, so the SQLite writer's
/// thread only writes; a new order is answered from the values it inserted, without reading it back.
extension SQLStore: OrderStore {
    // MARK: Checkouts

    /// A new checkout is ``SQLCore/WriteDurability/written``, not synced: a power cut may lose the last few (never
    /// a crash of the server), and a payment for a lost one finds no checkout and is refused, nothing charged; any
    /// later synced write (its first sheet update, a payment) makes it durable.
    public func insertCheckout(_ checkout: Checkout) async throws(OrderStoreError) {
        let state = try Self.state(of: checkout, "insert checkout")
        let inserted = try await write("insert checkout", .written) { connection throws(SQLError) -> Bool in
            let now = self.clock().unixMilliseconds
            let changed = try connection.run(
                """
                INSERT INTO checkouts (id, currency, state_json, application_data, created_at, updated_at)
                VALUES (\(bind: checkout.id), \(bind: checkout.currencyCode), \(bind: state), \
                \(bind: checkout.applicationData), \(bind: checkout.createdAt.unixMilliseconds), \(bind: now))
                \(raw: connection.dialect.onConflictDoNothing("id"))
                """)
            guard changed == 1 else { return false }
            try self.appendEvent(
                connection, "checkoutCreated", checkoutID: checkout.id, orderID: nil,
                ["items": String(checkout.items.count)], at: now)
            return true
        }
        if !inserted { throw OrderStoreError(.conflict, "checkout \(checkout.id) exists") }
    }

    /// A checkout's `state_json` (``StoredJSON``'s writer; the encoder for what it leaves).
    private static func state(of checkout: Checkout, _ what: String) throws(OrderStoreError) -> String {
        if let text = StoredJSON.text(checkout) { return text }
        return try encoded(checkout, what)
    }

    public func checkout(id: String) async throws(OrderStoreError) -> Checkout? {
        try await read("read checkout") { connection throws(SQLError) -> Checkout? in
            guard let row = try connection.query("SELECT state_json FROM checkouts WHERE id = \(bind: id)").first
            else { return nil }
            let state = try row.string("state_json")
            return try decodeStored(Checkout.self, state, fast: StoredJSON.checkout)
        }
    }

    public func updateCheckout(_ checkout: Checkout) async throws(OrderStoreError) {
        let state = try Self.state(of: checkout, "update checkout")
        let found = try await write("update checkout") { connection throws(SQLError) -> Bool in
            let now = self.clock().unixMilliseconds
            // The UPDATE takes the checkout's row lock: a payment on this checkout waits for it, and it for a payment.
            let changed = try connection.run(
                """
                UPDATE checkouts SET state_json = \(bind: state), updated_at = \(bind: now) \
                WHERE id = \(bind: checkout.id)
                """)
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

    /// Deletes checkouts created before `cutoff` that never got an order nor started a subscription (a deferred plan
    /// starts one without an order), with their events, `batch` at a time (one
    /// transaction each, rows other instances hold passed over). The event log's trigger lets a DELETE through only
    /// for events of a checkout that is gone and never had an order. Returns how many checkouts were deleted.
    public func pruneExpiredCheckouts(createdBefore cutoff: Date, batch: Int) async throws(OrderStoreError) -> Int {
        var total = 0
        let size = max(1, batch)
        while true {
            let deleted = try await write("prune expired checkouts") { connection throws(SQLError) -> Int in
                var ids: [String] = []
                for row in try connection.query(
                    """
                    SELECT id FROM checkouts c WHERE c.created_at < \(bind: cutoff.unixMilliseconds)
                        AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.checkout_id = c.id)
                        AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.checkout_id = c.id)
                    ORDER BY c.created_at LIMIT \(bind: size)\(raw: connection.dialect.forUpdateSkipLocked)
                    """)
                {
                    ids.append(try row.string("id"))
                }
                for id in ids {
                    try connection.run("DELETE FROM checkouts WHERE id = \(bind: id)")
                    try connection.run("DELETE FROM events WHERE checkout_id = \(bind: id) AND order_id IS NULL")
                }
                return ids.count
            }
            total += deleted
            if deleted < size { return total }
        }
    }

    // MARK: Payments

    /// What `beginPayment`'s transaction found; the rows are decoded after the commit.
    private enum BeginAnswer: Sendable {
        case existing(Row)
        case checkoutLocked(Row)
        /// The order as inserted: made from what was written, not read back.
        case started(Order)
        case noCheckout
    }

    /// The JSON columns of a new order, encoded before the transaction.
    private struct EncodedOrder: Sendable {
        var lines: String
        var shippingMethod: String?
        var shippingContact: String?
        var billingContact: String?
    }

    /// Locks the checkout's row, then looks for the transaction id and for a live order: two instances paying one
    /// checkout (with the same token or two) run this one after the other. A UNIQUE violation can then only come
    /// from a writer that bypassed the lock (another program, the same token on two checkouts); the attempt runs
    /// once more and answers from what that writer stored.
    public func beginPayment(_ order: NewOrder) async throws(OrderStoreError) -> PaymentStart {
        let encoded = EncodedOrder(
            lines: StoredJSON.text(order.lines), shippingMethod: order.shippingMethod.map(StoredJSON.text),
            shippingContact: order.shippingContact.map(StoredJSON.text),
            billingContact: order.billingContact.map(StoredJSON.text))
        var attempt = 0
        while true {
            attempt += 1
            let answer: BeginAnswer
            do {
                answer = try await database.write { connection throws(SQLError) -> BeginAnswer in
                    try self.begin(order, encoded, connection)
                }
            } catch  where error.code == .uniqueViolation && attempt < 2 {
                continue
            } catch {
                throw OrderStoreError(.storage, "begin payment: \(error)")
            }
            do throws(SQLError) {
                switch answer {
                case .existing(let row): return .existing(try Self.order(from: row))
                case .checkoutLocked(let row): return .checkoutLocked(try Self.order(from: row))
                case .started(let order): return .started(order)
                case .noCheckout: break
                }
            } catch {
                throw OrderStoreError(.corrupt, "begin payment: \(error)")
            }
            throw OrderStoreError(.notFound, "no checkout \(order.checkoutID)")
        }
    }

    private func begin(_ order: NewOrder, _ encoded: EncodedOrder, _ connection: Connection) throws(SQLError)
        -> BeginAnswer
    {
        let dialect = connection.dialect
        if let existing = try orderRow(connection, where: "p.transaction_id = \(bind: order.transactionID)") {
            return .existing(existing)
        }
        guard
            !(try connection.query(
                "SELECT id FROM checkouts WHERE id = \(bind: order.checkoutID)\(raw: dialect.forUpdate)"
            ).isEmpty)
        else { return .noCheckout }
        // Read again under the lock: another instance may have committed this token while we waited.
        if dialect.locksRows,
            let existing = try orderRow(connection, where: "p.transaction_id = \(bind: order.transactionID)")
        {
            return .existing(existing)
        }
        if let live = try orderRow(
            connection, where: "o.checkout_id = \(bind: order.checkoutID) AND o.status <> 'declined'")
        {
            return .checkoutLocked(live)
        }
        let now = clock().unixMilliseconds
        let orderID = "ord_" + timeOrderedHex(milliseconds: now)
        let paymentID = "pay_" + timeOrderedHex(milliseconds: now)
        let viewSecret = randomHex(bytes: 16)
        let totals = order.totals
        try connection.run(
            """
            INSERT INTO orders (id, checkout_id, status, currency, subtotal_minor, discount_minor,
                shipping_minor, tax_minor, fee_minor, total_minor, items_json, shipping_method_json, coupon_code,
                shipping_contact_json, billing_contact_json, payment_network, pan_last_four, view_secret,
                created_at, updated_at)
            VALUES (\(bind: orderID), \(bind: order.checkoutID), 'pending', \(bind: order.currencyCode), \
            \(bind: totals.subtotal), \(bind: totals.discount), \(bind: totals.shipping), \(bind: totals.tax), \
            \(bind: totals.fee), \(bind: totals.total), \(bind: encoded.lines), \(bind: encoded.shippingMethod), \
            \(bind: order.couponCode), \(bind: encoded.shippingContact), \(bind: encoded.billingContact), \
            \(bind: order.paymentNetwork), \(bind: order.panLastFour), \(bind: viewSecret), \(bind: now), \
            \(bind: now))
            """)
        try connection.run(
            """
            INSERT INTO payments (id, order_id, transaction_id, status, amount_minor, currency, created_at,
                updated_at)
            VALUES (\(bind: paymentID), \(bind: orderID), \(bind: order.transactionID), \
            'pending', \(bind: totals.total), \(bind: order.currencyCode), \(bind: now), \(bind: now))
            """)
        try appendEvent(
            connection, "paymentStarted", checkoutID: order.checkoutID, orderID: orderID,
            ["amount": String(totals.total), "currencyCode": order.currencyCode], at: now)
        // What was just written, as `order(from:)` would read it back (the stored JSON reads back as the values
        // written: StoredJSONTests): reading it would cost a query and the JSON columns' decoding.
        let created = Date(unixMilliseconds: now)
        return .started(
            Order(
                id: orderID, checkoutID: order.checkoutID, status: .pending, currencyCode: order.currencyCode,
                lines: order.lines, totals: totals, shippingMethod: order.shippingMethod, couponCode: order.couponCode,
                shippingContact: order.shippingContact, billingContact: order.billingContact,
                paymentNetwork: order.paymentNetwork, panLastFour: order.panLastFour,
                payment: PaymentRecord(
                    id: paymentID, transactionID: order.transactionID, status: .pending, amount: totals.total,
                    currencyCode: order.currencyCode),
                refunded: 0, viewSecret: viewSecret, createdAt: created, updatedAt: created))
    }

    /// Merges the charge call's end into the order (``PaymentStateMachine``): a webhook that settled the order
    /// while the call was in flight is not undone by the call's answer, and an answer that disagrees with it is
    /// recorded as a discrepancy.
    public func completePayment(orderID: String, outcome: ChargeAttempt) async throws(OrderStoreError) -> Order {
        guard
            let (order, _) = try await observe(
                PaymentObservation(attempt: outcome), orderID: orderID, what: "complete payment")
        else { throw OrderStoreError(.notFound, "no order \(orderID)") }
        return order
    }

    public func unsettledOrders(updatedBefore cutoff: Date, limit: Int) async throws(OrderStoreError) -> [Order] {
        try await read("read unsettled orders") { connection throws(SQLError) -> [Order] in
            try self.loadOrders(
                connection,
                where: """
                    o.status IN ('pending', 'unknown', 'processing') AND o.updated_at < \(bind: cutoff.unixMilliseconds)
                    """,
                order: "o.updated_at ASC, o.id ASC", limit: limit)
        }
    }

    /// Merges what a look-up found into the order (``PaymentStateMachine``); two reconcilers, in this instance or
    /// another, take the order's lock in turn and the second finds nothing to do.
    public func settlePayment(orderID: String, charge: ProcessorCharge?) async throws(OrderStoreError) -> Order? {
        guard
            let (order, moved) = try await observe(
                PaymentObservation(.lookUp, charge: charge), orderID: orderID, what: "settle payment"),
            moved
        else { return nil }
        return order
    }

    // MARK: Refunds and voids

    public func beginRefund(orderID: String, amount: Int64, idempotencyKey: String) async throws(OrderStoreError)
        -> RefundStart
    {
        let answer = try await write("begin refund") { connection throws(SQLError) -> RefundStart? in
            // The order's lock orders refunds of one order; the key's UNIQUE constraint settles a key used twice.
            guard let order = try self.lockOrder(connection, orderID) else { return nil }
            if let existing = try self.loadRefunds(connection, where: "idempotency_key = \(bind: idempotencyKey)")
                .first
            {
                return existing.orderID == orderID && existing.amount == amount
                    ? .existing(existing, order) : .keyReused
            }
            guard order.status == .paid || order.status == .partiallyRefunded else { return .notRefundable(order) }
            let left = order.totals.total - (try self.reservedRefunds(orderID, connection))
            guard amount > 0, amount <= left else { return .exceedsRemaining(left: left, order) }
            let now = self.clock().unixMilliseconds
            let refund = RefundRecord(
                id: "rfd_" + timeOrderedHex(milliseconds: now), orderID: orderID, idempotencyKey: idempotencyKey,
                amount: amount,
                status: .pending)
            try connection.run(
                """
                INSERT INTO refunds (id, order_id, idempotency_key, amount_minor, status, created_at, updated_at)
                VALUES (\(bind: refund.id), \(bind: orderID), \(bind: idempotencyKey), \(bind: amount), 'pending', \
                \(bind: now), \(bind: now))
                """)
            try self.appendEvent(
                connection, "refundRequested", checkoutID: order.checkoutID, orderID: orderID,
                ["refundId": refund.id, "amount": String(amount)], at: now)
            return .started(refund, order)
        }
        guard let answer else { throw OrderStoreError(.notFound, "no order \(orderID)") }
        return answer
    }

    public func completeRefund(id: String, processorReference: String) async throws(OrderStoreError) -> Order {
        try await changeRefund(id, what: "complete refund") { refund, order, now, connection throws(SQLError) in
            guard refund.status == .pending else { return }
            let status = try self.markRefundSucceeded(
                refund, reference: processorReference, order: order, now: now, connection)
            try self.appendEvent(
                connection, "refundSucceeded", checkoutID: order.checkoutID, orderID: order.id,
                ["refundId": id, "amount": String(refund.amount), "status": status.rawValue], at: now)
        }
    }

    public func acknowledgeRefund(id: String, processorReference: String) async throws(OrderStoreError) -> Order {
        try await changeRefund(id, what: "acknowledge refund") { refund, order, now, connection throws(SQLError) in
            guard refund.status == .pending, refund.processorReference == nil else { return }
            try connection.run(
                """
                UPDATE refunds SET processor_reference = \(bind: processorReference), updated_at = \(bind: now)
                WHERE id = \(bind: id) AND status = 'pending'
                """, expectingRows: 1)
            try self.appendEvent(
                connection, "refundAccepted", checkoutID: order.checkoutID, orderID: order.id,
                ["refundId": id, "amount": String(refund.amount), "processorReference": processorReference], at: now)
        }
    }

    public func failRefund(id: String, reason: String) async throws(OrderStoreError) -> Order {
        try await changeRefund(id, what: "fail refund") { refund, order, now, connection throws(SQLError) in
            guard refund.status != .failed else { return }
            let status = try self.markRefundFailed(
                refund, reason: reason, reference: nil, order: order, now: now, connection)
            try self.appendEvent(
                connection, "refundFailed", checkoutID: order.checkoutID, orderID: order.id,
                ["refundId": id, "amount": String(refund.amount), "status": status.rawValue, "source": "lookUp"],
                at: now)
        }
    }

    public func undecidedRefunds(updatedBefore cutoff: Date, limit: Int) async throws(OrderStoreError)
        -> [RefundRecord]
    {
        try await read("read undecided refunds") { connection throws(SQLError) -> [RefundRecord] in
            try self.loadRefunds(
                connection,
                where: """
                    status = 'pending' AND processor_reference IS NOT NULL \
                    AND updated_at < \(bind: cutoff.unixMilliseconds)
                    """, oldestFirst: limit)
        }
    }

    /// Runs `change` on the refund `id` and its locked order in one transaction, and answers the order after it.
    private func changeRefund(
        _ id: String, what: String,
        _ change: @escaping @Sendable (RefundRecord, Order, Int64, Connection) throws(SQLError) -> Void
    ) async throws(OrderStoreError) -> Order {
        let result = try await write(what) { connection throws(SQLError) -> Order? in
            guard
                let orderID = try connection.query("SELECT order_id FROM refunds WHERE id = \(bind: id)").first?
                    .string("order_id"),
                let order = try self.lockOrder(connection, orderID),
                let refund = try self.loadRefunds(connection, where: "id = \(bind: id)").first
            else { return nil }
            try change(refund, order, self.clock().unixMilliseconds, connection)
            return try self.loadOrder(connection, where: "o.id = \(bind: order.id)")
        }
        guard let result else { throw OrderStoreError(.notFound, "no refund \(id)") }
        return result
    }

    /// Minor units of the order's refunds that are pending or succeeded: what is no longer left to refund.
    func reservedRefunds(_ orderID: String, _ connection: Connection) throws(SQLError) -> Int64 {
        try connection.query(
            """
            SELECT coalesce(sum(amount_minor), 0) AS n FROM refunds
            WHERE order_id = \(bind: orderID) AND status <> 'failed'
            """
        ).first?.int64("n") ?? 0
    }

    /// Marks a pending or failed refund succeeded and counts it on the (locked) order; answers the order's status.
    func markRefundSucceeded(
        _ refund: RefundRecord, reference: String?, order: Order, now: Int64, _ connection: Connection
    ) throws(SQLError) -> OrderStatus {
        try connection.run(
            """
            UPDATE refunds SET status = 'succeeded', failure_code = NULL, \
            processor_reference = coalesce(\(bind: reference), processor_reference), updated_at = \(bind: now) \
            WHERE id = \(bind: refund.id) AND status <> 'succeeded'
            """, expectingRows: 1)
        return try countRefunded(order, by: refund.amount, now: now, connection)
    }

    /// Marks a refund failed; a succeeded one's amount is no longer counted as refunded. Answers the order's status.
    func markRefundFailed(
        _ refund: RefundRecord, reason: String?, reference: String?, order: Order, now: Int64,
        _ connection: Connection
    ) throws(SQLError) -> OrderStatus {
        try connection.run(
            """
            UPDATE refunds SET status = 'failed', failure_code = \(bind: reason ?? "refundFailed"), \
            processor_reference = coalesce(processor_reference, \(bind: reference)), updated_at = \(bind: now) \
            WHERE id = \(bind: refund.id) AND status <> 'failed'
            """, expectingRows: 1)
        guard refund.status == .succeeded else { return order.status }
        return try countRefunded(order, by: -refund.amount, now: now, connection)
    }

    /// Adds `amount` (negative: gives back) to the order's refunded total and moves its status with it.
    private func countRefunded(_ order: Order, by amount: Int64, now: Int64, _ connection: Connection)
        throws(SQLError) -> OrderStatus
    {
        let refunded = max(0, order.refunded + amount)
        let status: OrderStatus =
            refunded == 0 ? .paid : refunded >= order.totals.total ? .refunded : .partiallyRefunded
        try connection.run(
            """
            UPDATE orders SET refunded_minor = \(bind: refunded), status = \(bind: status.rawValue), \
            updated_at = \(Self.nextOrderVersion(now)) WHERE id = \(bind: order.id)
            """, expectingRows: 1)
        return status
    }

    public func cancelRefund(id: String) async throws(OrderStoreError) {
        try await write("cancel refund") { connection throws(SQLError) in
            guard let refund = try self.loadRefunds(connection, where: "id = \(bind: id)").first, !refund.succeeded
            else { return }
            guard try connection.run("DELETE FROM refunds WHERE id = \(bind: id) AND status = 'pending'") == 1
            else { return }
            try self.appendEvent(
                connection, "refundCancelled", checkoutID: nil, orderID: refund.orderID,
                ["refundId": id, "amount": String(refund.amount)], at: self.clock().unixMilliseconds)
        }
    }

    public func refunds(orderID: String) async throws(OrderStoreError) -> [RefundRecord] {
        try await read("read refunds") { connection throws(SQLError) -> [RefundRecord] in
            try self.loadRefunds(connection, where: "order_id = \(bind: orderID)")
        }
    }

    public func recordVoid(orderID: String) async throws(OrderStoreError) -> Order {
        try await write("record void") { connection throws(SQLError) -> Result<Order, OrderStoreError> in
            guard let order = try self.lockOrder(connection, orderID) else {
                return .failure(OrderStoreError(.notFound, "no order \(orderID)"))
            }
            if order.status == .voided { return .success(order) }
            guard order.status == .paid, order.refunded == 0 else {
                return .failure(
                    OrderStoreError(.conflict, "order \(orderID) is \(order.status.rawValue) or has refunds"))
            }
            let now = self.clock().unixMilliseconds
            // The processor voided it, so no refund of it reached the processor: one still pending here (begun by
            // another instance meanwhile) can never succeed.
            for refund in try self.loadRefunds(
                connection, where: "order_id = \(bind: orderID) AND status = 'pending'")
            {
                _ = try self.markRefundFailed(
                    refund, reason: "paymentVoided", reference: nil, order: order, now: now, connection)
            }
            try connection.run(
                """
                UPDATE orders SET status = 'voided', updated_at = \(Self.nextOrderVersion(now)) \
                WHERE id = \(bind: orderID) AND status = 'paid'
                """, expectingRows: 1)
            try connection.run(
                "UPDATE payments SET status = 'voided', updated_at = \(bind: now) WHERE order_id = \(bind: orderID)")
            try self.appendEvent(
                connection, "paymentVoided", checkoutID: order.checkoutID, orderID: orderID, ["status": "voided"],
                at: now)
            guard let updated = try self.loadOrder(connection, where: "o.id = \(bind: orderID)") else {
                throw SQLError(.other, "the order just voided cannot be read back")
            }
            return .success(updated)
        }.get()
    }

    // MARK: Reads

    public func order(id: String) async throws(OrderStoreError) -> Order? {
        try await read("read order") { connection throws(SQLError) -> Order? in
            try self.loadOrder(connection, where: "o.id = \(bind: id)")
        }
    }

    public func order(transactionID: String) async throws(OrderStoreError) -> Order? {
        try await read("read order") { connection throws(SQLError) -> Order? in
            try self.loadOrder(connection, where: "p.transaction_id = \(bind: transactionID)")
        }
    }

    public func orders(status: OrderStatus?, limit: Int) async throws(OrderStoreError) -> [Order] {
        try await read("list orders") { connection throws(SQLError) -> [Order] in
            try self.loadOrders(
                connection, where: status.map { "o.status = \(bind: $0.rawValue)" } ?? "1 = 1",
                order: "o.created_at DESC, o.id DESC", limit: limit)
        }
    }

    public func orders(createdFrom from: Date, to: Date, limit: Int) async throws(OrderStoreError) -> [Order] {
        try await read("list orders of a period") { connection throws(SQLError) -> [Order] in
            try self.loadOrders(
                connection,
                where: """
                    o.created_at >= \(bind: from.unixMilliseconds) AND o.created_at < \(bind: to.unixMilliseconds)
                    """,
                order: "o.created_at ASC, o.id ASC", limit: limit)
        }
    }

    public func events(checkoutID: String) async throws(OrderStoreError) -> [StoreEvent] {
        try await read("read events") { connection throws(SQLError) -> [StoreEvent] in
            var events: [StoreEvent] = []
            for row in try connection.query(
                """
                SELECT sequence, at, kind, checkout_id, order_id, detail_json FROM events
                WHERE checkout_id = \(bind: checkoutID) ORDER BY sequence
                """)
            {
                events.append(
                    StoreEvent(
                        sequence: try row.int64("sequence"), at: Date(unixMilliseconds: try row.int64("at")),
                        kind: try row.string("kind"), checkoutID: try row.optionalString("checkout_id"),
                        orderID: try row.optionalString("order_id"), detail: try row.string("detail_json")))
            }
            return events
        }
    }

    // MARK: Rows

    /// What a payment transition needs of the order it changes, read alone (no JSON decoded) with the order's row
    /// lock.
    struct OrderKey {
        var id: String
        var checkoutID: String
        var status: OrderStatus
        /// Minor units refunded so far.
        var refunded: Int64
    }

    /// The order's id, checkout and status, its row locked until the transaction ends.
    func lockOrderKey(_ connection: Connection, _ id: String) throws(SQLError) -> OrderKey? {
        guard
            let row = try connection.query(
                """
                SELECT id, checkout_id, status, refunded_minor FROM orders WHERE id = \(bind: id)\
                \(raw: connection.dialect.forUpdate)
                """
            ).first
        else { return nil }
        guard let status = OrderStatus(rawValue: try row.string("status")) else {
            throw SQLError(.typeMismatch, "unknown order status")
        }
        return OrderKey(
            id: try row.string("id"), checkoutID: try row.string("checkout_id"), status: status,
            refunded: try row.int64("refunded_minor"))
    }

    /// The order, its row locked until the transaction ends.
    func lockOrder(_ connection: Connection, _ id: String) throws(SQLError) -> Order? {
        if connection.dialect.locksRows {
            guard try lockOrderKey(connection, id) != nil else { return nil }
        }
        return try loadOrder(connection, where: "o.id = \(bind: id)")
    }

    func loadOrder(_ connection: Connection, where condition: SQLQuery) throws(SQLError) -> Order? {
        try orderRow(connection, where: condition).map { row throws(SQLError) in try Self.order(from: row) }
    }

    /// The row ``order(from:)`` decodes, for a caller that decodes it later (after the commit).
    private func orderRow(_ connection: Connection, where condition: SQLQuery) throws(SQLError) -> Row? {
        try orderRows(connection, where: condition, order: "o.created_at DESC, o.id DESC", limit: 1).first
    }

    private func loadOrders(_ connection: Connection, where condition: SQLQuery, order: String, limit: Int)
        throws(SQLError) -> [Order]
    {
        var orders: [Order] = []
        for row in try orderRows(connection, where: condition, order: order, limit: limit) {
            orders.append(try Self.order(from: row))
        }
        return orders
    }

    private func orderRows(_ connection: Connection, where condition: SQLQuery, order: String, limit: Int)
        throws(SQLError) -> [Row]
    {
        try connection.query(
            """
            SELECT o.id, o.checkout_id, o.status, o.currency, o.subtotal_minor, o.discount_minor, o.shipping_minor,
                o.tax_minor, o.fee_minor, o.total_minor, o.items_json, o.shipping_method_json, o.coupon_code,
                o.shipping_contact_json, o.billing_contact_json, o.payment_network, o.pan_last_four, o.created_at,
                o.updated_at, o.refunded_minor, o.view_secret, p.id AS payment_id, p.transaction_id,
                p.status AS payment_status, p.amount_minor, p.currency AS payment_currency, p.processor_reference,
                p.failure_code, p.failure_message
            FROM orders o JOIN payments p ON p.order_id = o.id
            WHERE \(condition)
            ORDER BY \(raw: order) LIMIT \(bind: max(1, limit))
            """)
    }

    private static func orderLines(_ text: String) throws(SQLError) -> [OrderLine] {
        try decodeStored([OrderLine].self, text, fast: StoredJSON.orderLines)
    }

    private static func order(from row: Row) throws(SQLError) -> Order {
        guard let status = OrderStatus(rawValue: try row.string("status")),
            let paymentStatus = PaymentStatus(rawValue: try row.string("payment_status"))
        else { throw SQLError(.typeMismatch, "unknown order or payment status") }
        return Order(
            id: try row.string("id"), checkoutID: try row.string("checkout_id"), status: status,
            currencyCode: try row.string("currency"),
            lines: try orderLines(try row.string("items_json")),
            totals: OrderTotals(
                subtotal: try row.int64("subtotal_minor"), discount: try row.int64("discount_minor"),
                shipping: try row.int64("shipping_minor"), tax: try row.int64("tax_minor"),
                fee: try row.int64("fee_minor"), total: try row.int64("total_minor")),
            shippingMethod: try row.optionalString("shipping_method_json").map { text throws(SQLError) in
                try decodeStored(OrderShippingMethod.self, text, fast: StoredJSON.shippingMethod)
            },
            couponCode: try row.optionalString("coupon_code"),
            shippingContact: try row.optionalString("shipping_contact_json").map { text throws(SQLError) in
                try decodeStored(Contact.self, text, fast: StoredJSON.contact)
            },
            billingContact: try row.optionalString("billing_contact_json").map { text throws(SQLError) in
                try decodeStored(Contact.self, text, fast: StoredJSON.contact)
            },
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
            createdAt: Date(unixMilliseconds: try row.int64("created_at")),
            updatedAt: Date(unixMilliseconds: try row.int64("updated_at")))
    }

    /// The refunds matching `condition`; `oldestFirst` orders them by their last change, at most `limit`.
    func loadRefunds(_ connection: Connection, where condition: SQLQuery, oldestFirst limit: Int? = nil)
        throws(SQLError) -> [RefundRecord]
    {
        var refunds: [RefundRecord] = []
        let order: SQLQuery = limit.map { "ORDER BY updated_at, id LIMIT \(bind: max(1, $0))" } ?? ""
        for row in try connection.query(
            """
            SELECT id, order_id, idempotency_key, amount_minor, status, processor_reference FROM refunds
            WHERE \(condition) \(order)
            """)
        {
            guard let status = RefundRecord.Status(rawValue: try row.string("status")) else {
                throw SQLError(.typeMismatch, "unknown refund status")
            }
            refunds.append(
                RefundRecord(
                    id: try row.string("id"), orderID: try row.string("order_id"),
                    idempotencyKey: try row.string("idempotency_key"), amount: try row.int64("amount_minor"),
                    status: status, processorReference: try row.optionalString("processor_reference")))
        }
        return refunds
    }
}

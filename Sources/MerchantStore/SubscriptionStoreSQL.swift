import Foundation
import Foundations
import MerchantCore
import SQLCore

/// Subscriptions (``SubscriptionStore``): money as minor units, times as Unix milliseconds, no MPAN (only the
/// processor's `payment_method_reference`, and the `customer_reference` it is attached to where there is one).
///
/// What keeps a billing cycle charged once when several instances run the scheduler on one database:
/// - every attempt is charged under the idempotency key `sub_…:c<cycle>:a<attempt>`, so the processor charges a key
///   once however many instances send it;
/// - ``updateSubscription(_:expectedVersion:charge:)`` is one `UPDATE ... WHERE id = ? AND version = ?`: a second
///   writer waits for the first's row lock (on SQLite, for the writer), then finds the version moved and changes
///   nothing (`nil`), so one instance records the outcome and advances the cycle;
/// - the charge row is written in the same transaction, UNIQUE by its key, by (subscription, cycle, attempt), and
///   by (subscription, cycle) among approved ones: the database refuses a second approval of one cycle;
/// - a subscription per checkout (`checkout_id` UNIQUE, `INSERT ... ON CONFLICT DO NOTHING`) and an Apple event
///   applied once (`event_id` PRIMARY KEY) hold across instances the same way.
extension SQLStore: SubscriptionStore {
    public func insertSubscription(_ subscription: Subscription) async throws(OrderStoreError) -> Subscription {
        let s = subscription
        let plan = try Self.encoded(s.plan, "insert subscription")
        let stored = try await write("insert subscription") { connection throws(SQLError) -> Subscription? in
            let inserted = try connection.run(
                """
                INSERT INTO subscriptions (id, secret, checkout_id, order_id, sku, product_name, plan_json,
                    amount_minor, currency, merchant_token_identifier, payment_method_reference, network,
                    card_suffix, card_expiration, card_art_url, status, status_reason, cycle, attempt, anchor,
                    next_charge_at, created_at, updated_at, version, card_country, card_short_description,
                    card_long_description, skipped_cycles, unresolved_charge_key, unresolved_since,
                    unresolved_reference, customer_reference)
                VALUES (\(bind: s.id), \(bind: s.secret), \(bind: s.checkoutID), \(bind: s.orderID), \(bind: s.sku), \
                \(bind: s.productName), \(bind: plan), \(bind: s.amount), \(bind: s.currencyCode), \
                \(bind: s.merchantTokenIdentifier), \(bind: s.paymentMethodReference), \(bind: s.network), \
                \(bind: s.cardSuffix), \(bind: s.cardExpiration), \(bind: s.cardArtURL), \(bind: s.status.rawValue), \
                \(bind: s.statusReason), \(bind: s.cycle), \(bind: s.attempt), \(bind: s.anchor.unixMilliseconds), \
                \(bind: s.nextChargeAt.map(\.unixMilliseconds)), \(bind: s.createdAt.unixMilliseconds), \
                \(bind: s.updatedAt.unixMilliseconds), \(bind: s.version), \(bind: s.cardCountry), \
                \(bind: s.cardDescription), \(bind: s.cardLongDescription), \(bind: s.skippedCycles), \
                \(bind: s.unresolvedCharge?.idempotencyKey), \(bind: s.unresolvedCharge?.since.unixMilliseconds), \
                \(bind: s.unresolvedCharge?.processorReference), \(bind: s.customerReference))
                \(raw: connection.dialect.onConflictDoNothing("checkout_id"))
                """)
            if inserted == 1, let orderID = s.orderID, s.merchantTokenIdentifier != nil {
                try connection.run(
                    "UPDATE payments SET merchant_token = \(bind: true) WHERE order_id = \(bind: orderID)")
            }
            // The first one for this checkout: this one, or another instance's.
            return try self.loadSubscriptions(connection, "checkout_id = \(bind: s.checkoutID)", limit: 1).first
        }
        guard let stored else { throw OrderStoreError(.storage, "insert subscription: not stored") }
        return stored
    }

    public func subscription(id: String) async throws(OrderStoreError) -> Subscription? {
        try await read("read subscription") { connection throws(SQLError) -> Subscription? in
            try self.loadSubscriptions(connection, "id = \(bind: id)", limit: 1).first
        }
    }

    public func subscriptions(_ filter: SubscriptionFilter) async throws(OrderStoreError) -> [Subscription] {
        var condition: SQLQuery = "1 = 1"
        if let statuses = filter.statuses {
            condition.append(" AND status \(raw: SQLDialect.inList(statuses.map(\.rawValue)))")
        }
        if let token = filter.merchantTokenIdentifier {
            condition.append(" AND merchant_token_identifier = \(bind: token)")
        }
        if let checkout = filter.checkoutID { condition.append(" AND checkout_id = \(bind: checkout)") }
        if let due = filter.dueBy {
            condition.append(" AND next_charge_at IS NOT NULL AND next_charge_at <= \(bind: due.unixMilliseconds)")
        }
        switch filter.unresolved {
        case true?: condition.append(" AND unresolved_charge_key IS NOT NULL")
        case false?: condition.append(" AND unresolved_charge_key IS NULL")
        case nil: break
        }
        let chosen = condition
        return try await read("list subscriptions") { connection throws(SQLError) -> [Subscription] in
            try self.loadSubscriptions(connection, chosen, limit: filter.limit)
        }
    }

    public func updateSubscription(
        _ updated: Subscription, expectedVersion: Int, charge: SubscriptionCharge?, event: SubscriptionEvent?
    ) async throws(OrderStoreError) -> Subscription? {
        var next = updated
        next.version = expectedVersion + 1
        next.updatedAt = clock()
        let n = next
        return try await write("update subscription") { connection throws(SQLError) -> Subscription? in
            // Waits for a concurrent writer's row lock, then sees its version: only one of them changes the row.
            guard try self.writeSubscription(connection, n, expectedVersion: expectedVersion) else { return nil }
            if let event {
                try self.appendEvent(
                    connection, event.kind, checkoutID: n.checkoutID, orderID: n.orderID,
                    event.detail.merging(["subscriptionId": n.id]) { first, _ in first },
                    at: n.updatedAt.unixMilliseconds)
            }
            if let charge { try self.insertCharge(connection, charge) }
            return n
        }
    }

    /// Inserts a decided charge row (UNIQUE by its key, by its attempt, and by its cycle among approvals).
    func insertCharge(_ connection: Connection, _ charge: SubscriptionCharge) throws(SQLError) {
        try connection.run(
            """
            INSERT INTO subscription_charges (idempotency_key, subscription_id, cycle, attempt, amount_minor,
                currency, status, processor_reference, decline_code, due_at, charged_at, refund_owed)
            VALUES (\(bind: charge.idempotencyKey), \(bind: charge.subscriptionID), \(bind: charge.cycle), \
            \(bind: charge.attempt), \(bind: charge.amount), \(bind: charge.currencyCode), \
            \(bind: charge.status), \(bind: charge.processorReference), \(bind: charge.declineCode), \
            \(bind: charge.dueAt.unixMilliseconds), \(bind: charge.chargedAt.unixMilliseconds), \
            \(bind: charge.refundOwed ? 1 : 0))
            """)
    }

    /// The one UPDATE of a subscription row, over the version read: true when it changed the row.
    func writeSubscription(_ connection: Connection, _ n: Subscription, expectedVersion: Int)
        throws(SQLError) -> Bool
    {
        try connection.run(
            """
            UPDATE subscriptions SET order_id = \(bind: n.orderID),
                merchant_token_identifier = \(bind: n.merchantTokenIdentifier),
                payment_method_reference = \(bind: n.paymentMethodReference),
                customer_reference = \(bind: n.customerReference), network = \(bind: n.network),
                card_suffix = \(bind: n.cardSuffix), card_expiration = \(bind: n.cardExpiration),
                card_art_url = \(bind: n.cardArtURL), card_country = \(bind: n.cardCountry),
                card_short_description = \(bind: n.cardDescription),
                card_long_description = \(bind: n.cardLongDescription), skipped_cycles = \(bind: n.skippedCycles),
                status = \(bind: n.status.rawValue), status_reason = \(bind: n.statusReason),
                cycle = \(bind: n.cycle), attempt = \(bind: n.attempt),
                next_charge_at = \(bind: n.nextChargeAt.map(\.unixMilliseconds)),
                unresolved_charge_key = \(bind: n.unresolvedCharge?.idempotencyKey),
                unresolved_since = \(bind: n.unresolvedCharge?.since.unixMilliseconds),
                unresolved_reference = \(bind: n.unresolvedCharge?.processorReference),
                updated_at = \(bind: n.updatedAt.unixMilliseconds), version = \(bind: n.version)
            WHERE id = \(bind: n.id) AND version = \(bind: expectedVersion)
            """) == 1
    }

    public func applyTokenEvent(
        eventID: String, eventType: String, merchantTokenIdentifier: String,
        change: @escaping @Sendable (Subscription) -> Subscription?
    ) async throws(OrderStoreError) -> Int? {
        try await write("apply token event") { connection throws(SQLError) -> Int? in
            let now = self.clock()
            // A second delivery of the same event waits here for the first's transaction, then finds the id taken.
            guard
                try connection.run(
                    """
                    INSERT INTO merchant_token_events (event_id, event_type, merchant_token_identifier, applied_at)
                    VALUES (\(bind: eventID), \(bind: eventType), \(bind: merchantTokenIdentifier), \
                    \(bind: now.unixMilliseconds))
                    \(raw: connection.dialect.onConflictDoNothing("event_id"))
                    """) == 1
            else { return nil }
            var changed = 0
            // Locked (PostgreSQL) until the commit: a scheduler recording a charge meanwhile waits, then misses
            // the version and reads the subscription again; on SQLite the one writer runs this alone.
            for subscription in try self.loadSubscriptions(
                connection, "merchant_token_identifier = \(bind: merchantTokenIdentifier)", limit: 1000,
                locking: true)
            {
                guard var next = change(subscription), next != subscription else { continue }
                next.version = subscription.version + 1
                next.updatedAt = now
                guard try self.writeSubscription(connection, next, expectedVersion: subscription.version) else {
                    // Rolls back the event id with everything else: the caller tries the whole event again.
                    throw SQLError(.unexpectedRowCount, "subscription \(subscription.id) changed meanwhile")
                }
                changed += 1
            }
            return changed
        }
    }

    public func recordChargeRefund(
        _ charge: SubscriptionCharge, of subscription: Subscription, reference: String,
        refund: SubscriptionChargeRefund?, at: Date
    ) async throws(OrderStoreError) -> Bool {
        try await write("record subscription refund") { connection throws(SQLError) -> Bool in
            let now = at.unixMilliseconds
            let key = charge.idempotencyKey
            var kind = "subscriptionChargeRefunded"
            if let refund {
                // Recorded once under our key; a refund given back now counts at once, a pending one when its webhook
                // confirms it (``recordRefundSucceeded``).
                guard try self.insertChargeRefund(connection, refund, now: now) else { return false }
                try connection.run(
                    """
                    UPDATE subscription_charges SET refund_owed = 0,
                        refund_reference = COALESCE(refund_reference, \(bind: reference))
                    WHERE idempotency_key = \(bind: key) AND status = 'approved'
                    """, expectingRows: 1)
                if refund.status == .succeeded {
                    try self.addRefunded(connection, refund.amount, chargeKey: key, now: now)
                } else {
                    kind = "subscriptionChargeRefundPending"
                }
            } else {
                guard
                    try connection.run(
                        """
                        UPDATE subscription_charges SET refund_reference = \(bind: reference), \
                        refunded_at = \(bind: now), refund_owed = 0, refunded_minor = amount_minor
                        WHERE idempotency_key = \(bind: key) AND status = 'approved'
                            AND refunded_at IS NULL
                        """) == 1
                else { return false }
            }
            try self.appendEvent(
                connection, kind, checkoutID: subscription.checkoutID, orderID: subscription.orderID,
                [
                    "subscriptionId": subscription.id, "cycle": String(charge.cycle),
                    "idempotencyKey": key, "refundReference": reference,
                    "amountMinor": String(refund?.amount ?? charge.amount),
                    "reason": subscription.statusReason ?? "cancelled",
                ], at: now)
            return true
        }
    }

    /// Inserts a refund of a subscription charge; false when one with its key (or its provider reference) exists.
    func insertChargeRefund(_ connection: Connection, _ refund: SubscriptionChargeRefund, now: Int64)
        throws(SQLError) -> Bool
    {
        try connection.run(
            """
            INSERT INTO subscription_charge_refunds (id, charge_key, refund_key, processor_reference, amount_minor,
                status, failure_code, created_at, updated_at)
            VALUES (\(bind: "scr_" + timeOrderedHex(milliseconds: now)), \(bind: refund.chargeKey), \(bind: refund.refundKey), \
            \(bind: refund.reference), \(bind: refund.amount), \(bind: refund.status.rawValue), \
            \(bind: refund.failureCode), \(bind: now), \(bind: now))
            ON CONFLICT DO NOTHING
            """) == 1
    }

    /// Adds `amount` to what the charge `chargeKey` gave back, at `now` (`refunded_at`); a negative amount (a refund
    /// that failed after it succeeded) takes it back, and `refunded_at` is `NULL` once nothing is given back.
    func addRefunded(_ connection: Connection, _ amount: Int64, chargeKey: String, now: Int64) throws(SQLError) {
        if amount > 0 {
            try connection.run(
                """
                UPDATE subscription_charges SET refunded_minor = refunded_minor + \(bind: amount),
                    refunded_at = \(bind: now)
                WHERE idempotency_key = \(bind: chargeKey)
                """, expectingRows: 1)
            return
        }
        try connection.run(
            """
            UPDATE subscription_charges SET refunded_minor = refunded_minor + \(bind: amount)
            WHERE idempotency_key = \(bind: chargeKey)
            """, expectingRows: 1)
        try connection.run(
            """
            UPDATE subscription_charges SET refunded_at = NULL
            WHERE idempotency_key = \(bind: chargeKey) AND refunded_minor = 0
            """)
    }

    public func subscriptionCharges(subscriptionID: String) async throws(OrderStoreError) -> [SubscriptionCharge] {
        try await read("list subscription charges") { connection throws(SQLError) -> [SubscriptionCharge] in
            try self.loadCharges(connection, "subscription_id = \(bind: subscriptionID)", limit: 100_000)
        }
    }

    public func chargesOwingRefund(limit: Int) async throws(OrderStoreError) -> [SubscriptionCharge] {
        try await read("list charges owing a refund") { connection throws(SQLError) -> [SubscriptionCharge] in
            try self.loadCharges(connection, "refund_owed = 1", limit: limit)
        }
    }

    public func chargesWithFailedGiveBacks(limit: Int) async throws(OrderStoreError) -> [SubscriptionCharge] {
        try await read("list charges whose give-back failed") { connection throws(SQLError) -> [SubscriptionCharge] in
            try self.loadCharges(
                connection,
                """
                refunded_minor < amount_minor AND idempotency_key IN (
                    SELECT charge_key FROM subscription_charge_refunds
                    WHERE status = 'failed' AND refund_key IS NOT NULL)
                """, limit: limit)
        }
    }

    /// The charges `condition` selects (on `subscription_charges`' columns), with their refunds.
    func loadCharges(_ connection: Connection, _ condition: SQLQuery, limit: Int) throws(SQLError)
        -> [SubscriptionCharge]
    {
        var charges: [SubscriptionCharge] = []
        for row in try connection.query(
            """
            SELECT idempotency_key, subscription_id, cycle, attempt, amount_minor, currency, status,
                processor_reference, decline_code, due_at, charged_at, refund_reference, refunded_at, refund_owed,
                refunded_minor
            FROM subscription_charges WHERE \(condition)
            ORDER BY charged_at, cycle, attempt LIMIT \(bind: max(1, limit))
            """)
        {
            charges.append(
                SubscriptionCharge(
                    subscriptionID: try row.string("subscription_id"), cycle: Int(try row.int64("cycle")),
                    attempt: Int(try row.int64("attempt")), idempotencyKey: try row.string("idempotency_key"),
                    amount: try row.int64("amount_minor"), currencyCode: try row.string("currency"),
                    status: try row.string("status"),
                    processorReference: try row.optionalString("processor_reference"),
                    declineCode: try row.optionalString("decline_code"),
                    dueAt: Date(unixMilliseconds: try row.int64("due_at")),
                    chargedAt: Date(unixMilliseconds: try row.int64("charged_at")),
                    refundReference: try row.optionalString("refund_reference"),
                    refundedAt: try row.optionalInt64("refunded_at").map(Date.init(unixMilliseconds:)),
                    refundOwed: try row.int64("refund_owed") == 1, refunded: try row.int64("refunded_minor")))
        }
        guard !charges.isEmpty else { return charges }
        // The condition in a subquery of its own: its columns are still `subscription_charges`'.
        var refunds: [String: [SubscriptionChargeRefund]] = [:]
        for refund in try loadChargeRefunds(
            connection, "charge_key IN (SELECT idempotency_key FROM subscription_charges WHERE \(condition))")
        {
            refunds[refund.chargeKey, default: []].append(refund)
        }
        for index in charges.indices { charges[index].refunds = refunds[charges[index].idempotencyKey] ?? [] }
        return charges
    }

    /// The subscription charge refunds `condition` selects, oldest first.
    func loadChargeRefunds(_ connection: Connection, _ condition: SQLQuery) throws(SQLError)
        -> [SubscriptionChargeRefund]
    {
        var refunds: [SubscriptionChargeRefund] = []
        for row in try connection.query(
            """
            SELECT charge_key, refund_key, processor_reference, amount_minor, status, failure_code, created_at
            FROM subscription_charge_refunds WHERE \(condition) ORDER BY created_at, id
            """)
        {
            guard let status = RefundRecord.Status(rawValue: try row.string("status")) else {
                throw SQLError(.typeMismatch, "unreadable subscription charge refund row (status)")
            }
            refunds.append(
                SubscriptionChargeRefund(
                    chargeKey: try row.string("charge_key"), refundKey: try row.optionalString("refund_key"),
                    reference: try row.optionalString("processor_reference"), amount: try row.int64("amount_minor"),
                    status: status, failureCode: try row.optionalString("failure_code"),
                    createdAt: Date(unixMilliseconds: try row.int64("created_at"))))
        }
        return refunds
    }

    // MARK: Rows

    func loadSubscriptions(
        _ connection: Connection, _ condition: SQLQuery, limit: Int, locking: Bool = false
    ) throws(SQLError) -> [Subscription] {
        var subscriptions: [Subscription] = []
        let lock = locking ? connection.dialect.forUpdate : ""
        for row in try connection.query(
            """
            SELECT * FROM subscriptions WHERE \(condition) ORDER BY created_at, id LIMIT \(bind: max(1, limit))\
            \(raw: lock)
            """)
        {
            guard let status = SubscriptionStatus(rawValue: try row.string("status")) else {
                throw SQLError(.typeMismatch, "unreadable subscription row (status)")
            }
            subscriptions.append(
                Subscription(
                    id: try row.string("id"), secret: try row.string("secret"),
                    checkoutID: try row.string("checkout_id"), orderID: try row.optionalString("order_id"),
                    sku: try row.string("sku"), productName: try row.string("product_name"),
                    plan: try decodeStored(BillingPlan.self, try row.string("plan_json")),
                    amount: try row.int64("amount_minor"), currencyCode: try row.string("currency"),
                    merchantTokenIdentifier: try row.optionalString("merchant_token_identifier"),
                    paymentMethodReference: try row.string("payment_method_reference"),
                    network: try row.optionalString("network"), cardSuffix: try row.optionalString("card_suffix"),
                    cardExpiration: try row.optionalString("card_expiration"),
                    cardArtURL: try row.optionalString("card_art_url"), status: status,
                    statusReason: try row.optionalString("status_reason"), cycle: Int(try row.int64("cycle")),
                    attempt: Int(try row.int64("attempt")), anchor: Date(unixMilliseconds: try row.int64("anchor")),
                    nextChargeAt: try row.optionalInt64("next_charge_at").map(Date.init(unixMilliseconds:)),
                    createdAt: Date(unixMilliseconds: try row.int64("created_at")),
                    updatedAt: Date(unixMilliseconds: try row.int64("updated_at")),
                    version: Int(try row.int64("version")),
                    cardCountry: try row.optionalString("card_country"),
                    cardDescription: try row.optionalString("card_short_description"),
                    cardLongDescription: try row.optionalString("card_long_description"),
                    skippedCycles: Int(try row.int64("skipped_cycles")),
                    unresolvedCharge: try Self.attempt(row),
                    customerReference: try row.optionalString("customer_reference")))
        }
        return subscriptions
    }

    /// The unresolved attempt columns of a subscription row (`nil`: none).
    private static func attempt(_ row: Row) throws(SQLError) -> SubscriptionChargeAttempt? {
        guard let key = try row.optionalString("unresolved_charge_key"),
            let since = try row.optionalInt64("unresolved_since")
        else { return nil }
        return SubscriptionChargeAttempt(
            idempotencyKey: key, since: Date(unixMilliseconds: since),
            processorReference: try row.optionalString("unresolved_reference"))
    }
}

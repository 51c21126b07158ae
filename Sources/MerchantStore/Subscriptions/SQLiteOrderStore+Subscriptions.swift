import Foundation
import MerchantCore
import SQLite

extension SQLiteOrderStore: SubscriptionStore {
    /// Migration 005: subscriptions, their charge attempts, the merchant-token events applied, and whether a
    /// payment was made with a merchant token.
    static let subscriptionsMigration = Migration(
        "006-subscriptions-merchant-tokens",
        sql: """
            CREATE TABLE subscriptions (
                id TEXT PRIMARY KEY,
                secret TEXT NOT NULL,
                checkout_id TEXT NOT NULL UNIQUE REFERENCES checkouts(id),
                order_id TEXT REFERENCES orders(id),
                sku TEXT NOT NULL,
                product_name TEXT NOT NULL,
                plan_json TEXT NOT NULL,
                amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
                currency TEXT NOT NULL CHECK (length(currency) = 3),
                merchant_token_identifier TEXT,
                payment_method_reference TEXT NOT NULL,
                network TEXT,
                card_suffix TEXT,
                card_expiration TEXT,
                card_art_url TEXT,
                status TEXT NOT NULL CHECK (status IN ('active', 'pastDue', 'cancelled', 'unlinked')),
                status_reason TEXT,
                cycle INTEGER NOT NULL CHECK (cycle >= 1),
                attempt INTEGER NOT NULL CHECK (attempt >= 0),
                anchor INTEGER NOT NULL,
                next_charge_at INTEGER,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                version INTEGER NOT NULL
            );
            CREATE INDEX subscriptions_due ON subscriptions(next_charge_at) WHERE status IN ('active', 'pastDue');
            CREATE INDEX subscriptions_by_token ON subscriptions(merchant_token_identifier);
            CREATE TABLE subscription_charges (
                idempotency_key TEXT PRIMARY KEY,
                subscription_id TEXT NOT NULL REFERENCES subscriptions(id),
                cycle INTEGER NOT NULL,
                attempt INTEGER NOT NULL,
                amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
                currency TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('approved', 'declined')),
                processor_reference TEXT,
                decline_code TEXT,
                due_at INTEGER NOT NULL,
                charged_at INTEGER NOT NULL,
                UNIQUE (subscription_id, cycle, attempt)
            );
            CREATE UNIQUE INDEX subscription_one_approval_per_cycle ON subscription_charges(subscription_id, cycle)
                WHERE status = 'approved';
            CREATE TABLE merchant_token_events (
                event_id TEXT PRIMARY KEY,
                event_type TEXT NOT NULL,
                merchant_token_identifier TEXT NOT NULL,
                applied_at INTEGER NOT NULL
            );
            ALTER TABLE payments ADD COLUMN merchant_token INTEGER NOT NULL DEFAULT 0 CHECK (merchant_token IN (0, 1));
            """)

    public func insertSubscription(_ subscription: Subscription) throws(OrderStoreError) -> Subscription {
        do {
            return try connection.transaction(.immediate) { connection throws(SQLiteError) -> Subscription in
                if let existing = try loadSubscriptions(
                    connection, "checkout_id = ?", [.text(subscription.checkoutID)], limit: 1
                ).first {
                    return existing
                }
                let s = subscription
                try connection.run(
                    """
                    INSERT INTO subscriptions (id, secret, checkout_id, order_id, sku, product_name, plan_json,
                        amount_minor, currency, merchant_token_identifier, payment_method_reference, network,
                        card_suffix, card_expiration, card_art_url, status, status_reason, cycle, attempt, anchor,
                        next_charge_at, created_at, updated_at, version)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, values: Self.values(s) + [Value.integer(Int64(s.version))])
                if let orderID = s.orderID, s.merchantTokenIdentifier != nil {
                    try connection.run("UPDATE payments SET merchant_token = 1 WHERE order_id = ?", .text(orderID))
                }
                return s
            }
        } catch {
            throw OrderStoreError(.storage, "insert subscription: \(error)")
        }
    }

    public func subscription(id: String) throws(OrderStoreError) -> Subscription? {
        do {
            return try loadSubscriptions(connection, "id = ?", [.text(id)], limit: 1).first
        } catch {
            throw OrderStoreError(.storage, "read subscription: \(error)")
        }
    }

    public func subscriptions(_ filter: SubscriptionFilter) throws(OrderStoreError) -> [Subscription] {
        var conditions: [String] = []
        var values: [Value] = []
        if let statuses = filter.statuses {
            conditions.append("status IN (\(statuses.map { "'\($0.rawValue)'" }.joined(separator: ", ")))")
        }
        if let token = filter.merchantTokenIdentifier {
            conditions.append("merchant_token_identifier = ?")
            values.append(.text(token))
        }
        if let checkout = filter.checkoutID {
            conditions.append("checkout_id = ?")
            values.append(.text(checkout))
        }
        if let due = filter.dueBy {
            conditions.append("next_charge_at IS NOT NULL AND next_charge_at <= ?")
            values.append(.integer(Self.storedMillis(due)))
        }
        do {
            return try loadSubscriptions(
                connection, conditions.isEmpty ? "1" : conditions.joined(separator: " AND "), values,
                limit: filter.limit)
        } catch {
            throw OrderStoreError(.storage, "list subscriptions: \(error)")
        }
    }

    public func updateSubscription(_ updated: Subscription, expectedVersion: Int, charge: SubscriptionCharge?)
        throws(OrderStoreError) -> Subscription?
    {
        do {
            return try connection.transaction(.immediate) { connection throws(SQLiteError) -> Subscription? in
                var next = updated
                next.version = expectedVersion + 1
                next.updatedAt = clock()
                let changed = try connection.run(
                    """
                    UPDATE subscriptions SET order_id = ?, merchant_token_identifier = ?, payment_method_reference = ?,
                        network = ?, card_suffix = ?, card_expiration = ?, card_art_url = ?, status = ?,
                        status_reason = ?, cycle = ?, attempt = ?, next_charge_at = ?, updated_at = ?, version = ?
                    WHERE id = ? AND version = ?
                    """, Value(next.orderID), Value(next.merchantTokenIdentifier), .text(next.paymentMethodReference),
                    Value(next.network), Value(next.cardSuffix), Value(next.cardExpiration), Value(next.cardArtURL),
                    .text(next.status.rawValue), Value(next.statusReason), .integer(Int64(next.cycle)),
                    .integer(Int64(next.attempt)), Value(next.nextChargeAt.map(Self.storedMillis)),
                    .integer(Self.storedMillis(next.updatedAt)), .integer(Int64(next.version)), .text(next.id),
                    .integer(Int64(expectedVersion)))
                guard changed == 1 else { return nil }
                if let charge {
                    try connection.run(
                        """
                        INSERT INTO subscription_charges (idempotency_key, subscription_id, cycle, attempt, amount_minor,
                            currency, status, processor_reference, decline_code, due_at, charged_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, .text(charge.idempotencyKey), .text(charge.subscriptionID), .integer(Int64(charge.cycle)),
                        .integer(Int64(charge.attempt)), .integer(charge.amount), .text(charge.currencyCode),
                        .text(charge.status), Value(charge.processorReference), Value(charge.declineCode),
                        .integer(Self.storedMillis(charge.dueAt)), .integer(Self.storedMillis(charge.chargedAt)))
                }
                return next
            }
        } catch {
            throw OrderStoreError(.storage, "update subscription: \(error)")
        }
    }

    public func subscriptionCharges(subscriptionID: String) throws(OrderStoreError) -> [SubscriptionCharge] {
        do {
            return try connection.query(
                """
                SELECT idempotency_key, subscription_id, cycle, attempt, amount_minor, currency, status,
                    processor_reference, decline_code, due_at, charged_at
                FROM subscription_charges WHERE subscription_id = ? ORDER BY charged_at, cycle, attempt
                """, .text(subscriptionID)
            ).map { row throws(SQLiteError) in
                SubscriptionCharge(
                    subscriptionID: try row.string("subscription_id"), cycle: Int(try row.int64("cycle")),
                    attempt: Int(try row.int64("attempt")), idempotencyKey: try row.string("idempotency_key"),
                    amount: try row.int64("amount_minor"), currencyCode: try row.string("currency"),
                    status: try row.string("status"), processorReference: try row.optionalString("processor_reference"),
                    declineCode: try row.optionalString("decline_code"),
                    dueAt: Self.storedDate(try row.int64("due_at")),
                    chargedAt: Self.storedDate(try row.int64("charged_at")))
            }
        } catch {
            throw OrderStoreError(.storage, "list subscription charges: \(error)")
        }
    }

    public func recordTokenEvent(eventID: String, eventType: String, merchantTokenIdentifier: String)
        throws(OrderStoreError) -> Bool
    {
        do {
            return try connection.transaction(.immediate) { connection throws(SQLiteError) -> Bool in
                guard
                    try connection.query("SELECT 1 FROM merchant_token_events WHERE event_id = ?", .text(eventID))
                        .isEmpty
                else { return false }
                try connection.run(
                    """
                    INSERT INTO merchant_token_events (event_id, event_type, merchant_token_identifier, applied_at)
                    VALUES (?, ?, ?, ?)
                    """, .text(eventID), .text(eventType), .text(merchantTokenIdentifier),
                    .integer(Self.storedMillis(clock())))
                return true
            }
        } catch {
            throw OrderStoreError(.storage, "record token event: \(error)")
        }
    }

    // MARK: Rows

    private static func values(_ s: Subscription) -> [Value] {
        [
            .text(s.id), .text(s.secret), .text(s.checkoutID), Value(s.orderID), .text(s.sku), .text(s.productName),
            .text((try? String(decoding: JSONEncoder().encode(s.plan), as: UTF8.self)) ?? "{}"), .integer(s.amount),
            .text(s.currencyCode), Value(s.merchantTokenIdentifier), .text(s.paymentMethodReference), Value(s.network),
            Value(s.cardSuffix), Value(s.cardExpiration), Value(s.cardArtURL), .text(s.status.rawValue),
            Value(s.statusReason), .integer(Int64(s.cycle)), .integer(Int64(s.attempt)),
            .integer(storedMillis(s.anchor)),
            Value(s.nextChargeAt.map(storedMillis)), .integer(storedMillis(s.createdAt)),
            .integer(storedMillis(s.updatedAt)),
        ]
    }

    private func loadSubscriptions(_ connection: Connection, _ condition: String, _ values: [Value], limit: Int)
        throws(SQLiteError) -> [Subscription]
    {
        try connection.query(
            "SELECT * FROM subscriptions WHERE \(condition) ORDER BY created_at, id LIMIT \(max(1, limit))",
            values: values
        ).map { row throws(SQLiteError) in
            guard let status = SubscriptionStatus(rawValue: try row.string("status")),
                let plan = try? JSONDecoder().decode(BillingPlan.self, from: Data(try row.string("plan_json").utf8))
            else { throw SQLiteError(.typeMismatch, "unreadable subscription row") }
            return Subscription(
                id: try row.string("id"), secret: try row.string("secret"), checkoutID: try row.string("checkout_id"),
                orderID: try row.optionalString("order_id"), sku: try row.string("sku"),
                productName: try row.string("product_name"), plan: plan, amount: try row.int64("amount_minor"),
                currencyCode: try row.string("currency"),
                merchantTokenIdentifier: try row.optionalString("merchant_token_identifier"),
                paymentMethodReference: try row.string("payment_method_reference"),
                network: try row.optionalString("network"), cardSuffix: try row.optionalString("card_suffix"),
                cardExpiration: try row.optionalString("card_expiration"),
                cardArtURL: try row.optionalString("card_art_url"), status: status,
                statusReason: try row.optionalString("status_reason"), cycle: Int(try row.int64("cycle")),
                attempt: Int(try row.int64("attempt")), anchor: Self.storedDate(try row.int64("anchor")),
                nextChargeAt: try row.optionalInt64("next_charge_at").map(Self.storedDate),
                createdAt: Self.storedDate(try row.int64("created_at")),
                updatedAt: Self.storedDate(try row.int64("updated_at")),
                version: Int(try row.int64("version")))
        }
    }

    static func storedMillis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    static func storedDate(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }
}

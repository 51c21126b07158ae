import Foundation
import MerchantCore
import Postgres

/// Subscriptions on PostgreSQL, with the meaning of ``SQLiteOrderStore``'s migration 006 (money as `bigint` minor
/// units, times as `bigint` Unix milliseconds, no MPAN: only the processor's `payment_method_reference`).
///
/// What keeps a billing cycle charged once when several instances run the scheduler on one database:
/// - every attempt is charged under the idempotency key `sub_…:c<cycle>:a<attempt>`, so the processor charges a key
///   once however many instances send it;
/// - ``updateSubscription(_:expectedVersion:charge:)`` is one `UPDATE ... WHERE id = $ AND version = $`: under READ
///   COMMITTED a second writer waits for the first's row lock, then finds the version moved and changes nothing
///   (`nil`), so one instance records the outcome and advances the cycle;
/// - the charge row is written in the same transaction, UNIQUE by its key, by (subscription, cycle, attempt), and
///   by (subscription, cycle) among approved ones: the database refuses a second approval of one cycle;
/// - a subscription per checkout (`checkout_id` UNIQUE, `INSERT ... ON CONFLICT DO NOTHING`) and an Apple event
///   applied once (`event_id` PRIMARY KEY) hold across instances the same way.
extension PostgresOrderStore: SubscriptionStore {
    /// Migration 004: subscriptions, their charge attempts, the merchant-token events applied, and whether a
    /// payment was made with a merchant token.
    static let subscriptionsSchema = """
        CREATE TABLE subscriptions (
            id text PRIMARY KEY,
            secret text NOT NULL,
            checkout_id text NOT NULL UNIQUE REFERENCES checkouts(id),
            order_id text REFERENCES orders(id),
            sku text NOT NULL,
            product_name text NOT NULL,
            plan_json text NOT NULL,
            amount_minor bigint NOT NULL CHECK (amount_minor > 0),
            currency text NOT NULL CHECK (length(currency) = 3),
            merchant_token_identifier text,
            payment_method_reference text NOT NULL,
            network text,
            card_suffix text,
            card_expiration text,
            card_art_url text,
            status text NOT NULL CHECK (status IN ('active', 'pastDue', 'cancelled', 'unlinked')),
            status_reason text,
            cycle integer NOT NULL CHECK (cycle >= 1),
            attempt integer NOT NULL CHECK (attempt >= 0),
            anchor bigint NOT NULL,
            next_charge_at bigint,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            version integer NOT NULL
        );
        CREATE INDEX subscriptions_due ON subscriptions(next_charge_at) WHERE status IN ('active', 'pastDue');
        CREATE INDEX subscriptions_by_token ON subscriptions(merchant_token_identifier);
        CREATE INDEX subscriptions_by_creation ON subscriptions(created_at, id);
        CREATE TABLE subscription_charges (
            idempotency_key text PRIMARY KEY,
            subscription_id text NOT NULL REFERENCES subscriptions(id),
            cycle integer NOT NULL,
            attempt integer NOT NULL,
            amount_minor bigint NOT NULL CHECK (amount_minor > 0),
            currency text NOT NULL,
            status text NOT NULL CHECK (status IN ('approved', 'declined')),
            processor_reference text,
            decline_code text,
            due_at bigint NOT NULL,
            charged_at bigint NOT NULL,
            UNIQUE (subscription_id, cycle, attempt)
        );
        CREATE UNIQUE INDEX subscription_one_approval_per_cycle ON subscription_charges(subscription_id, cycle)
            WHERE status = 'approved';
        CREATE TABLE merchant_token_events (
            event_id text PRIMARY KEY,
            event_type text NOT NULL,
            merchant_token_identifier text NOT NULL,
            applied_at bigint NOT NULL
        );
        ALTER TABLE payments ADD COLUMN merchant_token boolean NOT NULL DEFAULT false;
        """

    public func insertSubscription(_ subscription: Subscription) async throws(OrderStoreError) -> Subscription {
        let s = subscription
        let stored = try await write("insert subscription") { connection -> Subscription? in
            let inserted = try connection.run(
                """
                INSERT INTO subscriptions (id, secret, checkout_id, order_id, sku, product_name, plan_json,
                    amount_minor, currency, merchant_token_identifier, payment_method_reference, network,
                    card_suffix, card_expiration, card_art_url, status, status_reason, cycle, attempt, anchor,
                    next_charge_at, created_at, updated_at, version)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                    $21, $22, $23, $24)
                ON CONFLICT (checkout_id) DO NOTHING
                """, parameters: try Self.subscriptionValues(s) + [.integer(Int64(s.version))])
            if inserted == 1, let orderID = s.orderID, s.merchantTokenIdentifier != nil {
                try connection.run("UPDATE payments SET merchant_token = true WHERE order_id = $1", .text(orderID))
            }
            // The first one for this checkout: this one, or another instance's.
            return try self.loadSubscriptions(
                connection, "checkout_id = $1", [.text(s.checkoutID)], limit: 1
            ).first
        }
        guard let stored else { throw OrderStoreError(.storage, "insert subscription: not stored") }
        return stored
    }

    public func subscription(id: String) async throws(OrderStoreError) -> Subscription? {
        try await read("read subscription") { connection in
            try self.loadSubscriptions(connection, "id = $1", [.text(id)], limit: 1).first
        }
    }

    public func subscriptions(_ filter: SubscriptionFilter) async throws(OrderStoreError) -> [Subscription] {
        var conditions: [String] = []
        var values: [PostgresValue] = []
        func parameter(_ value: PostgresValue) -> String {
            values.append(value)
            return "$\(values.count)"
        }
        if let statuses = filter.statuses {
            let list = "{" + statuses.map(\.rawValue).joined(separator: ",") + "}"
            conditions.append("status = ANY(\(parameter(.text(list)))::text[])")
        }
        if let token = filter.merchantTokenIdentifier {
            conditions.append("merchant_token_identifier = \(parameter(.text(token)))")
        }
        if let checkout = filter.checkoutID {
            conditions.append("checkout_id = \(parameter(.text(checkout)))")
        }
        if let due = filter.dueBy {
            conditions.append(
                "next_charge_at IS NOT NULL AND next_charge_at <= \(parameter(.integer(subscriptionMillis(due))))")
        }
        let condition = conditions.isEmpty ? "TRUE" : conditions.joined(separator: " AND ")
        let chosen = values
        return try await read("list subscriptions") { connection in
            try self.loadSubscriptions(connection, condition, chosen, limit: filter.limit)
        }
    }

    public func updateSubscription(_ updated: Subscription, expectedVersion: Int, charge: SubscriptionCharge?)
        async throws(OrderStoreError) -> Subscription?
    {
        var next = updated
        next.version = expectedVersion + 1
        next.updatedAt = clock()
        let written = next
        return try await write("update subscription") { connection -> Subscription? in
            // Waits for a concurrent writer's row lock, then sees its version: only one of them changes the row.
            let changed = try connection.run(
                """
                UPDATE subscriptions SET order_id = $1, merchant_token_identifier = $2, payment_method_reference = $3,
                    network = $4, card_suffix = $5, card_expiration = $6, card_art_url = $7, status = $8,
                    status_reason = $9, cycle = $10, attempt = $11, next_charge_at = $12, updated_at = $13,
                    version = $14
                WHERE id = $15 AND version = $16
                """,
                parameters: [
                    PostgresValue(written.orderID), PostgresValue(written.merchantTokenIdentifier),
                    .text(written.paymentMethodReference), PostgresValue(written.network),
                    PostgresValue(written.cardSuffix), PostgresValue(written.cardExpiration),
                    PostgresValue(written.cardArtURL), .text(written.status.rawValue),
                    PostgresValue(written.statusReason), .integer(Int64(written.cycle)),
                    .integer(Int64(written.attempt)),
                    written.nextChargeAt.map { .integer(subscriptionMillis($0)) } ?? .null,
                    .integer(subscriptionMillis(written.updatedAt)), .integer(Int64(written.version)),
                    .text(written.id), .integer(Int64(expectedVersion)),
                ])
            guard changed == 1 else { return nil }
            if let charge {
                try connection.run(
                    """
                    INSERT INTO subscription_charges (idempotency_key, subscription_id, cycle, attempt, amount_minor,
                        currency, status, processor_reference, decline_code, due_at, charged_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                    """,
                    parameters: [
                        .text(charge.idempotencyKey), .text(charge.subscriptionID), .integer(Int64(charge.cycle)),
                        .integer(Int64(charge.attempt)), .integer(charge.amount), .text(charge.currencyCode),
                        .text(charge.status), PostgresValue(charge.processorReference),
                        PostgresValue(charge.declineCode), .integer(subscriptionMillis(charge.dueAt)),
                        .integer(subscriptionMillis(charge.chargedAt)),
                    ])
            }
            return written
        }
    }

    public func subscriptionCharges(subscriptionID: String) async throws(OrderStoreError) -> [SubscriptionCharge] {
        try await read("list subscription charges") { connection in
            try connection.query(
                """
                SELECT idempotency_key, subscription_id, cycle, attempt, amount_minor, currency, status,
                    processor_reference, decline_code, due_at, charged_at
                FROM subscription_charges WHERE subscription_id = $1 ORDER BY charged_at, cycle, attempt
                """, .text(subscriptionID)
            ).map { row in
                SubscriptionCharge(
                    subscriptionID: try row.string("subscription_id"), cycle: Int(try row.int64("cycle")),
                    attempt: Int(try row.int64("attempt")), idempotencyKey: try row.string("idempotency_key"),
                    amount: try row.int64("amount_minor"), currencyCode: try row.string("currency"),
                    status: try row.string("status"), processorReference: try row.optionalString("processor_reference"),
                    declineCode: try row.optionalString("decline_code"),
                    dueAt: subscriptionDate(try row.int64("due_at")),
                    chargedAt: subscriptionDate(try row.int64("charged_at")))
            }
        }
    }

    public func recordTokenEvent(eventID: String, eventType: String, merchantTokenIdentifier: String)
        async throws(OrderStoreError) -> Bool
    {
        let now = subscriptionMillis(clock())
        return try await write("record token event") { connection -> Bool in
            try connection.run(
                """
                INSERT INTO merchant_token_events (event_id, event_type, merchant_token_identifier, applied_at)
                VALUES ($1, $2, $3, $4) ON CONFLICT (event_id) DO NOTHING
                """, .text(eventID), .text(eventType), .text(merchantTokenIdentifier), .integer(now)) == 1
        }
    }

    // MARK: Rows

    private static func subscriptionValues(_ s: Subscription) throws(PostgresError) -> [PostgresValue] {
        let plan: String
        do {
            plan = String(decoding: try JSONEncoder().encode(s.plan), as: UTF8.self)
        } catch {
            throw PostgresError(.other, "cannot encode the billing plan as JSON")
        }
        return [
            .text(s.id), .text(s.secret), .text(s.checkoutID), PostgresValue(s.orderID), .text(s.sku),
            .text(s.productName), .text(plan), .integer(s.amount), .text(s.currencyCode),
            PostgresValue(s.merchantTokenIdentifier), .text(s.paymentMethodReference), PostgresValue(s.network),
            PostgresValue(s.cardSuffix), PostgresValue(s.cardExpiration), PostgresValue(s.cardArtURL),
            .text(s.status.rawValue), PostgresValue(s.statusReason), .integer(Int64(s.cycle)),
            .integer(Int64(s.attempt)), .integer(subscriptionMillis(s.anchor)),
            s.nextChargeAt.map { .integer(subscriptionMillis($0)) } ?? .null, .integer(subscriptionMillis(s.createdAt)),
            .integer(subscriptionMillis(s.updatedAt)),
        ]
    }

    private func loadSubscriptions(
        _ connection: PostgresConnection, _ condition: String, _ values: [PostgresValue], limit: Int
    ) throws -> [Subscription] {
        try connection.query(
            """
            SELECT * FROM subscriptions WHERE \(condition) ORDER BY created_at, id LIMIT $\(values.count + 1)
            """, parameters: values + [.integer(Int64(max(1, limit)))]
        ).map { row in
            guard let status = SubscriptionStatus(rawValue: try row.string("status")),
                let plan = try? JSONDecoder().decode(BillingPlan.self, from: Data(try row.string("plan_json").utf8))
            else { throw PostgresError(.typeMismatch, "unreadable subscription row") }
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
                attempt: Int(try row.int64("attempt")), anchor: subscriptionDate(try row.int64("anchor")),
                nextChargeAt: try row.optionalString("next_charge_at").flatMap { Int64($0) }.map(subscriptionDate),
                createdAt: subscriptionDate(try row.int64("created_at")),
                updatedAt: subscriptionDate(try row.int64("updated_at")),
                version: Int(try row.int64("version")))
        }
    }
}

private func subscriptionMillis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
private func subscriptionDate(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

import SQLCore

/// The schema of the order, subscription and Wallet stores: one list of migration names, the DDL of each dialect
/// under each name. Money is a 64-bit integer of minor units and times are 64-bit Unix milliseconds everywhere; the
/// dialect gives the type names, the increasing keys and the triggers.
///
/// Never edit a released migration: append a new one. SQLite files written before the list was shared record seven
/// older names (``LegacySQLiteSchema``); the migrator carries them forward to these.
public enum StoreSchema {
    /// The migrations, in order.
    public static let migrations: [SQLMigration] = [
        SQLMigration("001-checkouts-orders-payments-refunds-events", sql: ordersSchema),
        SQLMigration("002-prune-expired-checkouts", sql: pruningSchema),
        SQLMigration("003-wallet-orders-fulfillments-registrations", sql: walletOrdersSchema),
        SQLMigration("004-subscriptions-merchant-tokens", sql: subscriptionsSchema),
        SQLMigration("005-provider-events-disputes", sql: providerEventsSchema),
        SQLMigration("006-card-metadata-refunds-skipped-cycles", sql: cardMetadataSchema),
        SQLMigration("007-processing-payments-failed-refunds-discrepancies", sql: observationsSchema),
        SQLMigration("008-subscription-charge-attempts", sql: chargeAttemptsSchema),
        SQLMigration("009-kept-method-customers", sql: keptMethodCustomersSchema),
        SQLMigration("010-subscription-charge-refunds", sql: subscriptionChargeRefundsSchema),
    ]

    /// Applies ``migrations`` (and carries a legacy SQLite history forward).
    public static let migrator = Migrator(migrations, legacyHistories: [LegacySQLiteSchema.history])

    /// 001: checkouts, orders (the state machine, refunds, view secrets), payments, refunds, the append-only events.
    @Sendable static func ordersSchema(_ d: SQLDialect) -> String {
        let (text, bigint) = (d.textType, d.bigintType)
        let panLastFour =
            d == .postgres
            ? "pan_last_four ~ '^[0-9]{4}$'"
            : "(length(pan_last_four) = 4 AND pan_last_four NOT GLOB '*[^0-9]*')"
        return """
            CREATE TABLE checkouts (
                id \(text) PRIMARY KEY,
                currency \(text) NOT NULL CHECK (length(currency) = 3),
                state_json \(text) NOT NULL,
                application_data \(text) NOT NULL,
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL
            );
            CREATE TABLE orders (
                id \(text) PRIMARY KEY,
                checkout_id \(text) NOT NULL REFERENCES checkouts(id),
                status \(text) NOT NULL CHECK (status IN (
                    'pending', 'paid', 'declined', 'unknown', 'refunded', 'partiallyRefunded', 'voided')),
                currency \(text) NOT NULL CHECK (length(currency) = 3),
                subtotal_minor \(bigint) NOT NULL,
                discount_minor \(bigint) NOT NULL CHECK (discount_minor >= 0),
                shipping_minor \(bigint) NOT NULL CHECK (shipping_minor >= 0),
                tax_minor \(bigint) NOT NULL CHECK (tax_minor >= 0),
                fee_minor \(bigint) NOT NULL DEFAULT 0 CHECK (fee_minor >= 0),
                total_minor \(bigint) NOT NULL CHECK (total_minor >= 0),
                refunded_minor \(bigint) NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0 AND refunded_minor <= total_minor),
                items_json \(text) NOT NULL,
                shipping_method_json \(text),
                coupon_code \(text),
                shipping_contact_json \(text),
                billing_contact_json \(text),
                payment_network \(text),
                pan_last_four \(text) CHECK (pan_last_four IS NULL OR \(panLastFour)),
                view_secret \(text) NOT NULL,
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL
            );
            CREATE UNIQUE INDEX orders_one_live_order_per_checkout ON orders(checkout_id) WHERE status <> 'declined';
            CREATE INDEX orders_by_checkout ON orders(checkout_id);
            CREATE INDEX orders_by_status ON orders(status, updated_at);
            \(d == .postgres ? "CREATE INDEX orders_by_creation ON orders(created_at DESC, id DESC);" : "")
            CREATE TABLE payments (
                id \(text) PRIMARY KEY,
                order_id \(text) NOT NULL UNIQUE REFERENCES orders(id),
                transaction_id \(text) NOT NULL UNIQUE,
                status \(text) NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'unknown', 'voided')),
                amount_minor \(bigint) NOT NULL CHECK (amount_minor >= 0),
                currency \(text) NOT NULL CHECK (length(currency) = 3),
                processor_reference \(text),
                failure_code \(text),
                failure_message \(text),
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL
            );
            CREATE TABLE refunds (
                id \(text) PRIMARY KEY,
                order_id \(text) NOT NULL REFERENCES orders(id),
                idempotency_key \(text) NOT NULL UNIQUE,
                amount_minor \(bigint) NOT NULL CHECK (amount_minor > 0),
                status \(text) NOT NULL CHECK (status IN ('pending', 'succeeded')),
                processor_reference \(text),
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL
            );
            CREATE INDEX refunds_by_order ON refunds(order_id);
            CREATE TABLE events (
                sequence \(d.increasingKey),
                at \(bigint) NOT NULL,
                kind \(text) NOT NULL,
                checkout_id \(text),
                order_id \(text),
                detail_json \(text) NOT NULL DEFAULT '{}'
            );
            CREATE INDEX events_by_checkout ON events(checkout_id);
            CREATE INDEX events_by_order ON events(order_id);
            \(d == .postgres ? postgresAppendOnlyEvents : sqliteAppendOnlyEvents)
            """
    }

    /// SQLite: triggers refuse UPDATE and DELETE of an event.
    static let sqliteAppendOnlyEvents = """
        CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
        CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
        """

    /// PostgreSQL: a PL/pgSQL trigger refuses UPDATE, DELETE and TRUNCATE of events.
    static let postgresAppendOnlyEvents = """
        CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'events are append-only'; END $$;
        CREATE TRIGGER events_append_only_update BEFORE UPDATE OR DELETE ON events
            FOR EACH ROW EXECUTE FUNCTION events_append_only();
        CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON events
            FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();
        """

    /// 002: expired unpaid checkouts may be pruned with their events. The event log stays append-only for
    /// everything else: a DELETE passes only for an event of a checkout that no longer exists and never had an order.
    @Sendable static func pruningSchema(_ d: SQLDialect) -> String {
        guard d == .postgres else {
            return """
                DROP TRIGGER events_append_only_delete;
                CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
                WHEN OLD.order_id IS NOT NULL OR OLD.checkout_id IS NULL
                    OR EXISTS (SELECT 1 FROM checkouts WHERE id = OLD.checkout_id)
                    OR EXISTS (SELECT 1 FROM orders WHERE checkout_id = OLD.checkout_id)
                BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
                CREATE TRIGGER checkouts_with_orders_are_kept BEFORE DELETE ON checkouts
                WHEN EXISTS (SELECT 1 FROM orders WHERE checkout_id = OLD.id)
                BEGIN SELECT RAISE(ABORT, 'a checkout with an order is kept'); END;
                CREATE INDEX checkouts_by_created ON checkouts(created_at);
                """
        }
        return """
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
    }

    /// 003: Wallet orders' `fulfillments` (append-only per order) and `device_registrations`.
    @Sendable static func walletOrdersSchema(_ d: SQLDialect) -> String {
        let (text, bigint) = (d.textType, d.bigintType)
        return """
            CREATE TABLE fulfillments (
                sequence \(d.increasingKey),
                order_id \(text) NOT NULL REFERENCES orders(id),
                status \(text) NOT NULL CHECK (status IN ('shipped', 'outForDelivery', 'delivered')),
                carrier \(text),
                tracking_number \(text),
                at \(bigint) NOT NULL
            );
            CREATE INDEX fulfillments_by_order ON fulfillments(order_id, sequence);
            CREATE TABLE device_registrations (
                device_identifier \(text) NOT NULL,
                order_type_identifier \(text) NOT NULL,
                order_id \(text) NOT NULL REFERENCES orders(id),
                push_token \(text) NOT NULL,
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL,
                PRIMARY KEY (device_identifier, order_type_identifier, order_id)
            );
            CREATE INDEX device_registrations_by_order ON device_registrations(order_id);
            """
    }

    /// 004: subscriptions, their charge attempts, the merchant-token events applied, and whether a payment was made
    /// with a merchant token.
    @Sendable static func subscriptionsSchema(_ d: SQLDialect) -> String {
        let (text, bigint, integer) = (d.textType, d.bigintType, d.integerType)
        let merchantToken =
            d == .postgres
            ? "boolean NOT NULL DEFAULT false" : "INTEGER NOT NULL DEFAULT 0 CHECK (merchant_token IN (0, 1))"
        return """
            CREATE TABLE subscriptions (
                id \(text) PRIMARY KEY,
                secret \(text) NOT NULL,
                checkout_id \(text) NOT NULL UNIQUE REFERENCES checkouts(id),
                order_id \(text) REFERENCES orders(id),
                sku \(text) NOT NULL,
                product_name \(text) NOT NULL,
                plan_json \(text) NOT NULL,
                amount_minor \(bigint) NOT NULL CHECK (amount_minor > 0),
                currency \(text) NOT NULL CHECK (length(currency) = 3),
                merchant_token_identifier \(text),
                payment_method_reference \(text) NOT NULL,
                network \(text),
                card_suffix \(text),
                card_expiration \(text),
                card_art_url \(text),
                status \(text) NOT NULL CHECK (status IN ('active', 'pastDue', 'cancelled', 'unlinked')),
                status_reason \(text),
                cycle \(integer) NOT NULL CHECK (cycle >= 1),
                attempt \(integer) NOT NULL CHECK (attempt >= 0),
                anchor \(bigint) NOT NULL,
                next_charge_at \(bigint),
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL,
                version \(integer) NOT NULL
            );
            CREATE INDEX subscriptions_due ON subscriptions(next_charge_at) WHERE status IN ('active', 'pastDue');
            CREATE INDEX subscriptions_by_token ON subscriptions(merchant_token_identifier);
            \(d == .postgres ? "CREATE INDEX subscriptions_by_creation ON subscriptions(created_at, id);" : "")
            CREATE TABLE subscription_charges (
                idempotency_key \(text) PRIMARY KEY,
                subscription_id \(text) NOT NULL REFERENCES subscriptions(id),
                cycle \(integer) NOT NULL,
                attempt \(integer) NOT NULL,
                amount_minor \(bigint) NOT NULL CHECK (amount_minor > 0),
                currency \(text) NOT NULL,
                status \(text) NOT NULL CHECK (status IN ('approved', 'declined')),
                processor_reference \(text),
                decline_code \(text),
                due_at \(bigint) NOT NULL,
                charged_at \(bigint) NOT NULL,
                UNIQUE (subscription_id, cycle, attempt)
            );
            CREATE UNIQUE INDEX subscription_one_approval_per_cycle ON subscription_charges(subscription_id, cycle)
                WHERE status = 'approved';
            CREATE TABLE merchant_token_events (
                event_id \(text) PRIMARY KEY,
                event_type \(text) NOT NULL,
                merchant_token_identifier \(text) NOT NULL,
                applied_at \(bigint) NOT NULL
            );
            ALTER TABLE payments ADD COLUMN merchant_token \(merchantToken);
            """
    }

    /// 005: the provider webhook events applied (one row per provider and event id: a second delivery changes
    /// nothing) and the disputes (chargebacks) opened against orders, one per provider reference.
    @Sendable static func providerEventsSchema(_ d: SQLDialect) -> String {
        let (text, bigint) = (d.textType, d.bigintType)
        return """
            CREATE TABLE provider_events (
                provider \(text) NOT NULL,
                event_id \(text) NOT NULL,
                kind \(text) NOT NULL,
                order_id \(text) REFERENCES orders(id),
                outcome \(text) NOT NULL,
                received_at \(bigint) NOT NULL,
                PRIMARY KEY (provider, event_id)
            );
            CREATE TABLE disputes (
                id \(text) PRIMARY KEY,
                order_id \(text) NOT NULL REFERENCES orders(id),
                provider \(text) NOT NULL,
                reference \(text) NOT NULL,
                amount_minor \(bigint) CHECK (amount_minor IS NULL OR amount_minor >= 0),
                currency \(text) CHECK (currency IS NULL OR length(currency) = 3),
                reason \(text),
                opened_at \(bigint) NOT NULL,
                UNIQUE (provider, reference)
            );
            CREATE INDEX disputes_by_order ON disputes(order_id);
            CREATE INDEX refunds_by_processor_reference ON refunds(processor_reference);
            CREATE INDEX payments_by_processor_reference ON payments(processor_reference);
            """
    }

    /// 006: Apple's whole `CardMetadata` on a subscription (`card_suffix` holds its `fpanSuffix`), the cycles the
    /// catch-up rule passed over, and the automatic refund of an approved charge whose subscription was cancelled
    /// while it was in flight (`refund_owed` until the processor gave it back).
    @Sendable static func cardMetadataSchema(_ d: SQLDialect) -> String {
        let (text, bigint, integer) = (d.textType, d.bigintType, d.integerType)
        return """
            ALTER TABLE subscriptions ADD COLUMN card_country \(text);
            ALTER TABLE subscriptions ADD COLUMN card_short_description \(text);
            ALTER TABLE subscriptions ADD COLUMN card_long_description \(text);
            ALTER TABLE subscriptions ADD COLUMN skipped_cycles \(integer) NOT NULL DEFAULT 0;
            ALTER TABLE subscription_charges ADD COLUMN refund_reference \(text);
            ALTER TABLE subscription_charges ADD COLUMN refunded_at \(bigint);
            ALTER TABLE subscription_charges ADD COLUMN refund_owed \(integer) NOT NULL DEFAULT 0
                CHECK (refund_owed IN (0, 1));
            CREATE INDEX subscription_charges_refund_owed ON subscription_charges(refund_owed) WHERE refund_owed = 1;
            """
    }

    /// 007: a payment the provider decides later (`processing`, order and payment), a refund the provider failed
    /// (`failed`, with its code), and the discrepancies between what we recorded and what the provider decided
    /// (``PaymentStateMachine``), kept until a person resolves them.
    ///
    /// A CHECK constraint cannot be altered in SQLite, and rebuilding `orders` would trip the foreign keys of every
    /// table that refers to it, so the three status lists are widened in place in the stored schema, as SQLite's
    /// ALTER TABLE documentation (section 7) allows for loosening a CHECK constraint: every stored row satisfies the
    /// wider list, and no row changes meaning.
    @Sendable static func observationsSchema(_ d: SQLDialect) -> String {
        let (text, bigint, integer) = (d.textType, d.bigintType, d.integerType)
        let widened =
            d == .postgres
            ? """
            ALTER TABLE orders DROP CONSTRAINT orders_status_check;
            ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN (
                'pending', 'paid', 'declined', 'unknown', 'refunded', 'partiallyRefunded', 'voided', 'processing'));
            ALTER TABLE payments DROP CONSTRAINT payments_status_check;
            ALTER TABLE payments ADD CONSTRAINT payments_status_check CHECK (status IN (
                'pending', 'approved', 'declined', 'unknown', 'voided', 'processing'));
            ALTER TABLE refunds DROP CONSTRAINT refunds_status_check;
            ALTER TABLE refunds ADD CONSTRAINT refunds_status_check CHECK (status IN ('pending', 'succeeded', 'failed'));
            """
            : """
            PRAGMA writable_schema = ON;
            UPDATE sqlite_schema SET sql = replace(sql, '''partiallyRefunded'', ''voided''))',
                '''partiallyRefunded'', ''voided'', ''processing''))') WHERE type = 'table' AND name = 'orders';
            UPDATE sqlite_schema SET sql = replace(sql, '''unknown'', ''voided''))',
                '''unknown'', ''voided'', ''processing''))') WHERE type = 'table' AND name = 'payments';
            UPDATE sqlite_schema SET sql = replace(sql, '(''pending'', ''succeeded''))',
                '(''pending'', ''succeeded'', ''failed''))') WHERE type = 'table' AND name = 'refunds';
            PRAGMA writable_schema = RESET;
            """
        return """
            \(widened)
            ALTER TABLE refunds ADD COLUMN failure_code \(text);
            CREATE TABLE payment_discrepancies (
                id \(text) PRIMARY KEY,
                order_id \(text) NOT NULL REFERENCES orders(id),
                checkout_id \(text) NOT NULL,
                recorded \(text) NOT NULL,
                provider \(text) NOT NULL,
                source \(text) NOT NULL,
                corrected \(integer) NOT NULL CHECK (corrected IN (0, 1)),
                detail_json \(text) NOT NULL DEFAULT '{}',
                detected_at \(bigint) NOT NULL,
                resolved_at \(bigint),
                resolution \(text)
            );
            CREATE INDEX payment_discrepancies_by_order ON payment_discrepancies(order_id);
            \(d == .postgres ? "" : "CREATE INDEX orders_by_creation ON orders(created_at, id);")
            """
    }

    /// 008: a subscription's charge attempt recorded before it is sent (its key, when it was first sent, the
    /// provider's reference once known) until its outcome is recorded; the provider webhook events and disputes
    /// about a subscription charge rather than an order (`provider_events.subscription_id`,
    /// `disputes.subscription_charge_key`: such a dispute is recorded against the subscription's order at checkout).
    /// Only new nullable columns and indexes: no CHECK changes.
    @Sendable static func chargeAttemptsSchema(_ d: SQLDialect) -> String {
        let (text, bigint) = (d.textType, d.bigintType)
        return """
            ALTER TABLE subscriptions ADD COLUMN unresolved_charge_key \(text);
            ALTER TABLE subscriptions ADD COLUMN unresolved_since \(bigint);
            ALTER TABLE subscriptions ADD COLUMN unresolved_reference \(text);
            CREATE UNIQUE INDEX subscriptions_unresolved_charge ON subscriptions(unresolved_charge_key)
                WHERE unresolved_charge_key IS NOT NULL;
            CREATE INDEX subscriptions_unresolved_reference ON subscriptions(unresolved_reference)
                WHERE unresolved_reference IS NOT NULL;
            CREATE INDEX subscription_charges_by_processor_reference ON subscription_charges(processor_reference);
            ALTER TABLE provider_events ADD COLUMN subscription_id \(text);
            ALTER TABLE disputes ADD COLUMN subscription_charge_key \(text);
            """
    }

    /// 009: the processor's customer a subscription's kept method is attached to (Stripe reuses a PaymentMethod only
    /// through its Customer); `NULL` for the other processors and for subscriptions started before.
    @Sendable static func keptMethodCustomersSchema(_ d: SQLDialect) -> String {
        "ALTER TABLE subscriptions ADD COLUMN customer_reference \(d.textType);"
    }

    /// 010: what a subscription charge's refunds gave back (`refunded_minor`: the succeeded ones; a void, the whole
    /// amount) and each refund (ours, or one made at the provider) with its state, matched by the provider's reference
    /// or our key, never by amount. Charges voided before keep their whole amount; those refunded before say only when.
    @Sendable static func subscriptionChargeRefundsSchema(_ d: SQLDialect) -> String {
        let (text, bigint) = (d.textType, d.bigintType)
        return """
            ALTER TABLE subscription_charges ADD COLUMN refunded_minor \(bigint) NOT NULL DEFAULT 0
                CHECK (refunded_minor >= 0 AND refunded_minor <= amount_minor);
            UPDATE subscription_charges SET refunded_minor = amount_minor WHERE refund_reference LIKE 'void:%';
            CREATE TABLE subscription_charge_refunds (
                id \(text) PRIMARY KEY,
                charge_key \(text) NOT NULL REFERENCES subscription_charges(idempotency_key),
                refund_key \(text) UNIQUE,
                processor_reference \(text),
                amount_minor \(bigint) NOT NULL CHECK (amount_minor > 0),
                status \(text) NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
                failure_code \(text),
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL
            );
            CREATE UNIQUE INDEX subscription_charge_refunds_by_reference
                ON subscription_charge_refunds(charge_key, processor_reference) WHERE processor_reference IS NOT NULL;
            """
    }
}

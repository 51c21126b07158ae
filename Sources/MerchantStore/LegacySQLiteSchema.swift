import SQLCore

/// The seven migrations an SQLite order store recorded before SQLite and PostgreSQL shared one list of names
/// (``StoreSchema``), frozen: a file that recorded some of them is carried forward by the migrator, which runs the
/// ones it lacks and then records the four current names these seven equal (their schema is the current one's).
///
/// 001 to 004 built what the current 001 builds; 005 and 006 are the current 003 and 004; 007 is the current 002.
public enum LegacySQLiteSchema {
    /// The history as ``Migrator`` carries it forward.
    public static let history = Migrator.LegacyHistory(dialect: .sqlite, migrations: migrations, equivalentPrefix: 4)

    /// The legacy list, in its order.
    public static let migrations: [SQLMigration] = [
        SQLMigration(
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
        SQLMigration(
            "002-indexes",
            sql: """
                CREATE UNIQUE INDEX orders_one_live_order_per_checkout ON orders(checkout_id)
                    WHERE status IN ('pending', 'paid');
                CREATE INDEX orders_by_checkout ON orders(checkout_id);
                CREATE INDEX events_by_checkout ON events(checkout_id);
                CREATE INDEX events_by_order ON events(order_id);
                """),
        SQLMigration(
            "003-order-payment-method-fee",
            sql: """
                ALTER TABLE orders ADD COLUMN fee_minor INTEGER NOT NULL DEFAULT 0 CHECK (fee_minor >= 0);
                """),
        SQLMigration("004-order-state-machine-refunds-secrets", sql: orderStateMachine),
        SQLMigration(
            "005-wallet-orders-fulfillments-registrations", sql: StoreSchema.walletOrdersSchema(.sqlite)),
        SQLMigration("006-subscriptions-merchant-tokens", sql: StoreSchema.subscriptionsSchema(.sqlite)),
        SQLMigration("007-prune-expired-checkouts", sql: StoreSchema.pruningSchema(.sqlite)),
    ]

    /// Migration 004: the order state machine (`pending → paid | declined | unknown`, `unknown → paid | declined`,
    /// `paid → refunded | partiallyRefunded | voided`), refunds, and each order's view secret. SQLite cannot change
    /// a CHECK constraint in place, so `orders` and `payments` are rebuilt (the new `payments` refers to the new
    /// `orders`, which the rename carries over, so the old tables drop without a dangling reference). A
    /// `failed` order whose payment was declined becomes `declined`; one that failed otherwise (timeout, processor
    /// error) becomes `unknown`, so the reconciler asks the processor what really happened.
    static let orderStateMachine = """
        CREATE TABLE orders_004 (
            id TEXT PRIMARY KEY,
            checkout_id TEXT NOT NULL REFERENCES checkouts(id),
            status TEXT NOT NULL CHECK (status IN (
                'pending', 'paid', 'declined', 'unknown', 'refunded', 'partiallyRefunded', 'voided')),
            currency TEXT NOT NULL CHECK (length(currency) = 3),
            subtotal_minor INTEGER NOT NULL,
            discount_minor INTEGER NOT NULL CHECK (discount_minor >= 0),
            shipping_minor INTEGER NOT NULL CHECK (shipping_minor >= 0),
            tax_minor INTEGER NOT NULL CHECK (tax_minor >= 0),
            fee_minor INTEGER NOT NULL DEFAULT 0 CHECK (fee_minor >= 0),
            total_minor INTEGER NOT NULL CHECK (total_minor >= 0),
            refunded_minor INTEGER NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0 AND refunded_minor <= total_minor),
            items_json TEXT NOT NULL,
            shipping_method_json TEXT,
            coupon_code TEXT,
            shipping_contact_json TEXT,
            billing_contact_json TEXT,
            payment_network TEXT,
            pan_last_four TEXT CHECK (
                pan_last_four IS NULL OR (length(pan_last_four) = 4 AND pan_last_four NOT GLOB '*[^0-9]*')),
            view_secret TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        INSERT INTO orders_004 (id, checkout_id, status, currency, subtotal_minor, discount_minor, shipping_minor,
            tax_minor, fee_minor, total_minor, items_json, shipping_method_json, coupon_code, shipping_contact_json,
            billing_contact_json, payment_network, pan_last_four, view_secret, created_at, updated_at)
        SELECT o.id, o.checkout_id,
            CASE WHEN o.status = 'failed' AND p.status = 'declined' THEN 'declined'
                 WHEN o.status = 'failed' THEN 'unknown'
                 ELSE o.status END,
            o.currency, o.subtotal_minor, o.discount_minor, o.shipping_minor, o.tax_minor, o.fee_minor, o.total_minor,
            o.items_json, o.shipping_method_json, o.coupon_code, o.shipping_contact_json, o.billing_contact_json,
            o.payment_network, o.pan_last_four, lower(hex(randomblob(16))), o.created_at, o.updated_at
        FROM orders o JOIN payments p ON p.order_id = o.id;
        CREATE TABLE payments_004 (
            id TEXT PRIMARY KEY,
            order_id TEXT NOT NULL UNIQUE REFERENCES orders_004(id),
            transaction_id TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'unknown', 'voided')),
            amount_minor INTEGER NOT NULL CHECK (amount_minor >= 0),
            currency TEXT NOT NULL CHECK (length(currency) = 3),
            processor_reference TEXT,
            failure_code TEXT,
            failure_message TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        INSERT INTO payments_004 SELECT id, order_id, transaction_id,
            CASE status WHEN 'error' THEN 'unknown' ELSE status END,
            amount_minor, currency, processor_reference, failure_code, failure_message, created_at, updated_at
        FROM payments;
        DROP TABLE payments;
        DROP TABLE orders;
        ALTER TABLE orders_004 RENAME TO orders;
        ALTER TABLE payments_004 RENAME TO payments;
        CREATE UNIQUE INDEX orders_one_live_order_per_checkout ON orders(checkout_id) WHERE status != 'declined';
        CREATE INDEX orders_by_checkout ON orders(checkout_id);
        CREATE INDEX orders_by_status ON orders(status, updated_at);
        CREATE TABLE refunds (
            id TEXT PRIMARY KEY,
            order_id TEXT NOT NULL REFERENCES orders(id),
            idempotency_key TEXT NOT NULL UNIQUE,
            amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
            status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded')),
            processor_reference TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX refunds_by_order ON refunds(order_id);
        """
}

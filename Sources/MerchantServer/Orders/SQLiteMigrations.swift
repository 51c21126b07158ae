import SQLite

/// Migration 004: the order state machine (`pending → paid | declined | unknown`, `unknown → paid | declined`,
/// `paid → refunded | partiallyRefunded | voided`), refunds, and each order's view secret. SQLite cannot change
/// a CHECK constraint in place, so `orders` and `payments` are rebuilt (the new `payments` refers to the new
/// `orders`, which the rename carries over, so the old tables drop without a dangling reference). A
/// `failed` order whose payment was declined becomes `declined`; one that failed otherwise (timeout, processor
/// error) becomes `unknown`, so the reconciler asks the processor what really happened.
let orderStateMachineMigration = """
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

import ApplePay
import Foundation
import Foundations
import MerchantServer
import MerchantStore
import MerchantTestSupport
import Postgres
import SQLite
import Synchronization
import TestSupport
import Testing

@testable import MerchantCore

/// `applepay store migrate --from sqlite:PATH --to postgresql://...`: a SQLite store built through the store's API
/// is copied by the real binary, then both stores are served on loopback and must answer the same.
@Suite(
    "applepay store migrate: SQLite into PostgreSQL", .serialized,
    .enabled(if: TestPostgres.uri != nil, "APPLEPAY_TEST_POSTGRES is not set"))
struct StoreMigrationTests {
    /// A clock one second further at each reading: every order and event has a time of its own.
    final class SteppingClock: Sendable {
        private let seconds = Mutex<Double>(0)
        let start: Date
        init(start: Date) { self.start = start }
        func now() -> Date {
            start.addingTimeInterval(
                seconds.withLock {
                    $0 += 1
                    return $0
                })
        }
    }

    /// Writes `count` orders (paid, declined, unknown, refunded in part and in full, voided, pending), a checkout
    /// without an order, subscriptions with charges, a token event, fulfilments and device registrations.
    static func fill(_ store: SQLiteOrderStore, count: Int, from first: Int, clock: SteppingClock) async throws {
        let configuration = StoreConfiguration.demo
        for index in first..<(first + count) {
            let checkout = try Checkout.create(
                items: [CheckoutItem(sku: index % 2 == 0 ? "COFFEE-250" : "MUG-01", quantity: 1 + index % 3)],
                configuration: configuration, now: clock.now()
            ).selectingShippingContact(
                ShippingAddress(
                    locality: "San Francisco", administrativeArea: "CA", postalCode: "94107", countryCode: "US"),
                configuration: configuration)
            try await store.insertCheckout(checkout)
            if index % 50 == 49 { continue }  // a checkout never paid
            let breakdown = try CheckoutPricing(configuration: configuration).price(checkout)
            let order = NewOrder(
                checkout: checkout, breakdown: breakdown, transactionID: String(format: "%064x", index),
                token: testToken(), shippingContact: Contact(emailAddress: "buyer\(index)@example.com"),
                billingContact: nil, configuration: configuration)
            guard case .started(let pending) = try await store.beginPayment(order) else {
                throw OrderStoreError(.conflict, "payment \(index) not started")
            }
            let outcome: ChargeAttempt =
                switch index % 7 {
                case 1: .decided(.declined(.insufficientFunds))
                case 2: .unknown(ProcessorError(.timeout, "no answer"))
                default: .decided(.approved(reference: "ch_\(index)"))
                }
            if index % 7 == 6 { continue }  // left pending
            let paid = try await store.completePayment(orderID: pending.id, outcome: outcome)
            if paid.status == .declined, index % 3 == 0 {
                // The provider captured it after all: corrected, with a payment_discrepancies row.
                _ = try await store.apply(
                    ProviderEvent(
                        provider: "checkout", id: "evt_late_\(index)", kind: .paymentSucceeded,
                        merchantReference: paid.payment.transactionID, paymentReference: "pay_\(index)"))
            }
            guard paid.status == .paid else { continue }
            switch index % 11 {
            case 3:
                guard
                    case .started(let refund, _) = try await store.beginRefund(
                        orderID: paid.id, amount: 100, idempotencyKey: "rf-\(index)")
                else { throw OrderStoreError(.conflict, "refund \(index)") }
                _ = try await store.completeRefund(id: refund.id, processorReference: "re_\(index)")
            case 4:
                guard
                    case .started(let refund, _) = try await store.beginRefund(
                        orderID: paid.id, amount: paid.totals.total, idempotencyKey: "rf-\(index)")
                else { throw OrderStoreError(.conflict, "refund \(index)") }
                _ = try await store.completeRefund(id: refund.id, processorReference: "re_\(index)")
            case 9:
                // A refund the provider failed (its failure_code kept).
                guard
                    case .started = try await store.beginRefund(
                        orderID: paid.id, amount: 100, idempotencyKey: "rf-\(index)")
                else { throw OrderStoreError(.conflict, "refund \(index)") }
                _ = try await store.apply(
                    ProviderEvent(
                        provider: "stripe", id: "evt_rf_\(index)", kind: .refundFailed,
                        merchantReference: paid.payment.transactionID, reference: "re_\(index)",
                        refundKey: "rf-\(index)", reason: "lost_or_stolen_card"))
            case 5: _ = try await store.recordVoid(orderID: paid.id)
            case 6:
                _ = try await store.recordFulfillment(
                    orderID: paid.id,
                    FulfillmentStep(status: .shipped, carrier: "UPS", trackingNumber: "1Z\(index)", at: clock.now()))
                _ = try await store.registerDevice(
                    DeviceRegistration(
                        deviceIdentifier: "device-\(index)", pushToken: "push-\(index)",
                        orderTypeIdentifier: "order.com.example.tests", orderID: paid.id))
            case 7:
                let subscription = Subscription(
                    id: "sub_" + String(format: "%024x", index), secret: "secret-\(index)",
                    checkoutID: checkout.id, orderID: paid.id, sku: "BEANS-MONTHLY", productName: "Coffee of the Month",
                    plan: .recurring(RecurringPlan(intervalUnit: .month)), amount: 999, currencyCode: "USD",
                    merchantTokenIdentifier: "DNITHE\(index)", paymentMethodReference: "pm_\(index)", network: "Visa",
                    cardSuffix: "0019", cardExpiration: "12/30", anchor: clock.now(),
                    nextChargeAt: clock.start.addingTimeInterval(86_400 * 400), createdAt: clock.now(),
                    updatedAt: clock.now())
                let stored = try await store.insertSubscription(subscription)
                var next = stored
                next.cycle = 2
                _ = try await store.updateSubscription(
                    next, expectedVersion: stored.version,
                    charge: SubscriptionCharge(
                        subscriptionID: stored.id, cycle: 1, attempt: 0, idempotencyKey: "\(stored.id):c1:a0",
                        amount: 999, currencyCode: "USD", status: "approved", processorReference: "ch_s\(index)",
                        declineCode: nil, dueAt: clock.now(), chargedAt: clock.now()))
                _ = try await store.applyTokenEvent(
                    eventID: "event-\(index)", eventType: "UPDATED_METADATA", merchantTokenIdentifier: "DNITHE\(index)",
                    change: { _ in nil })
            case 8:
                // A provider's webhook opened a dispute (a provider_events row and a disputes row).
                _ = try await store.apply(
                    ProviderEvent(
                        provider: "stripe", id: "evt_\(index)", kind: .disputeOpened, paymentReference: "ch_\(index)",
                        reference: "dp_\(index)", amount: 100, currencyCode: "USD", reason: "fraudulent"))
            default: break
            }
        }
    }

    struct Migrated {
        var status: Int32
        var counts: [String: (copied: Int, present: Int)]
        var output: String
    }

    static func migrate(_ sqlite: String, _ postgres: String) async throws -> Migrated {
        let result = try await CommandLineTool.run(
            ["store", "migrate", "--from", "sqlite:" + sqlite, "--to", postgres, "--json"], timeout: 300)
        var counts: [String: (copied: Int, present: Int)] = [:]
        let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        for table in object?["tables"] as? [[String: Any]] ?? [] {
            counts[table["table"] as? String ?? ""] = (
                table["copied"] as? Int ?? -1, table["alreadyPresent"] as? Int ?? -1
            )
        }
        return Migrated(
            status: result.status, counts: counts, output: result.standardOutput + result.standardError)
    }

    static func rowCounts(sqlite path: String) throws -> [String: Int] {
        let connection = try Connection(path: path, readOnly: true)
        var counts: [String: Int] = [:]
        for table in StoreMigrationTests.tables {
            counts[table] = Int(try connection.query("SELECT count(*) AS n FROM \(table)").first?.int64("n") ?? -1)
        }
        return counts
    }

    static func rowCounts(postgres uri: String) async throws -> [String: Int] {
        let pool = ConnectionPool(uri: uri, size: 1)
        defer { pool.close() }
        return try await pool.withConnection { connection in
            var counts: [String: Int] = [:]
            for table in StoreMigrationTests.tables {
                counts[table] = Int(try connection.query("SELECT count(*) AS n FROM \(table)").first?.int64("n") ?? -1)
            }
            return counts
        }
    }

    static let tables = [
        "checkouts", "orders", "payments", "refunds", "events", "fulfillments", "device_registrations",
        "subscriptions", "subscription_charges", "subscription_charge_refunds", "merchant_token_events",
        "provider_events", "disputes", "payment_discrepancies",
    ]

    /// JSON with sorted keys: two answers compare equal when they mean the same.
    static func canonical(_ data: Data) throws -> String {
        let object = try JSONSerialization.jsonObject(with: data)
        return String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(
        "300 orders with refunds, voids, subscriptions and Wallet records: copied, then both stores answer the same; a second run copies nothing"
    )
    func migrateAndServeBoth() async throws {
        let folder = try TemporaryDirectory(prefix: "store-migrate")
        defer { folder.remove() }
        let sqlitePath = folder.path("orders.sqlite")
        let postgres = try await TestPostgres.freshSchema()
        let clock = SteppingClock(start: fixedNow)
        do {
            let store = try SQLiteOrderStore(path: sqlitePath, clock: { clock.now() })
            try await Self.fill(store, count: 150, from: 0, clock: clock)
        }
        // A first run on half of the orders, as if the migration had been run while the shop still took orders.
        let half = try await Self.migrate(sqlitePath, postgres)
        #expect(half.status == 0, "\(half.output)")
        let halfCounts = try Self.rowCounts(sqlite: sqlitePath)
        do {
            let store = try SQLiteOrderStore(path: sqlitePath, clock: { clock.now() })
            try await Self.fill(store, count: 150, from: 150, clock: clock)
        }
        let source = try Self.rowCounts(sqlite: sqlitePath)
        #expect(source["orders"] ?? 0 >= 250)
        #expect(source["subscriptions"] ?? 0 > 0 && source["fulfillments"] ?? 0 > 0 && source["refunds"] ?? 0 > 0)
        #expect(source["payment_discrepancies"] ?? 0 > 0)
        // The rerun copies what is missing, and only that.
        let second = try await Self.migrate(sqlitePath, postgres)
        #expect(second.status == 0, "\(second.output)")
        for table in Self.tables {
            #expect(second.counts[table]?.present == halfCounts[table], "\(table): \(second.output)")
            #expect(
                second.counts[table]?.copied == (source[table] ?? 0) - (halfCounts[table] ?? 0),
                "\(table): \(second.output)")
        }
        #expect(try await Self.rowCounts(postgres: postgres) == source)
        // Idempotent: a third run changes nothing.
        let third = try await Self.migrate(sqlitePath, postgres)
        #expect(third.status == 0, "\(third.output)")
        for table in Self.tables {
            #expect(third.counts[table]?.copied == 0, "\(table)")
            #expect(third.counts[table]?.present == source[table], "\(table)")
        }
        #expect(try await Self.rowCounts(postgres: postgres) == source)

        // Both stores served on loopback: the admin API answers the same, list and per status.
        let sqliteServer = try await ServerHarness.start(
            live: true, configure: { $0.storeLocation = .sqlite(path: sqlitePath) })
        let postgresServer = try await ServerHarness.start(
            live: true, configure: { $0.storeLocation = .postgres(uri: postgres) })
        var pages = ["/admin/v1/orders?limit=10000", "/admin/v1/subscriptions"]
        pages += OrderStatus.allCases.map { "/admin/v1/orders?limit=10000&status=\($0.rawValue)" }
        for page in pages {
            let left = try await sqliteServer.admin("GET", page)
            let right = try await postgresServer.admin("GET", page)
            #expect(left.status == 200 && right.status == 200, "\(page): \(left.text) \(right.text)")
            #expect(try Self.canonical(left.body) == Self.canonical(right.body), "\(page)")
        }
        let all = try await sqliteServer.admin("GET", "/admin/v1/orders?limit=10000")
        let orders = try (all.json["orders"] as? [[String: Any]]).orThrow("no orders")
        #expect(orders.count == source["orders"])
        // Each order and its customer view (the view secret came along), its events and Wallet records.
        let sqliteStore = sqliteServer.application.store
        let postgresStore = postgresServer.application.store
        for order in orders {
            let id = try (order["id"] as? String).orThrow("no id")
            let left = try await sqliteServer.admin("GET", "/admin/v1/orders/\(id)")
            let right = try await postgresServer.admin("GET", "/admin/v1/orders/\(id)")
            #expect(try Self.canonical(left.body) == Self.canonical(right.body), "\(id)")
            let stored = try #require(try await sqliteStore.order(id: id))
            let view = try await postgresServer.get("/v1/orders/\(id)?secret=\(stored.viewSecret)")
            #expect(view.status == 200, "\(view.text)")
            #expect(
                try await sqliteStore.events(checkoutID: stored.checkoutID)
                    == postgresStore.events(checkoutID: stored.checkoutID))
            #expect(try await sqliteStore.fulfillments(orderID: id) == postgresStore.fulfillments(orderID: id))
            #expect(
                try await sqliteStore.registrations(
                    deviceIdentifier: nil, orderTypeIdentifier: "order.com.example.tests", orderID: id)
                    == postgresStore.registrations(
                        deviceIdentifier: nil, orderTypeIdentifier: "order.com.example.tests", orderID: id))
        }
        let subscriptions = try #require(sqliteStore as? any SubscriptionStore)
        let migrated = try #require(postgresStore as? any SubscriptionStore)
        for subscription in try await subscriptions.subscriptions(SubscriptionFilter(limit: 1000)) {
            #expect(try await migrated.subscription(id: subscription.id) == subscription)
            #expect(
                try await subscriptions.subscriptionCharges(subscriptionID: subscription.id)
                    == migrated.subscriptionCharges(subscriptionID: subscription.id))
        }
        // Events written after the migration continue the copied numbers.
        let next = try await postgresServer.createCheckout()
        let events = try await postgresStore.events(checkoutID: next.id)
        let copiedEvents = try await Self.rowCounts(postgres: postgres)["events"] ?? 0
        #expect(events.first.map { $0.sequence > Int64(source["events"] ?? 0) } == true, "\(events) \(copiedEvents)")
        await sqliteServer.stop()
        await postgresServer.stop()
    }

    @Test("a target holding another store's events is refused: exit 1, conflict, nothing written; usage errors exit 64")
    func refusesForeignData() async throws {
        let folder = try TemporaryDirectory(prefix: "store-migrate-foreign")
        defer { folder.remove() }
        let sqlitePath = folder.path("orders.sqlite")
        let clock = SteppingClock(start: fixedNow)
        do {
            let store = try SQLiteOrderStore(path: sqlitePath, clock: { clock.now() })
            try await Self.fill(store, count: 5, from: 0, clock: clock)
        }
        let postgres = try await TestPostgres.freshSchema()
        do {
            // Another shop's checkout, with event number 1.
            let other = try await PostgresOrderStore(uri: postgres, poolSize: 1)
            try await other.insertCheckout(
                try Checkout.create(
                    items: [CheckoutItem(sku: "MUG-01", quantity: 1)], configuration: .demo, now: fixedNow))
        }
        let before = try await Self.rowCounts(postgres: postgres)
        let refused = try await Self.migrate(sqlitePath, postgres)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("[conflict]"), "\(refused.output)")
        #expect(try await Self.rowCounts(postgres: postgres) == before)

        let missing = try await Self.migrate(folder.path("nope.sqlite"), postgres)
        #expect(missing.status == 1 && missing.output.contains("[invalidLocation]"), "\(missing.output)")
        let usage = try await CommandLineTool.run(["store", "migrate", "--from", sqlitePath, "--to", postgres])
        #expect(usage.status == 64, "\(usage.standardError)")
        let noTarget = try await CommandLineTool.run(["store", "migrate", "--from", "sqlite:" + sqlitePath])
        #expect(noTarget.status == 64)
        let help = try await CommandLineTool.run(["store", "migrate", "--help"])
        #expect(help.status == 0 && help.standardOutput.contains("--from sqlite:PATH"))
    }
}

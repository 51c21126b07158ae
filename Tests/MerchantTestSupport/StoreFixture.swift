// Order stores in fresh files or schemas, on SQLite and PostgreSQL, and what the store tests share.

import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantStore
import Postgres
import SQLCore
import SQLite
import TestSupport
import Testing

/// The stores the shared tests run against: SQLite always, PostgreSQL when `APPLEPAY_TEST_POSTGRES` names a
/// database (`make test` starts one; PostgresAvailabilityTests fails when it does not).
public enum StoreBackend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    public static var available: [StoreBackend] { TestPostgres.uri == nil ? [.sqlite] : [.sqlite, .postgres] }
    public var testDescription: String { rawValue }
}

/// The PostgreSQL database of `make test`, and a fresh schema in it per fixture.
public enum TestPostgres {
    public static let uri = ProcessInfo.processInfo.environment["APPLEPAY_TEST_POSTGRES"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Creates an empty schema and returns a URI whose connections use it (`search_path`).
    public static func freshSchema() async throws -> String {
        let base = try #require(uri, "APPLEPAY_TEST_POSTGRES is not set")
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let admin = ConnectionPool(uri: base, size: 1)
        defer { admin.close() }
        try await admin.withConnection { try $0.execute("CREATE SCHEMA \(schema)") }
        return base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }
}

/// A store in a fresh temporary file (SQLite) or schema (PostgreSQL), and a way to look at its tables directly.
public struct StoreFixture: Sendable {
    public let backend: StoreBackend
    public let folder: TemporaryDirectory
    /// The SQLite file, or the PostgreSQL URI.
    public let path: String
    public let store: any OrderStore
    public let configuration = StoreConfiguration.demo

    public init(_ backend: StoreBackend = .sqlite) async throws {
        self.backend = backend
        folder = try TemporaryDirectory(prefix: "order-store")
        switch backend {
        case .sqlite:
            path = folder.path("orders.sqlite")
            store = try SQLiteOrderStore(path: path, clock: { fixedNow })
        case .postgres:
            path = try await TestPostgres.freshSchema()
            store = try await PostgresOrderStore(uri: path, poolSize: 2, clock: { fixedNow })
        }
    }

    /// Runs `body` on a new fixture of `backend`, then removes the fixture's folder, also when `body` throws.
    public static func with<T>(_ backend: StoreBackend = .sqlite, _ body: (StoreFixture) async throws -> T) async throws
        -> T
    {
        let fixture = try await StoreFixture(backend)
        return try await withCleanup {
            try await body(fixture)
        } cleanup: {
            fixture.folder.remove()
        }
    }

    /// Runs `body` on a new fixture of `backend` and its store as `Store` (the store protocol a suite tests, such as
    /// `any SubscriptionStore`), then removes the fixture's folder.
    public static func with<Store, T>(
        _ backend: StoreBackend, storeAs _: Store.Type, _ body: (StoreFixture, Store) async throws -> T
    ) async throws -> T {
        try await with(backend) { fixture in
            try await body(fixture, try #require(fixture.store as? Store, "the \(backend) store is no \(Store.self)"))
        }
    }

    /// A second store on the same database, as another server process would open it.
    public func another() async throws -> any OrderStore {
        switch backend {
        case .sqlite: try SQLiteOrderStore(path: path)
        case .postgres: try await PostgresOrderStore(uri: path, poolSize: 2)
        }
    }

    /// Runs SQL on a connection of its own (the SQLite text, or the PostgreSQL text).
    public func execute(sqlite: String, postgres: String) async throws {
        switch backend {
        case .sqlite: try Connection(path: path).execute(sqlite)
        case .postgres:
            let pool = ConnectionPool(uri: path, size: 1)
            defer { pool.close() }
            try await pool.withConnection { try $0.execute(postgres) }
        }
    }

    /// The first column of every row of `sql`, as text (`nil` for NULL).
    public func column(_ sql: String) async throws -> [String?] {
        switch backend {
        case .sqlite:
            return try Connection(path: path).query(sql).map { row in
                switch row.values.first {
                case .text(let text): text
                case .integer(let value): String(value)
                default: nil
                }
            }
        case .postgres:
            let pool = ConnectionPool(uri: path, size: 1)
            defer { pool.close() }
            return try await pool.withConnection { try $0.query(sql).map { $0.values.first ?? nil } }
        }
    }

    /// Row counts of every table, read through a separate connection.
    public func counts() async throws -> [String: Int64] {
        var result: [String: Int64] = [:]
        for table in ["checkouts", "orders", "payments", "events", "schema_migrations"] {
            let values = try await column("SELECT count(*) AS n FROM \(table)")
            result[table] = values.first.flatMap { $0 }.flatMap { Int64($0) }
        }
        return result
    }

    /// How many rows the orders and the payments tables hold, in that order.
    public func orderAndPaymentRows() async throws -> [Int64?] {
        let counts = try await counts()
        return [counts["orders"], counts["payments"]]
    }

    /// A stored checkout for two coffees and a mug, shipped to California.
    public func checkout() async throws -> (Checkout, PriceBreakdown) {
        let checkout = try Checkout.create(
            items: [CheckoutItem(sku: "COFFEE-250", quantity: 2), CheckoutItem(sku: "MUG-01", quantity: 1)],
            configuration: configuration, now: fixedNow
        ).selectingShippingContact(
            ShippingAddress(
                locality: "San Francisco", administrativeArea: "CA", postalCode: "94107", countryCode: "US"),
            configuration: configuration)
        try await store.insertCheckout(checkout)
        return (checkout, try CheckoutPricing(configuration: configuration).price(checkout))
    }

    /// A stored checkout (``checkout()``) with a payment begun for it under `transaction`: the pending order, the
    /// checkout and its price.
    public func pendingOrder(transaction: String) async throws -> (Order, Checkout, PriceBreakdown) {
        let (checkout, breakdown) = try await checkout()
        guard
            case .started(let pending) = try await store.beginPayment(
                newOrder(checkout, breakdown, transaction: transaction))
        else { throw HarnessError("expected a new payment for \(transaction)") }
        return (pending, checkout, breakdown)
    }

    public func newOrder(
        _ checkout: Checkout, _ breakdown: PriceBreakdown, transaction: String, pan: String = "4817499999010019"
    )
        -> NewOrder
    {
        Self.newOrder(checkout, breakdown, transaction: transaction, pan: pan, configuration: configuration)
    }

    /// The order for paying `checkout` at `breakdown` under `transaction`, shipped to Ada in San Francisco.
    public static func newOrder(
        _ checkout: Checkout, _ breakdown: PriceBreakdown, transaction: String, pan: String = "4817499999010019",
        configuration: StoreConfiguration
    ) -> NewOrder {
        NewOrder(
            checkout: checkout, breakdown: breakdown, transactionID: transaction, token: testToken(pan: pan),
            shippingContact: Contact(
                emailAddress: "ada@example.com", givenName: "Ada", familyName: "Lovelace",
                postalAddress: PostalAddress(
                    street: ["1 Market St"], city: "San Francisco", postalCode: "94107", state: "CA",
                    isoCountryCode: "US")),
            billingContact: Contact(postalAddress: PostalAddress(postalCode: "94107", isoCountryCode: "US")),
            configuration: configuration)
    }
}

/// An in-memory store (`sqlite::memory:`) holding a checkout of `mugs` mugs: the store, the checkout and its price.
public func inMemoryStore(mugs: Int) async throws -> (any OrderStore, Checkout, PriceBreakdown) {
    let store = try await OrderStoreLocation(parsing: "sqlite::memory:").open(clock: { fixedNow })
    let checkout = try Checkout.create(
        items: [CheckoutItem(sku: "MUG-01", quantity: mugs)], configuration: StoreConfiguration.demo)
    try await store.insertCheckout(checkout)
    return (store, checkout, try CheckoutPricing(configuration: StoreConfiguration.demo).price(checkout))
}

/// A paid order and a subscription row for it, in a fixture's store.
extension StoreFixture {
    public var subscriptions: any SubscriptionStore {
        get throws { try #require(store as? any SubscriptionStore, "\(backend) does not keep subscriptions") }
    }

    /// A checkout paid with a token (an approved payment): the order.
    public func paidOrder(transaction: String) async throws -> Order {
        let (pending, _, _) = try await pendingOrder(transaction: transaction)
        return try await store.completePayment(
            orderID: pending.id, outcome: .decided(.approved(reference: "ref-\(transaction)")))
    }

    public func subscription(for order: Order, id: String, nextChargeAt: Date? = fixedNow) -> Subscription {
        Subscription(
            id: id, secret: "secret-" + id, checkoutID: order.checkoutID, orderID: order.id, sku: "BEANS-MONTHLY",
            productName: "Coffee of the Month", plan: .recurring(RecurringPlan(intervalUnit: .month)), amount: 999,
            currencyCode: "USD", merchantTokenIdentifier: "DNITHE000000001", paymentMethodReference: "pm_" + id,
            network: "Visa", cardSuffix: "0019", cardExpiration: "12/30", anchor: fixedNow, nextChargeAt: nextChargeAt,
            createdAt: fixedNow, updatedAt: fixedNow)
    }

    /// A second subscription store on the same database, as another server process would open it.
    public func anotherSubscriptionStore() async throws -> any SubscriptionStore {
        try #require(try await another() as? any SubscriptionStore, "\(backend) does not keep subscriptions")
    }

    /// The scheduler of one server: a subscription service on `store` charging through `processor`, its clock at
    /// `fixedNow`, logging nothing.
    public func scheduler(on store: any SubscriptionStore, _ processor: any PaymentProcessor) -> SubscriptionService {
        SubscriptionService(store: store, processor: processor, logger: .silent, clock: { fixedNow })
    }

    /// A paid order (`transaction`) and a subscription `id` for it, inserted: the subscription as stored.
    public func storedSubscription(transaction: String, id: String) async throws -> Subscription {
        let order = try await paidOrder(transaction: transaction)
        return try await subscriptions.insertSubscription(subscription(for: order, id: id))
    }

    /// The kinds of the subscription events logged for `subscription`'s checkout, oldest first.
    public func subscriptionEventKinds(_ subscription: Subscription) async throws -> [String?] {
        try await column(
            "SELECT kind FROM events WHERE checkout_id = '\(subscription.checkoutID)' AND kind LIKE 'subscription%'")
    }

    public func charge(_ subscription: Subscription, status: String = "approved") -> SubscriptionCharge {
        SubscriptionCharge(
            subscriptionID: subscription.id, cycle: subscription.cycle, attempt: subscription.attempt,
            idempotencyKey: "\(subscription.id):c\(subscription.cycle):a\(subscription.attempt)",
            amount: subscription.amount, currencyCode: subscription.currencyCode, status: status,
            processorReference: status == "approved" ? "ch_\(subscription.cycle)" : nil,
            declineCode: status == "approved" ? nil : "insufficientFunds", dueAt: fixedNow, chargedAt: fixedNow)
    }
}

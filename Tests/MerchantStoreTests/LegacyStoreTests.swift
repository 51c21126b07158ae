import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantStore
import MerchantTestSupport
import TestSupport
import Testing

/// Stores written by the code of commit b1b75da (`Tests/Fixtures/legacy-stores`, README there): whatever the store
/// code becomes, it must open them, migrate them and read back every row as it was, through the public API only.
@Suite("Legacy stores: fixtures made by an earlier release open and read back without loss")
struct LegacyStoreTests {
    @Test("the SQLite fixture (orders-v1.sqlite) opens, migrates, reads back as expected.json says, and takes writes")
    func sqlite() async throws {
        let expected = try LegacyFixtures.expectations().sqlite
        let folder = try TemporaryDirectory(prefix: "legacy-store")
        defer { folder.remove() }
        let path = folder.path("orders.sqlite")
        try FileManager.default.copyItem(
            at: LegacyFixtures.folder.appendingPathComponent("orders-v1.sqlite"), to: URL(fileURLWithPath: path))
        let store = try await OrderStoreLocation(parsing: "sqlite:" + path).open(clock: { LegacyFixtures.later })
        try await LegacyFixtures.verify(store, expected)
        try await LegacyFixtures.probe(store, expected)
        // Opened a second time (the migrations found done), the rows are still there.
        let again = try await OrderStoreLocation(parsing: "sqlite:" + path).open(clock: { LegacyFixtures.later })
        try await LegacyFixtures.verifyOrders(again, expected)
        try await LegacyFixtures.writeAfterMigration(store, expected)
    }

    @Test(
        "the PostgreSQL fixture (orders-v1.sql, a pg_dump) loads into a new database, opens and reads back the same",
        .enabled(
            if: LegacyFixtures.postgresRequired || LegacyFixtures.postgresURI != nil,
            "APPLEPAY_TEST_POSTGRES is not set"
        ))
    func postgres() async throws {
        let expected = try LegacyFixtures.expectations().postgres
        let database = try await LegacyFixtures.LoadedDatabase.load()
        do {
            let store = try await PostgresOrderStore(uri: database.uri, poolSize: 2, clock: { LegacyFixtures.later })
            try await LegacyFixtures.verify(store, expected)
            try await LegacyFixtures.probe(store, expected)
            let again = try await PostgresOrderStore(uri: database.uri, poolSize: 1, clock: { LegacyFixtures.later })
            try await LegacyFixtures.verifyOrders(again, expected)
            try await LegacyFixtures.writeAfterMigration(store, expected)
        } catch {
            try await database.drop()
            throw error
        }
        try await database.drop()
    }
}

// MARK: What the fixtures hold

/// `expected.json`: what each fixture holds, as the public read API of the code that wrote it answered. The ids the
/// stores generated (orders, payments, refunds, view secrets) differ between the two fixtures; the rest is the same.
struct LegacyExpectations: Codable {
    /// The commit whose code wrote the fixtures.
    var writtenBy: String
    var sqlite: LegacyStoreContents
    var postgres: LegacyStoreContents
}

/// One store's rows. Times are Unix milliseconds (what both stores keep); lists are in the order the API answers.
struct LegacyStoreContents: Codable, Equatable {
    var checkouts: [Checkout]
    /// Newest first, as `orders(status: nil, ...)` lists them.
    var orders: [LegacyOrder]
    /// The refunds still on record (a cancelled refund is forgotten), found again by their idempotency keys.
    var refunds: [LegacyRefund]
    /// `events(checkoutID:)` of each checkout, by checkout id.
    var events: [String: [LegacyEvent]]
    /// Oldest first, as `subscriptions(_:)` lists them.
    var subscriptions: [LegacySubscription]
    /// `subscriptionCharges(subscriptionID:)`, by subscription id.
    var subscriptionCharges: [String: [LegacyCharge]]
    /// The merchant-token events applied (`applyTokenEvent` must say they were seen before).
    var tokenEvents: [LegacyTokenEvent]
    /// `fulfillments(orderID:)`, by order id (orders with at least one).
    var fulfillments: [String: [LegacyFulfillment]]
    /// Every device registration, sorted by order, device and order type.
    var registrations: [LegacyRegistration]
}

func legacyMillis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
func legacyDate(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

/// A row as the fixtures hold it (`expected.json`), made from the value a store read: the value's stored properties
/// by name, dates as Unix milliseconds, Codable parts in their own JSON, decoded as the fixture's type. The one home
/// of the field-by-field copy each row type would otherwise write.
protocol LegacyRow: Decodable {}

extension LegacyRow {
    init(_ value: Any) throws {
        let object = try LegacyRowJSON.properties(of: value)
        self = try LegacyFixtures.decoder().decode(Self.self, from: JSONSerialization.data(withJSONObject: object))
    }
}

enum LegacyRowJSON {
    /// The value's stored properties (nil ones left out) as a JSON object.
    static func properties(of value: Any) throws -> [String: Any] {
        var object: [String: Any] = [:]
        for child in Mirror(reflecting: value).children {
            guard let label = child.label, let json = try json(child.value) else { continue }
            object[label] = json
        }
        return object
    }

    /// A property's JSON: nil for nil, Unix milliseconds for a date, an Encodable's own JSON, else its properties.
    static func json(_ value: Any) throws -> Any? {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return nil }
            return try json(wrapped)
        }
        if let date = value as? Date { return legacyMillis(date) }
        if let encodable = value as? any Encodable {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .millisecondsSince1970
            return try JSONSerialization.jsonObject(with: encoder.encode(encodable), options: .fragmentsAllowed)
        }
        return try properties(of: value)
    }
}

struct LegacyPayment: LegacyRow, Codable, Equatable {
    var id: String
    var transactionID: String
    var status: PaymentStatus
    var amount: Int64
    var currencyCode: String
    var processorReference: String?
    var failureCode: String?
    var failureMessage: String?

}

struct LegacyOrder: LegacyRow, Codable, Equatable {
    var id: String
    var checkoutID: String
    var status: OrderStatus
    var currencyCode: String
    var lines: [OrderLine]
    var totals: OrderTotals
    var shippingMethod: OrderShippingMethod?
    var couponCode: String?
    var shippingContact: Contact?
    var billingContact: Contact?
    var paymentNetwork: String?
    var panLastFour: String?
    var payment: LegacyPayment
    var refunded: Int64
    var viewSecret: String
    var createdAt: Int64
    var updatedAt: Int64

}

struct LegacyRefund: LegacyRow, Codable, Equatable {
    var id: String
    var orderID: String
    var idempotencyKey: String
    var amount: Int64
    var succeeded: Bool
    var processorReference: String?

    /// A refund as the fixtures describe it (they were made when a refund was pending or succeeded only).
    init(_ record: RefundRecord) throws {
        id = record.id
        orderID = record.orderID
        idempotencyKey = record.idempotencyKey
        amount = record.amount
        succeeded = record.succeeded
        processorReference = record.processorReference
    }
}

struct LegacyEvent: Codable, Equatable {
    var sequence: Int64
    var at: Int64
    var kind: String
    var checkoutID: String?
    var orderID: String?
    /// The detail object (compared as JSON, not as text: a store may keep it as `jsonb`).
    var detail: [String: String]

    init(_ event: StoreEvent) throws {
        sequence = event.sequence
        at = legacyMillis(event.at)
        kind = event.kind
        checkoutID = event.checkoutID
        orderID = event.orderID
        detail = try JSONDecoder().decode([String: String].self, from: Data(event.detail.utf8))
    }
}

struct LegacySubscription: LegacyRow, Codable, Equatable {
    var id: String
    var secret: String
    var checkoutID: String
    var orderID: String?
    var sku: String
    var productName: String
    var plan: BillingPlan
    var amount: Int64
    var currencyCode: String
    var merchantTokenIdentifier: String?
    var paymentMethodReference: String
    var network: String?
    var cardSuffix: String?
    var cardExpiration: String?
    var cardArtURL: String?
    var status: SubscriptionStatus
    var statusReason: String?
    var cycle: Int
    var attempt: Int
    var anchor: Int64
    var nextChargeAt: Int64?
    var createdAt: Int64
    var updatedAt: Int64
    var version: Int

    /// The subscription itself, for writes.
    var subscription: Subscription {
        Subscription(
            id: id, secret: secret, checkoutID: checkoutID, orderID: orderID, sku: sku, productName: productName,
            plan: plan, amount: amount, currencyCode: currencyCode, merchantTokenIdentifier: merchantTokenIdentifier,
            paymentMethodReference: paymentMethodReference, network: network, cardSuffix: cardSuffix,
            cardExpiration: cardExpiration, cardArtURL: cardArtURL, status: status, statusReason: statusReason,
            cycle: cycle, attempt: attempt, anchor: legacyDate(anchor), nextChargeAt: nextChargeAt.map(legacyDate),
            createdAt: legacyDate(createdAt), updatedAt: legacyDate(updatedAt), version: version)
    }
}

struct LegacyCharge: LegacyRow, Codable, Equatable {
    var subscriptionID: String
    var cycle: Int
    var attempt: Int
    var idempotencyKey: String
    var amount: Int64
    var currencyCode: String
    var status: String
    var processorReference: String?
    var declineCode: String?
    var dueAt: Int64
    var chargedAt: Int64

}

struct LegacyTokenEvent: Codable, Equatable {
    var eventID: String
    var eventType: String
    var merchantTokenIdentifier: String
}

struct LegacyFulfillment: LegacyRow, Codable, Equatable {
    var status: FulfillmentStep.Status
    var carrier: String?
    var trackingNumber: String?
    var at: Int64

}

struct LegacyRegistration: LegacyRow, Codable, Equatable {
    var deviceIdentifier: String
    var pushToken: String
    var orderTypeIdentifier: String
    var orderID: String

    static func sorted(_ list: [LegacyRegistration]) -> [LegacyRegistration] {
        list.sorted {
            ($0.orderID, $0.deviceIdentifier, $0.orderTypeIdentifier)
                < ($1.orderID, $1.deviceIdentifier, $1.orderTypeIdentifier)
        }
    }
}

// MARK: Checks

enum LegacyFixtures {
    static let folder = Repository.root.appendingPathComponent("Tests/Fixtures/legacy-stores")
    /// The Wallet order type the fixtures' registrations use.
    static let orderTypeIdentifier = "order.com.example.coffee"
    /// The clock of the stores opened by the tests: after everything in the fixtures.
    static let later = Date(timeIntervalSince1970: 1_900_000_000)

    static let postgresURI = ProcessInfo.processInfo.environment["APPLEPAY_TEST_POSTGRES"].flatMap {
        $0.isEmpty ? nil : $0
    }
    static let postgresRequired = ProcessInfo.processInfo.environment["APPLEPAY_REQUIRE_POSTGRES"] == "1"

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }

    static func expectations() throws -> LegacyExpectations {
        try decoder().decode(
            LegacyExpectations.self, from: Data(contentsOf: folder.appendingPathComponent("expected.json")))
    }

    /// Every row of `expected`, read back through the public API; nothing more in the order list.
    static func verify(_ store: any OrderStore, _ expected: LegacyStoreContents) async throws {
        for checkout in expected.checkouts {
            let read = try await store.checkout(id: checkout.id)
            #expect(read == checkout, "checkout \(checkout.id)")
            // Stored before checkouts had client secrets: none, so no secret opens it (issue 30).
            #expect(read?.clientSecret == nil, "checkout \(checkout.id)")
        }
        try await verifyOrders(store, expected)
        for status in OrderStatus.allCases {
            let listed = try await store.orders(status: status, limit: 1000).map(\.id)
            #expect(listed == expected.orders.filter { $0.status == status }.map(\.id), "orders(status: \(status))")
        }
        let unsettled = try await store.unsettledOrders(updatedBefore: later, limit: 1000).map(\.id)
        #expect(
            Set(unsettled) == Set(expected.orders.filter { $0.status.isUnsettled }.map(\.id)), "unsettledOrders")
        #expect(Set(expected.events.keys) == Set(expected.checkouts.map(\.id)))
        for (checkoutID, events) in expected.events {
            let read = try await store.events(checkoutID: checkoutID).map(LegacyEvent.init)
            #expect(read == events, "events of \(checkoutID)")
        }

        let subscriptions = try #require(store as? any SubscriptionStore, "the store keeps subscriptions")
        let listed = try await subscriptions.subscriptions(SubscriptionFilter(limit: 1000)).map(LegacySubscription.init)
        #expect(listed == expected.subscriptions)
        for subscription in expected.subscriptions {
            let read = try await subscriptions.subscription(id: subscription.id).map(LegacySubscription.init)
            #expect(read == subscription, "subscription \(subscription.id)")
            let charges = try await subscriptions.subscriptionCharges(subscriptionID: subscription.id)
            #expect(
                try charges.map(LegacyCharge.init) == expected.subscriptionCharges[subscription.id, default: []],
                "charges of \(subscription.id)")
        }

        for order in expected.orders {
            let steps = try await store.fulfillments(orderID: order.id).map(LegacyFulfillment.init)
            #expect(steps == expected.fulfillments[order.id, default: []], "fulfilments of \(order.id)")
        }
        var registrations: [LegacyRegistration] = []
        for order in expected.orders {
            registrations += try await store.registrations(
                deviceIdentifier: nil, orderTypeIdentifier: orderTypeIdentifier, orderID: order.id
            ).map(LegacyRegistration.init)
        }
        #expect(LegacyRegistration.sorted(registrations) == expected.registrations)
        for device in Set(expected.registrations.map(\.deviceIdentifier)) {
            let read = try await store.registrations(
                deviceIdentifier: device, orderTypeIdentifier: orderTypeIdentifier, orderID: nil)
            #expect(
                try LegacyRegistration.sorted(read.map(LegacyRegistration.init))
                    == expected.registrations.filter { $0.deviceIdentifier == device }, "registrations of \(device)")
        }
    }

    /// The orders: each by id and by transaction id, and the whole list (newest first).
    static func verifyOrders(_ store: any OrderStore, _ expected: LegacyStoreContents) async throws {
        #expect(!expected.orders.isEmpty)
        for order in expected.orders {
            #expect(try await store.order(id: order.id).map(LegacyOrder.init) == order, "order \(order.id)")
            let byTransaction = try await store.order(transactionID: order.payment.transactionID)
            #expect(
                try byTransaction.map(LegacyOrder.init) == order, "order of transaction \(order.payment.transactionID)")
        }
        let listed = try await store.orders(status: nil, limit: 1000).map(\.id)
        #expect(listed.filter { id in expected.orders.contains { $0.id == id } } == expected.orders.map(\.id))
    }

    /// What only a write call tells (calls that find the row and write nothing): refunds by idempotency key, and
    /// the merchant-token events applied.
    static func probe(_ store: any OrderStore, _ expected: LegacyStoreContents) async throws {
        #expect(!expected.refunds.isEmpty)
        for refund in expected.refunds {
            let start = try await store.beginRefund(
                orderID: refund.orderID, amount: refund.amount, idempotencyKey: refund.idempotencyKey)
            guard case .existing(let record, let order) = start else {
                Issue.record("refund \(refund.idempotencyKey): expected the stored refund, got \(start)")
                continue
            }
            #expect(try LegacyRefund(record) == refund)
            #expect(try LegacyOrder(order) == expected.orders.first { $0.id == refund.orderID })
        }
        let subscriptions = try #require(store as? any SubscriptionStore)
        #expect(!expected.tokenEvents.isEmpty)
        for event in expected.tokenEvents {
            let new =
                try await subscriptions.applyTokenEvent(
                    eventID: event.eventID, eventType: event.eventType,
                    merchantTokenIdentifier: event.merchantTokenIdentifier, change: { _ in nil }) != nil
            #expect(!new, "token event \(event.eventID) was applied before")
        }
        // Nothing of that wrote an event.
        for (checkoutID, events) in expected.events {
            #expect(try await store.events(checkoutID: checkoutID).count == events.count)
        }
    }

    /// The migrated store still takes every kind of write.
    static func writeAfterMigration(_ store: any OrderStore, _ expected: LegacyStoreContents) async throws {
        let checkout = Checkout(
            id: "chk_ffffffffffffffffffff0001", items: [CheckoutItem(sku: "MUG-01", quantity: 1)],
            currency: .usDollar, applicationData: Data("checkout:after-migration".utf8).base64EncodedString(),
            createdAt: later)
        try await store.insertCheckout(checkout)
        #expect(try await store.checkout(id: checkout.id) == checkout)
        let transactionID = String(repeating: "f", count: 60) + "0001"
        let start = try await store.beginPayment(
            NewOrder(
                checkoutID: checkout.id, transactionID: transactionID, currencyCode: "USD",
                lines: [OrderLine(sku: "MUG-01", name: "Enamel Mug", quantity: 1, unitPrice: 1200, amount: 1200)],
                totals: OrderTotals(subtotal: 1200, discount: 0, shipping: 0, tax: 0, total: 1200),
                paymentNetwork: "Visa", panLastFour: "4242"))
        guard case .started(let pending) = start else {
            Issue.record("expected a new payment, got \(start)")
            return
        }
        #expect(!expected.orders.contains { $0.id == pending.id || $0.payment.id == pending.payment.id })
        // The widened status lists (migration 007): a payment decided later, then approved.
        let processing = try await store.completePayment(
            orderID: pending.id, outcome: .decided(.processing(reference: "ref-after-migration")))
        #expect(processing.status == .processing)
        #expect(processing.payment.status == .processing)
        let paid = try await store.completePayment(
            orderID: pending.id, outcome: .decided(.approved(reference: "ref-after-migration")))
        #expect(paid.status == .paid)
        #expect(try await store.order(transactionID: transactionID) == paid)
        let kinds = try await store.events(checkoutID: checkout.id).map(\.kind)
        #expect(kinds == ["checkoutCreated", "paymentStarted", "paymentProcessing", "paymentApproved"])
        let sequences = try await store.events(checkoutID: checkout.id).map(\.sequence)
        let highest = expected.events.values.flatMap { $0 }.map(\.sequence).max() ?? 0
        #expect(sequences.allSatisfy { $0 > highest }, "new events come after the legacy ones")

        // A refund and a Wallet step on a legacy order; a new token event.
        let legacyPaid = try #require(expected.orders.first { $0.status == .paid && $0.refunded == 0 })
        let refund = try await store.beginRefund(orderID: legacyPaid.id, amount: 1, idempotencyKey: "after-migration")
        guard case .started(let record, _) = refund else {
            Issue.record("expected a new refund, got \(refund)")
            return
        }
        #expect(try await store.completeRefund(id: record.id, processorReference: "rf-after").refunded == 1)
        // A refund the provider failed is kept as failed.
        guard
            case .started(let failing, _) = try await store.beginRefund(
                orderID: legacyPaid.id, amount: 1, idempotencyKey: "after-migration-failing")
        else { throw HarnessError("expected a second refund") }
        let events = try #require(store as? any ProviderEventStore)
        let failed = ProviderEvent(
            provider: "stripe", id: "evt_failed_after_migration", kind: .refundFailed,
            merchantReference: legacyPaid.id, refundKey: "after-migration-failing")
        #expect(try await events.apply(failed).outcome == .applied)
        #expect(try await store.refunds(orderID: legacyPaid.id).first { $0.id == failing.id }?.status == .failed)
        let step = FulfillmentStep(status: .delivered, carrier: "UPS", trackingNumber: "1Z-AFTER", at: later)
        _ = try await store.recordFulfillment(orderID: legacyPaid.id, step)
        let steps = try await store.fulfillments(orderID: legacyPaid.id).map(LegacyFulfillment.init)
        #expect(steps.dropLast() == expected.fulfillments[legacyPaid.id, default: []][...])
        // The step is stamped at least a second after the order's last change (the refund just now).
        #expect(
            steps.last.map { [$0.status.rawValue, $0.carrier, $0.trackingNumber] } == ["delivered", "UPS", "1Z-AFTER"])
        #expect((steps.last?.at ?? 0) > legacyMillis(later))
        let subscriptions = try #require(store as? any SubscriptionStore)
        #expect(
            try await subscriptions.applyTokenEvent(
                eventID: "ev-after-migration", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE-AFTER",
                change: { _ in nil }) != nil)
        let live = try #require(expected.subscriptions.first { $0.status == .active })
        var next = live.subscription
        next.cycle += 1
        let written = try await subscriptions.updateSubscription(next, expectedVersion: live.version, charge: nil)
        #expect(written?.version == live.version + 1)
    }

    /// A database of its own in the test cluster, `orders-v1.sql` loaded into it with psql.
    struct LoadedDatabase {
        let name: String
        let base: String
        let uri: String

        static func load() async throws -> LoadedDatabase {
            let base = try #require(postgresURI, "APPLEPAY_TEST_POSTGRES is not set")
            let name = "legacy_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            var components = try #require(URLComponents(string: base), "APPLEPAY_TEST_POSTGRES is not a URI")
            components.path = "/" + name
            let database = LoadedDatabase(name: name, base: base, uri: try #require(components.string))
            try await psql(base, ["-c", "CREATE DATABASE \(name)"])
            do {
                try await psql(
                    database.uri, ["-f", folder.appendingPathComponent("orders-v1.sql").path])
            } catch {
                try? await database.drop()
                throw error
            }
            return database
        }

        func drop() async throws { try await LoadedDatabase.psql(base, ["-c", "DROP DATABASE \(name) WITH (FORCE)"]) }

        static func psql(_ uri: String, _ arguments: [String]) async throws {
            let result = try await Subprocess.run(
                "psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", uri] + arguments,
                environment: ["PGOPTIONS": "--client-min-messages=warning"])
            #expect(result.status == 0, "psql \(arguments.joined(separator: " ")): \(result.standardError)")
            if result.status != 0 { throw OrderStoreError(.storage, "psql failed: \(result.standardError)") }
        }
    }
}

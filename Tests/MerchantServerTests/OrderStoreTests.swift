import ApplePay
import Foundation
import MerchantServer
import SQLite
import TestSupport
import Testing

/// A processor that waits before delegating, so that concurrent attempts really overlap.
struct SlowProcessor: PaymentProcessor {
    let name = "slow"
    let inner: SandboxProcessor
    let delay: Duration
    /// Opened when a charge arrives (the payment service has written its pending order by then).
    var charging: Latch? = nil

    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        charging?.open()
        do { try await Task.sleep(for: delay) } catch { throw ProcessorError(.timeout, "cancelled") }
        return try await inner.charge(request)
    }
    func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        try await inner.charge(idempotencyKey: idempotencyKey)
    }
    func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        try await inner.void(reference: reference)
    }
    func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    { try await inner.refund(reference: reference, amount: amount, idempotencyKey: idempotencyKey) }
}

/// A store in a fresh temporary file, and a way to look at its tables directly.
struct StoreFixture {
    let folder: TemporaryDirectory
    let path: String
    let store: SQLiteOrderStore
    let configuration = StoreConfiguration.demo

    init() throws {
        folder = try TemporaryDirectory(prefix: "order-store")
        path = folder.path("orders.sqlite")
        store = try SQLiteOrderStore(path: path, clock: { fixedNow })
    }

    /// Row counts of every table, read through a separate connection.
    func counts() throws -> [String: Int64] {
        let db = try Connection(path: path)
        var result: [String: Int64] = [:]
        for table in ["checkouts", "orders", "payments", "events", "schema_migrations"] {
            result[table] = try db.query("SELECT count(*) AS n FROM \(table)").first?.int64("n")
        }
        return result
    }

    /// A stored checkout for two coffees and a mug, shipped to California.
    func checkout() async throws -> (Checkout, PriceBreakdown) {
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

    func newOrder(
        _ checkout: Checkout, _ breakdown: PriceBreakdown, transaction: String, pan: String = "4817499999010019"
    )
        -> NewOrder
    {
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

@Suite("SQLite order store")
struct OrderStoreTests {
    @Test("checkouts round-trip; unknown ids give nil or notFound; duplicate ids conflict")
    func checkouts() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, _) = try await fixture.checkout()
        #expect(try await fixture.store.checkout(id: checkout.id) == checkout)
        let updated = checkout.applyingCoupon("WELCOME10").selectingPaymentMethod(type: "debit", network: "Visa")
        try await fixture.store.updateCheckout(updated)
        #expect(try await fixture.store.checkout(id: checkout.id) == updated)
        #expect(try await fixture.store.checkout(id: "chk_nope") == nil)
        var ghost = checkout
        ghost.id = "chk_ghost"
        await #expect(throws: OrderStoreError(.notFound, "")) { try await fixture.store.updateCheckout(ghost) }
        await #expect(throws: OrderStoreError(.conflict, "")) { try await fixture.store.insertCheckout(checkout) }
        #expect(try fixture.counts()["checkouts"] == 1)
        let kinds = try await fixture.store.events(checkoutID: checkout.id).map(\.kind)
        #expect(kinds == ["checkoutCreated", "checkoutUpdated"])
    }

    @Test("a payment writes a pending order and payment, then completes them together")
    func paymentLifecycle() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let start = try await fixture.store.beginPayment(fixture.newOrder(checkout, breakdown, transaction: "aa01"))
        guard case .started(let pending) = start else {
            Issue.record("expected a new payment, got \(start)")
            return
        }
        #expect(pending.status == .pending)
        #expect(pending.payment.status == .pending)
        #expect(pending.totals.total == breakdown.total)
        #expect(pending.panLastFour == "0019")
        #expect(pending.lines.map(\.sku) == ["COFFEE-250", "MUG-01"])
        #expect(pending.lines.first?.unitPrice == 1450)
        #expect(pending.shippingMethod?.identifier == "standard")
        #expect(try fixture.counts()["orders"] == 1)

        let paid = try await fixture.store.completePayment(
            orderID: pending.id, outcome: .decided(.approved(reference: "ref-1")))
        #expect(paid.status == .paid)
        #expect(paid.payment.status == .approved)
        #expect(paid.payment.processorReference == "ref-1")
        #expect(try await fixture.store.order(id: pending.id) == paid)
        #expect(try await fixture.store.order(transactionID: "aa01") == paid)
        await #expect(throws: OrderStoreError(.conflict, "")) {
            try await fixture.store.completePayment(orderID: pending.id, outcome: .decided(.declined(.lostCard)))
        }
        await #expect(throws: OrderStoreError(.notFound, "")) {
            try await fixture.store.completePayment(orderID: "ord_nope", outcome: .decided(.declined(.lostCard)))
        }
        let kinds = try await fixture.store.events(checkoutID: checkout.id).map(\.kind)
        #expect(kinds == ["checkoutCreated", "paymentStarted", "paymentApproved"])
    }

    @Test("the same transaction id charges once; the replay returns the first outcome")
    func replay() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let sandbox = SandboxProcessor()
        let service = PaymentService(store: fixture.store, processor: sandbox, timeout: .seconds(5))
        let order = fixture.newOrder(checkout, breakdown, transaction: "bb02")
        let first = try await service.pay(order, token: testToken())
        let second = try await service.pay(order, token: testToken())
        #expect(first.disposition == .processed)
        #expect(first.order.status == .paid)
        #expect(second.disposition == .replayed)
        #expect(second.order == first.order)
        #expect(sandbox.chargeCount == 1)
        #expect(try fixture.counts()["payments"] == 1)
        #expect(try fixture.counts()["orders"] == 1)
    }

    @Test("a concurrent double submit through two connections charges exactly once")
    func concurrentDoubleSubmit() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let sandbox = SandboxProcessor()
        let processor = SlowProcessor(inner: sandbox, delay: .milliseconds(200))
        // Two stores = two SQLite connections on one file, as two server processes would have.
        let other = try SQLiteOrderStore(path: fixture.path)
        let services = [
            PaymentService(store: fixture.store, processor: processor, timeout: .seconds(5)),
            PaymentService(store: other, processor: processor, timeout: .seconds(5)),
        ]
        let order = fixture.newOrder(checkout, breakdown, transaction: "cc03")
        let results = try await withThrowingTaskGroup(of: PaymentService.Result.self) { group in
            for index in 0..<6 {
                let service = services[index % 2]
                group.addTask { try await service.pay(order, token: testToken()) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0.disposition == .processed }.count == 1)
        #expect(results.filter { $0.disposition == .replayed }.count == 5)
        #expect(Set(results.map(\.order.id)).count == 1)
        #expect(results.allSatisfy { $0.order.status == .paid })
        #expect(sandbox.chargeCount == 1)
        let counts = try fixture.counts()
        #expect(counts["orders"] == 1 && counts["payments"] == 1)
    }

    @Test("a replay that outwaits a slow first attempt answers inProgress, not a second charge")
    func inProgress() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let sandbox = SandboxProcessor()
        let charging = Latch()
        let slow = PaymentService(
            store: fixture.store,
            processor: SlowProcessor(inner: sandbox, delay: .milliseconds(1500), charging: charging),
            timeout: .seconds(5))
        let impatient = PaymentService(
            store: fixture.store, processor: sandbox, timeout: .seconds(5), concurrentWait: .milliseconds(100))
        let order = fixture.newOrder(checkout, breakdown, transaction: "dd04")
        async let first = slow.pay(order, token: testToken())
        // Wait until the first attempt has written its pending order and reached the processor (it then spends
        // 1.5 s there).
        await charging.wait()
        #expect(try await fixture.store.order(transactionID: "dd04") != nil)
        let second = try await impatient.pay(order, token: testToken())
        #expect(second.disposition == .inProgress)
        #expect(second.order.status == .pending)
        #expect(try await first.order.status == .paid)
        #expect(sandbox.chargeCount == 1)
    }

    @Test("a paid checkout refuses another token; a declined one accepts a retry")
    func checkoutAlreadyPaid() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let sandbox = SandboxProcessor()
        let service = PaymentService(store: fixture.store, processor: sandbox, timeout: .seconds(5))
        let declined = try await service.pay(
            fixture.newOrder(checkout, breakdown, transaction: "ee05", pan: "4817499999000051"),
            token: testToken(pan: "4817499999000051"))
        #expect(declined.order.status == .declined)
        #expect(declined.order.payment.status == .declined)
        #expect(declined.order.payment.failureCode == "insufficientFunds")
        let retry = try await service.pay(
            fixture.newOrder(checkout, breakdown, transaction: "ee06"), token: testToken())
        #expect(retry.disposition == .processed)
        #expect(retry.order.status == .paid)
        let again = try await service.pay(
            fixture.newOrder(checkout, breakdown, transaction: "ee07"), token: testToken())
        #expect(again.disposition == .checkoutLocked)
        #expect(again.order.id == retry.order.id)
        #expect(sandbox.chargeCount == 1)
        let counts = try fixture.counts()
        #expect(counts["orders"] == 2 && counts["payments"] == 2)
    }

    @Test("a processor timeout leaves the order unknown (for the reconciler), never failed")
    func timeoutFails() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let sandbox = SandboxProcessor(hangDuration: .seconds(30))
        let service = PaymentService(store: fixture.store, processor: sandbox, timeout: .milliseconds(150))
        let (result, elapsed) = try await CooperativePool.measuring {
            let start = ContinuousClock.now
            let result = try await service.pay(
                fixture.newOrder(checkout, breakdown, transaction: "ff08", pan: "4817499999070054"),
                token: testToken(pan: "4817499999070054"))
            return (result, ContinuousClock.now - start)
        }
        #expect(elapsed < .seconds(2))
        #expect(result.order.status == .unknown)
        #expect(result.order.payment.status == .unknown)
        #expect(result.order.payment.failureCode == "processorTimeout")
        #expect(result.order.payment.processorReference == nil)
        #expect(sandbox.chargeCount == 0)
        let kinds = try await fixture.store.events(checkoutID: checkout.id).map(\.kind)
        #expect(kinds.last == "paymentOutcomeUnknown")
    }

    @Test("a failure inside beginPayment leaves no order, payment or event behind")
    func rollbackOnBegin() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        // Unknown checkout: refused before any write.
        var orphan = fixture.newOrder(checkout, breakdown, transaction: "gg09")
        orphan.checkoutID = "chk_unknown"
        await #expect(throws: OrderStoreError(.notFound, "")) { try await fixture.store.beginPayment(orphan) }
        // A real SQLite failure after the order row is written: the payment insert is refused by a trigger.
        try Connection(path: fixture.path).execute(
            "CREATE TRIGGER test_fail BEFORE INSERT ON payments BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
        await #expect(throws: OrderStoreError(.storage, "")) {
            try await fixture.store.beginPayment(fixture.newOrder(checkout, breakdown, transaction: "gg10"))
        }
        // A PAN "last four" that is not four digits is refused by the schema.
        var leaky = fixture.newOrder(checkout, breakdown, transaction: "gg11")
        leaky.panLastFour = "4817499999010019"
        await #expect(throws: OrderStoreError(.storage, "")) { try await fixture.store.beginPayment(leaky) }
        let counts = try fixture.counts()
        #expect(counts["orders"] == 0 && counts["payments"] == 0)
        #expect(try await fixture.store.events(checkoutID: checkout.id).map(\.kind) == ["checkoutCreated"])
    }

    @Test("a failure inside completePayment leaves the order and payment pending together")
    func rollbackOnComplete() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        guard
            case .started(let pending) = try await fixture.store.beginPayment(
                fixture.newOrder(checkout, breakdown, transaction: "hh12"))
        else {
            Issue.record("expected a new payment")
            return
        }
        try Connection(path: fixture.path).execute(
            """
            CREATE TRIGGER test_fail BEFORE INSERT ON events WHEN NEW.kind = 'paymentApproved'
            BEGIN SELECT RAISE(ABORT, 'injected failure'); END
            """)
        await #expect(throws: OrderStoreError(.storage, "")) {
            try await fixture.store.completePayment(orderID: pending.id, outcome: .decided(.approved(reference: "r")))
        }
        let db = try Connection(path: fixture.path)
        #expect(try db.query("SELECT status FROM orders").first?["status"] == .text("pending"))
        #expect(
            try db.query("SELECT status, processor_reference FROM payments").first?.values == [.text("pending"), .null])
        #expect(try await fixture.store.order(id: pending.id) == pending)
    }

    @Test("the event log is append-only")
    func appendOnly() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        _ = try await fixture.checkout()
        let db = try Connection(path: fixture.path)
        #expect(throws: SQLiteError.self) { try db.run("UPDATE events SET kind = 'x'") }
        #expect(throws: SQLiteError.self) { try db.run("DELETE FROM events") }
        #expect(try fixture.counts()["events"] == 1)
    }

    @Test("expired unpaid checkouts are pruned with their events; checkouts with orders and their events stay")
    func pruning() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (unpaid, _) = try await fixture.checkout()
        let (paid, breakdown) = try await fixture.checkout()
        guard
            case .started(let order) = try await fixture.store.beginPayment(
                fixture.newOrder(paid, breakdown, transaction: "bb01"))
        else { throw StoreTestFailure("no order") }
        _ = try await fixture.store.completePayment(orderID: order.id, outcome: .decided(.approved(reference: "r")))
        let paidEvents = try await fixture.store.events(checkoutID: paid.id)

        #expect(try await fixture.store.pruneExpiredCheckouts(createdBefore: fixedNow, batch: 10) == 0)
        #expect(try await fixture.store.pruneExpiredCheckouts(createdBefore: fixedNow + 1, batch: 1) == 1)
        #expect(try await fixture.store.checkout(id: unpaid.id) == nil)
        #expect(try await fixture.store.events(checkoutID: unpaid.id).isEmpty)
        #expect(try await fixture.store.checkout(id: paid.id) == paid)
        #expect(try await fixture.store.events(checkoutID: paid.id) == paidEvents)

        // The triggers allow nothing else: not the events of a live checkout or an order, not a paid checkout.
        let db = try Connection(path: fixture.path)
        #expect(throws: SQLiteError.self) { try db.run("DELETE FROM events WHERE checkout_id = ?", .text(paid.id)) }
        #expect(throws: SQLiteError.self) { try db.run("DELETE FROM checkouts WHERE id = ?", .text(paid.id)) }
        #expect(throws: SQLiteError.self) { try db.run("DELETE FROM events WHERE order_id IS NOT NULL") }
        #expect(try fixture.counts()["events"] == Int64(paidEvents.count))
    }

    @Test("the store's file, its -wal and -shm, are 0600; a loose one is tightened, a symlink refused")
    func privateFiles() async throws {
        let folder = try TemporaryDirectory(prefix: "order-store-modes")
        defer { folder.remove() }
        let path = folder.path("orders.sqlite")
        let store = try SQLiteOrderStore(path: path)
        _ = try await store.checkout(id: "chk_x")
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1) & 0o777
        }
        for file in [path, path + "-wal", path + "-shm"] { #expect(try mode(file) == 0o600, "\(file)") }
        // An existing file with loose permissions is tightened; a symlink is refused.
        let loose = folder.path("loose.sqlite")
        FileManager.default.createFile(atPath: loose, contents: nil, attributes: [.posixPermissions: 0o644])
        _ = try SQLiteOrderStore(path: loose)
        #expect(try mode(loose) == 0o600)
        try FileManager.default.createSymbolicLink(atPath: folder.path("link.sqlite"), withDestinationPath: loose)
        #expect(throws: OrderStoreError.self) { _ = try SQLiteOrderStore(path: folder.path("link.sqlite")) }
    }

    @Test("an older database is upgraded in place: new migrations run, old rows read with defaults")
    func upgrade() async throws {
        let folder = try TemporaryDirectory(prefix: "order-store")
        defer { folder.remove() }
        let path = folder.path("old.sqlite")
        // A database as the first release left it, with one paid order.
        let old = try Connection(path: path)
        try old.migrate(Array(SQLiteOrderStore.migrations.prefix(2)))
        try old.execute(
            """
            INSERT INTO checkouts VALUES ('chk_old', 'USD', '{}', 'YQ==', 0, 0);
            INSERT INTO orders (id, checkout_id, status, currency, subtotal_minor, discount_minor, shipping_minor,
                tax_minor, total_minor, items_json, created_at, updated_at)
            VALUES ('ord_old', 'chk_old', 'paid', 'USD', 1000, 0, 0, 0, 1000, '[]', 0, 0);
            INSERT INTO payments (id, order_id, transaction_id, status, amount_minor, currency, created_at, updated_at)
            VALUES ('pay_old', 'ord_old', 'old-tx', 'approved', 1000, 'USD', 0, 0);
            """)
        let store = try SQLiteOrderStore(path: path)
        #expect(try old.appliedMigrations() == SQLiteOrderStore.migrations.map(\.name))
        let order = try #require(try await store.order(transactionID: "old-tx"))
        #expect(order.totals.fee == 0)
        #expect(order.totals.total == 1000)
    }

    @Test("a payment method fee is stored with the order")
    func feeStored() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        var configuration = fixture.configuration
        configuration.paymentMethodFees = [PaymentMethodFee(type: "credit", label: "Fee", percent: 2)]
        let (checkout, _) = try await fixture.checkout()
        let credit = checkout.selectingPaymentMethod(type: "credit", network: "Visa")
        try await fixture.store.updateCheckout(credit)
        let breakdown = try CheckoutPricing(configuration: configuration).price(credit)
        #expect(breakdown.fee > 0)
        let service = PaymentService(store: fixture.store, processor: SandboxProcessor(), timeout: .seconds(5))
        let result = try await service.pay(fixture.newOrder(credit, breakdown, transaction: "fee1"), token: testToken())
        #expect(result.order.totals.fee == breakdown.fee)
        #expect(result.order.totals.total == breakdown.total)
        #expect(result.order.payment.amount == breakdown.total)
    }

    @Test("migrations are recorded once, however often the store opens")
    func migrationsOnce() throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        _ = try SQLiteOrderStore(path: fixture.path)
        _ = try SQLiteOrderStore(path: fixture.path)
        let names = try Connection(path: fixture.path).appliedMigrations()
        #expect(names == SQLiteOrderStore.migrations.map(\.name))
        #expect(try fixture.counts()["schema_migrations"] == Int64(SQLiteOrderStore.migrations.count))
        let error = #expect(throws: OrderStoreError.self) {
            try SQLiteOrderStore(path: fixture.folder.path("no/dir/x.sqlite"))
        }
        #expect(error?.code == .storage)
    }

    @Test("no PAN, cryptogram or expiry reaches the database file, the WAL or the order JSON")
    func noSecretsStored() async throws {
        let fixture = try StoreFixture()
        defer { fixture.folder.remove() }
        let (checkout, breakdown) = try await fixture.checkout()
        let service = PaymentService(store: fixture.store, processor: SandboxProcessor(), timeout: .seconds(5))
        let result = try await service.pay(
            fixture.newOrder(checkout, breakdown, transaction: "ii13"), token: testToken())
        var bytes = Data()
        for suffix in ["", "-wal"] {
            bytes += (try? Data(contentsOf: URL(fileURLWithPath: fixture.path + suffix))) ?? Data()
        }
        #expect(bytes.count > 4096)
        let json = try JSONEncoder().encode(result.order)
        for secret in ["4817499999010019", "CRYPTOGRAM-SECRET-BYTES", "301231"] {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) found in the database")
            #expect(json.range(of: Data(secret.utf8)) == nil, "\(secret) found in the order JSON")
        }
        #expect(bytes.range(of: Data("ada@example.com".utf8)) != nil, "the scan reads the real rows")
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let payment = try #require(object["payment"] as? [String: Any])
        #expect(payment["lastFour"] as? String == "0019")
        #expect(payment["network"] as? String == "Visa")
        #expect(
            (object["totals"] as? [String: Any])?["total"] as? String
                == Money(minorUnits: breakdown.total, currency: .usDollar).amountString)
        #expect(object["status"] as? String == "paid")
        let items = try #require(object["items"] as? [[String: Any]])
        #expect(items.first?["quantity"] as? Int == 2)
        #expect(items.first?["unitPrice"] as? String == "14.50")
        #expect(items.first?["amount"] as? String == "29.00")
    }

    @Test("an in-memory store (sqlite::memory:) takes a payment too")
    func inMemory() async throws {
        let store = try OrderStoreLocation(parsing: "sqlite::memory:").open(clock: { fixedNow })
        let configuration = StoreConfiguration.demo
        let checkout = try Checkout.create(
            items: [CheckoutItem(sku: "MUG-01", quantity: 2)], configuration: configuration)
        try await store.insertCheckout(checkout)
        let breakdown = try CheckoutPricing(configuration: configuration).price(checkout)
        let service = PaymentService(store: store, processor: SandboxProcessor(), timeout: .seconds(5))
        let order = NewOrder(
            checkout: checkout, breakdown: breakdown, transactionID: "mem1", token: testToken(), shippingContact: nil,
            billingContact: nil, configuration: configuration)
        let result = try await service.pay(order, token: testToken())
        #expect(result.order.status == .paid)
        #expect(result.order.totals.total == breakdown.total)
        #expect(try await service.pay(order, token: testToken()).disposition == .replayed)
    }

    @Test("--store locations parse and open")
    func locations() async throws {
        let folder = try TemporaryDirectory(prefix: "order-store")
        defer { folder.remove() }
        let location = try OrderStoreLocation(parsing: "sqlite:" + folder.path("x.sqlite"))
        let store = try location.open()
        #expect(try await store.checkout(id: "chk_none") == nil)
        #expect(throws: OrderStoreError(.invalidLocation, "")) { try OrderStoreLocation(parsing: "postgres://x") }
        #expect(throws: OrderStoreError(.invalidLocation, "")) { try OrderStoreLocation(parsing: "sqlite:") }
    }
}

struct StoreTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

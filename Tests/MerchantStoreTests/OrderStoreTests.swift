import ApplePay
import Foundation
import Foundations
import MerchantSandbox
import MerchantStore
import MerchantTestSupport
import Postgres
import SQLCore
import SQLite
import TestSupport
import Testing

@testable import MerchantCore

/// A processor that waits before delegating, so that concurrent attempts really overlap.
struct SlowProcessor: PaymentProcessor {
    let name = "slow"
    let inner: SandboxProcessor
    let delay: Duration
    /// Opened when a charge arrives (the payment service has written its pending order by then).
    var charging: Latch? = nil
    /// When set, a charge also waits for it to open: the test, not the clock, decides when the processor answers.
    var answering: Latch? = nil

    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        charging?.open()
        do { try await Task.sleep(for: delay) } catch { throw ProcessorError(.timeout, "cancelled") }
        await answering?.wait()
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

@Suite("Order stores: SQLite and PostgreSQL")
struct OrderStoreTests {
    @Test(
        "checkouts round-trip; unknown ids give nil or notFound; duplicate ids conflict",
        arguments: StoreBackend.available)
    func checkouts(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
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
            #expect(try await fixture.counts()["checkouts"] == 1)
            let kinds = try await fixture.store.events(checkoutID: checkout.id).map(\.kind)
            #expect(kinds == ["checkoutCreated", "checkoutUpdated"])
        }
    }

    @Test(
        "a payment writes a pending order and payment, then completes them together", arguments: StoreBackend.available)
    func paymentLifecycle(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
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
            #expect(try await fixture.counts()["orders"] == 1)
            // The new order is answered from what was written, not read back: it must be what a read finds.
            #expect(try await fixture.store.order(id: pending.id) == pending)

            let paid = try await fixture.store.completePayment(
                orderID: pending.id, outcome: .decided(.approved(reference: "ref-1")))
            #expect(paid.status == .paid)
            #expect(paid.payment.status == .approved)
            #expect(paid.payment.processorReference == "ref-1")
            #expect(try await fixture.store.order(id: pending.id) == paid)
            #expect(try await fixture.store.order(transactionID: "aa01") == paid)
            // A second answer that contradicts the first never undoes an approval: it is a discrepancy for a person.
            let again = try await fixture.store.completePayment(
                orderID: pending.id, outcome: .decided(.declined(.lostCard)))
            #expect(again.status == .paid)
            #expect(try await fixture.store.discrepancies(openOnly: true, limit: 10).map(\.provider) == ["declined"])
            await #expect(throws: OrderStoreError(.notFound, "")) {
                try await fixture.store.completePayment(orderID: "ord_nope", outcome: .decided(.declined(.lostCard)))
            }
            let kinds = try await fixture.store.events(checkoutID: checkout.id).map(\.kind)
            #expect(kinds == ["checkoutCreated", "paymentStarted", "paymentApproved", "paymentDiscrepancy"])
        }
    }

    @Test(
        "the same transaction id charges once; the replay returns the first outcome", arguments: StoreBackend.available)
    func replay(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
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
            #expect(try await fixture.counts()["payments"] == 1)
            #expect(try await fixture.counts()["orders"] == 1)
        }
    }

    @Test("a concurrent double submit through two connections charges exactly once", arguments: StoreBackend.available)
    func concurrentDoubleSubmit(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (checkout, breakdown) = try await fixture.checkout()
            let sandbox = SandboxProcessor()
            let processor = SlowProcessor(inner: sandbox, delay: .milliseconds(200))
            // Two stores = two connections to one database, as two server processes would have.
            let other = try await fixture.another()
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
            #expect(try await fixture.orderAndPaymentRows() == [1, 1])
        }
    }

    @Test(
        "a replay that outwaits a slow first attempt answers inProgress, not a second charge",
        arguments: StoreBackend.available)
    func inProgress(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (checkout, breakdown) = try await fixture.checkout()
            let sandbox = SandboxProcessor()
            let charging = Latch()
            let answering = Latch()
            let slow = PaymentService(
                store: fixture.store,
                processor: SlowProcessor(inner: sandbox, delay: .zero, charging: charging, answering: answering),
                timeout: .seconds(30))
            let impatient = PaymentService(
                store: fixture.store, processor: sandbox, timeout: .seconds(5), concurrentWait: .milliseconds(100))
            let order = fixture.newOrder(checkout, breakdown, transaction: "dd04")
            async let first = slow.pay(order, token: testToken())
            // Wait until the first attempt has written its pending order and reached the processor, which holds its
            // answer until the second attempt has given up waiting (however busy the machine is).
            await charging.wait()
            let second = try await withCleanup {
                #expect(try await fixture.store.order(transactionID: "dd04") != nil)
                return try await impatient.pay(order, token: testToken())
            } cleanup: {
                answering.open()
            }
            #expect(second.disposition == .inProgress)
            #expect(second.order.status == .pending)
            #expect(try await first.order.status == .paid)
            #expect(sandbox.chargeCount == 1)
        }
    }

    @Test("concurrent writes share group commits; a write that fails in a group fails alone")
    func groupCommit() async throws {
        try await StoreFixture.with(.sqlite) { fixture in
            let store = try #require(fixture.store as? SQLiteOrderStore)
            let (existing, _) = try await fixture.checkout()
            let checkouts = try (0..<64).map { _ in
                try Checkout.create(
                    items: [CheckoutItem(sku: "MUG-01", quantity: 1)], configuration: fixture.configuration,
                    now: fixedNow)
            }
            // 64 new checkouts and, among them, one whose id is taken: it alone is refused.
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for checkout in checkouts + [existing] {
                    group.addTask { (try? await store.insertCheckout(checkout)) != nil }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 64)
            for checkout in checkouts { #expect(try await store.checkout(id: checkout.id) != nil) }
            let counts = await store.groupCommitCounts
            #expect(counts.writes >= 65)
            #expect(counts.commits < counts.writes, "65 concurrent writes took \(counts.commits) commits")
        }
    }

    @Test("a pending order left by a process that died is answered at once, as an unknown outcome, not waited on")
    func orphanedPending() async throws {
        try await StoreFixture.with(.sqlite) { fixture in
            let (checkout, breakdown) = try await fixture.checkout()
            // The dead process wrote its pending order a minute ago, then never recorded the processor's answer.
            let past = try SQLiteOrderStore(path: fixture.path, clock: { Date().addingTimeInterval(-60) })
            let order = fixture.newOrder(checkout, breakdown, transaction: "ab99")
            guard case .started = try await past.beginPayment(order) else {
                Issue.record("expected a new payment")
                return
            }
            let sandbox = SandboxProcessor()
            let service = PaymentService(store: fixture.store, processor: sandbox, timeout: .seconds(10))
            let clock = ContinuousClock()
            let start = clock.now
            let replay = try await service.pay(order, token: testToken())
            #expect(clock.now - start < .seconds(5), "answered without waiting out the 12 s concurrent-attempt limit")
            #expect(replay.disposition == .replayed)
            #expect(replay.order.status == .pending)
            #expect(sandbox.chargeCount == 0)
        }
    }

    @Test("a paid checkout refuses another token; a declined one accepts a retry", arguments: StoreBackend.available)
    func checkoutAlreadyPaid(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
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
            #expect(try await fixture.orderAndPaymentRows() == [2, 2])
        }
    }

    @Test(
        "a processor timeout leaves the order unknown (for the reconciler), never failed",
        arguments: StoreBackend.available)
    func timeoutFails(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
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
    }

    @Test("a failure inside beginPayment leaves no order, payment or event behind", arguments: StoreBackend.available)
    func rollbackOnBegin(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (checkout, breakdown) = try await fixture.checkout()
            // Unknown checkout: refused before any write.
            var orphan = fixture.newOrder(checkout, breakdown, transaction: "gg09")
            orphan.checkoutID = "chk_unknown"
            await #expect(throws: OrderStoreError(.notFound, "")) { try await fixture.store.beginPayment(orphan) }
            // A real SQLite failure after the order row is written: the payment insert is refused by a trigger.
            try await fixture.execute(
                sqlite:
                    "CREATE TRIGGER test_fail BEFORE INSERT ON payments BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
                postgres: """
                    CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'injected failure'; END $$;
                    CREATE TRIGGER test_fail BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION test_fail();
                    """)
            await #expect(throws: OrderStoreError(.storage, "")) {
                try await fixture.store.beginPayment(fixture.newOrder(checkout, breakdown, transaction: "gg10"))
            }
            // A PAN "last four" that is not four digits is refused by the schema.
            var leaky = fixture.newOrder(checkout, breakdown, transaction: "gg11")
            leaky.panLastFour = "4817499999010019"
            await #expect(throws: OrderStoreError(.storage, "")) { try await fixture.store.beginPayment(leaky) }
            #expect(try await fixture.orderAndPaymentRows() == [0, 0])
            #expect(try await fixture.store.events(checkoutID: checkout.id).map(\.kind) == ["checkoutCreated"])
        }
    }

    @Test(
        "a failure inside completePayment leaves the order and payment pending together",
        arguments: StoreBackend.available)
    func rollbackOnComplete(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (pending, _, _) = try await fixture.pendingOrder(transaction: "hh12")
            try await fixture.execute(
                sqlite: """
                    CREATE TRIGGER test_fail BEFORE INSERT ON events WHEN NEW.kind = 'paymentApproved'
                    BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                    """,
                postgres: """
                    CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'injected failure'; END $$;
                    CREATE TRIGGER test_fail BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.kind = 'paymentApproved')
                        EXECUTE FUNCTION test_fail();
                    """)
            await #expect(throws: OrderStoreError(.storage, "")) {
                try await fixture.store.completePayment(
                    orderID: pending.id, outcome: .decided(.approved(reference: "r")))
            }
            #expect(try await fixture.column("SELECT status FROM orders") == ["pending"])
            #expect(try await fixture.column("SELECT status FROM payments") == ["pending"])
            #expect(try await fixture.column("SELECT processor_reference FROM payments") == [nil])
            #expect(try await fixture.store.order(id: pending.id) == pending)
        }
    }

    @Test("the event log is append-only", arguments: StoreBackend.available)
    func appendOnly(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            _ = try await fixture.checkout()
            for statement in ["UPDATE events SET kind = 'x'", "DELETE FROM events"] {
                await #expect(throws: (any Error).self) {
                    try await fixture.execute(sqlite: statement, postgres: statement)
                }
            }
            if backend == .postgres {
                await #expect(throws: (any Error).self) {
                    try await fixture.execute(sqlite: "", postgres: "TRUNCATE events")
                }
            }
            #expect(try await fixture.counts()["events"] == 1)
        }
    }

    @Test(
        "expired unpaid checkouts are pruned with their events; checkouts with orders and their events stay",
        arguments: StoreBackend.available)
    func pruning(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (unpaid, _) = try await fixture.checkout()
            let (order, paid, _) = try await fixture.pendingOrder(transaction: "bb01")
            _ = try await fixture.store.completePayment(orderID: order.id, outcome: .decided(.approved(reference: "r")))
            let paidEvents = try await fixture.store.events(checkoutID: paid.id)

            #expect(try await fixture.store.pruneExpiredCheckouts(createdBefore: fixedNow, batch: 10) == 0)
            #expect(try await fixture.store.pruneExpiredCheckouts(createdBefore: fixedNow + 1, batch: 1) == 1)
            #expect(try await fixture.store.checkout(id: unpaid.id) == nil)
            #expect(try await fixture.store.events(checkoutID: unpaid.id).isEmpty)
            #expect(try await fixture.store.checkout(id: paid.id) == paid)
            #expect(try await fixture.store.events(checkoutID: paid.id) == paidEvents)

            // The triggers allow nothing else: not the events of a live checkout or an order, not a paid checkout.
            guard backend == .sqlite else { return }
            let db = try Connection(path: fixture.path)
            #expect(throws: SQLiteError.self) { try db.run("DELETE FROM events WHERE checkout_id = ?", .text(paid.id)) }
            #expect(throws: SQLiteError.self) { try db.run("DELETE FROM checkouts WHERE id = ?", .text(paid.id)) }
            #expect(throws: SQLiteError.self) { try db.run("DELETE FROM events WHERE order_id IS NOT NULL") }
            #expect(try await fixture.counts()["events"] == Int64(paidEvents.count))
        }
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
        try old.migrate(LegacySQLiteSchema.migrations.prefix(2).map { Migration($0.name, sql: $0.sql(for: .sqlite)) })
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
        #expect(try old.appliedMigrations() == StoreSchema.migrations.map(\.name))
        let order = try #require(try await store.order(transactionID: "old-tx"))
        #expect(order.totals.fee == 0)
        #expect(order.totals.total == 1000)
    }

    @Test("a payment method fee is stored with the order", arguments: StoreBackend.available)
    func feeStored(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            var configuration = fixture.configuration
            configuration.paymentMethodFees = [PaymentMethodFee(type: "credit", label: "Fee", percent: 2)]
            let (checkout, _) = try await fixture.checkout()
            let credit = checkout.selectingPaymentMethod(type: "credit", network: "Visa")
            try await fixture.store.updateCheckout(credit)
            let breakdown = try CheckoutPricing(configuration: configuration).price(credit)
            #expect(breakdown.fee > 0)
            let service = PaymentService(store: fixture.store, processor: SandboxProcessor(), timeout: .seconds(5))
            let result = try await service.pay(
                fixture.newOrder(credit, breakdown, transaction: "fee1"), token: testToken())
            #expect(result.order.totals.fee == breakdown.fee)
            #expect(result.order.totals.total == breakdown.total)
            #expect(result.order.payment.amount == breakdown.total)
        }
    }

    @Test("migrations are recorded once, however often the store opens")
    func migrationsOnce() async throws {
        try await StoreFixture.with { fixture in
            _ = try SQLiteOrderStore(path: fixture.path)
            _ = try SQLiteOrderStore(path: fixture.path)
            let names = try Connection(path: fixture.path).appliedMigrations()
            #expect(names == StoreSchema.migrations.map(\.name))
            #expect(try await fixture.counts()["schema_migrations"] == Int64(StoreSchema.migrations.count))
            let error = #expect(throws: OrderStoreError.self) {
                try SQLiteOrderStore(path: fixture.folder.path("no/dir/x.sqlite"))
            }
            #expect(error?.code == .storage)
        }
    }

    @Test("no PAN, cryptogram or expiry reaches the database file, the WAL or the order JSON")
    func noSecretsStored() async throws {
        try await StoreFixture.with { fixture in
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
    }

    @Test("an in-memory store (sqlite::memory:) takes a payment too")
    func inMemory() async throws {
        let (store, checkout, breakdown) = try await inMemoryStore(mugs: 2)
        let configuration = StoreConfiguration.demo
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
        let store = try await location.open()
        #expect(try await store.checkout(id: "chk_none") == nil)
        #expect(try OrderStoreLocation(parsing: "postgres://x") == .postgres(uri: "postgres://x"))
        #expect(
            try OrderStoreLocation(parsing: "postgresql:///db?host=/tmp/s")
                == .postgres(uri: "postgresql:///db?host=/tmp/s"))
        #expect(OrderStoreLocation.postgres(uri: "postgres://u:secret@h/db").redacted == "postgres://u:***@h/db")
        #expect(throws: OrderStoreError(.invalidLocation, "")) { try OrderStoreLocation(parsing: "mysql://x") }
        #expect(throws: OrderStoreError(.invalidLocation, "")) { try OrderStoreLocation(parsing: "sqlite:") }
    }

    @Test(
        "a payment settles once however many reconcilers on however many instances race",
        arguments: StoreBackend.available)
    func settleOnce(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (pending, checkout, breakdown) = try await fixture.pendingOrder(transaction: "st01")
            let stores = [fixture.store, try await fixture.another(), try await fixture.another()]
            let charge = ProcessorCharge(
                reference: "ch_1", idempotencyKey: "st01",
                amount: Money(minorUnits: breakdown.total, currency: .usDollar),
                status: .approved)
            let settled = try await withThrowingTaskGroup(of: Order?.self) { group in
                for index in 0..<12 {
                    let store = stores[index % stores.count]
                    group.addTask { try await store.settlePayment(orderID: pending.id, charge: charge) }
                }
                return try await group.reduce(into: [Order?]()) { $0.append($1) }
            }
            #expect(settled.compactMap { $0 }.count == 1)
            #expect(try await fixture.store.order(id: pending.id)?.status == .paid)
            let kinds = try await fixture.store.events(checkoutID: checkout.id).map(\.kind)
            #expect(kinds.filter { $0 == "paymentReconciled" }.count == 1)
        }
    }

    @Test("PostgreSQL: migrations are recorded once however many instances open the database at once")
    func postgresMigrationsOnce() async throws {
        guard TestPostgres.uri != nil else { return }
        let uri = try await TestPostgres.freshSchema()
        let stores = try await withThrowingTaskGroup(of: PostgresOrderStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresOrderStore(uri: uri, poolSize: 1) } }
            return try await group.reduce(into: [PostgresOrderStore]()) { $0.append($1) }
        }
        #expect(try await stores[0].appliedMigrations() == StoreSchema.migrations.map(\.name))
        let error = await #expect(throws: OrderStoreError.self) {
            try await PostgresOrderStore(uri: "postgresql:///nope?host=/nonexistent", poolSize: 1)
        }
        #expect(error?.code == .storage)
    }

    @Test("PostgreSQL: reads survive connections the server cut; the pool reconnects by itself")
    func postgresLostConnections() async throws {
        guard TestPostgres.uri != nil else { return }
        try await StoreFixture.with(.postgres) { fixture in
            let (checkout, _) = try await fixture.checkout()
            // Cut both of the store's pooled connections (the pool has two; each call holds one for a moment).
            let pool = try #require(fixture.store as? PostgresOrderStore).pool
            async let first = pool.withConnection { try $0.query("SELECT pg_backend_pid() AS p, pg_sleep(0.3)") }
            async let second = pool.withConnection { try $0.query("SELECT pg_backend_pid() AS p, pg_sleep(0.3)") }
            let pids = try await (first + second).map { try $0.int64("p") }
            #expect(Set(pids).count == 2)
            for pid in pids {
                try await fixture.execute(sqlite: "", postgres: "SELECT pg_terminate_backend(\(pid))")
            }
            #expect(try await fixture.store.checkout(id: checkout.id) == checkout)
            try await fixture.store.updateCheckout(checkout.applyingCoupon("WELCOME10"))
            #expect(try await fixture.store.checkout(id: checkout.id)?.couponCode == "WELCOME10")
        }
    }

    @Test(
        "a move from a state the order is not in changes nothing: no row, no event, on either backend",
        arguments: StoreBackend.available)
    func unexpectedStateChangesNothing(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let (pending, checkout, _) = try await fixture.pendingOrder(transaction: "us01")
            // Not paid yet: no fulfilment, no void.
            await #expect(throws: OrderStoreError(.conflict, "")) {
                try await fixture.store.recordFulfillment(
                    orderID: pending.id, FulfillmentStep(status: .shipped, at: fixedNow))
            }
            await #expect(throws: OrderStoreError(.conflict, "")) {
                try await fixture.store.recordVoid(orderID: pending.id)
            }
            let paid = try await fixture.store.completePayment(
                orderID: pending.id, outcome: .decided(.approved(reference: "r1")))
            let counts = try await fixture.counts()
            let events = try await fixture.store.events(checkoutID: checkout.id)
            // Paid: the same answer again, or a look-up that agrees, tells nothing new; nor is it refundable beyond its
            // total.
            #expect(
                try await fixture.store.completePayment(
                    orderID: pending.id, outcome: .decided(.approved(reference: "r1"))) == paid)
            let agreeing = ProcessorCharge(
                reference: "r1", idempotencyKey: "us01",
                amount: Money(minorUnits: paid.totals.total, currency: .usDollar),
                status: .approved)
            #expect(try await fixture.store.settlePayment(orderID: pending.id, charge: agreeing) == nil)
            guard
                case .exceedsRemaining = try await fixture.store.beginRefund(
                    orderID: pending.id, amount: paid.totals.total + 1, idempotencyKey: "rf-too-much")
            else { throw HarnessError("a refund beyond the total was reserved") }
            #expect(try await fixture.counts() == counts)
            #expect(try await fixture.store.events(checkoutID: checkout.id) == events)
            #expect(try await fixture.store.order(id: pending.id) == paid)
            #expect(try await fixture.column("SELECT count(*) FROM refunds") == ["0"])
        }
    }
}

import ApplePay
import Foundation
import MerchantCore
import MerchantStore
import TestSupport
import Testing

/// ``ProviderEventStore`` on SQLite and PostgreSQL: provider events applied once, only from the states they expect.
@Suite("Provider events applied to the order store")
struct ProviderEventStoreTests {
    /// A store fixture with one order of `transaction`, left `pending` (or moved to `status`).
    static func order(_ fixture: StoreFixture, transaction: String, outcome: ChargeAttempt?) async throws -> Order {
        let (pending, _, _) = try await fixture.pendingOrder(transaction: transaction)
        guard let outcome else { return pending }
        return try await fixture.store.completePayment(orderID: pending.id, outcome: outcome)
    }

    @Test(
        "an unknown payment settles once; a pending one in flight does not; a replay and a wrong amount change nothing",
        arguments: StoreBackend.available)
    func settle(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let unknown = try await Self.order(
                fixture, transaction: "bb01", outcome: .unknown(ProcessorError(.timeout, "no answer")))
            let cutoff = fixedNow.addingTimeInterval(-60)
            var event = ProviderEvent(
                provider: "stripe", id: "evt_a", kind: .paymentSucceeded, merchantReference: "bb01",
                paymentReference: "pi_a", amount: unknown.payment.amount + 1, currencyCode: "USD")
            #expect(
                try await store.apply(event, settlingPendingBefore: cutoff) == .init(.mismatch, orderID: unknown.id))
            event.id = "evt_b"
            event.amount = unknown.payment.amount
            #expect(try await store.apply(event, settlingPendingBefore: cutoff) == .init(.applied, orderID: unknown.id))
            #expect(try await store.apply(event, settlingPendingBefore: cutoff) == .init(.duplicate))
            let paid = try #require(try await fixture.store.order(id: unknown.id))
            #expect(paid.status == .paid)
            #expect(paid.payment.processorReference == "pi_a")
            event.id = "evt_c"
            event.kind = .paymentFailed
            #expect(
                try await store.apply(event, settlingPendingBefore: cutoff) == .init(.noChange, orderID: unknown.id))

            // Pending and touched after the cutoff: its charge may be in flight, so the event waits for it.
            let pending = try await Self.order(fixture, transaction: "bb02", outcome: nil)
            let found = ProviderEvent(
                provider: "adyen", id: "AUTHORISATION:X:true", kind: .paymentSucceeded,
                merchantReference: pending.id)
            #expect(
                try await store.apply(found, settlingPendingBefore: cutoff) == .init(.noChange, orderID: pending.id))
            #expect(try await fixture.store.order(id: pending.id)?.status == .pending)
            var later = found
            later.id = "AUTHORISATION:X:true:again"
            #expect(
                try await store.apply(later, settlingPendingBefore: fixedNow.addingTimeInterval(1))
                    == .init(.applied, orderID: pending.id))
            let nobody = ProviderEvent(
                provider: "stripe", id: "evt_z", kind: .paymentSucceeded, merchantReference: "none")
            #expect(try await store.apply(nobody, settlingPendingBefore: cutoff) == .init(.orderNotFound))
        }
    }

    @Test(
        "refunds: our pending refund completed by its event, one made at the provider added, never above the total",
        arguments: StoreBackend.available)
    func refunds(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let order = try await Self.order(
                fixture, transaction: "cc01", outcome: .decided(.approved(reference: "PSP1")))
            let cutoff = fixedNow
            guard
                case .started(let ours, _) = try await fixture.store.beginRefund(
                    orderID: order.id, amount: 300, idempotencyKey: "refund-1")
            else { throw HarnessError("no refund") }
            let adyenRefund = ProviderEvent(
                provider: "adyen", id: "REFUND:R1:true", kind: .refundSucceeded, merchantReference: "cc01",
                paymentReference: "PSP1", reference: "R1", amount: 300, currencyCode: "USD")
            #expect(
                try await store.apply(adyenRefund, settlingPendingBefore: cutoff) == .init(.applied, orderID: order.id))
            let afterOurs = try #require(try await fixture.store.order(id: order.id))
            #expect(afterOurs.status == .partiallyRefunded)
            #expect(afterOurs.refunded == 300)
            let rows = try await fixture.column("SELECT processor_reference FROM refunds WHERE id = '\(ours.id)'")
            #expect(rows == ["R1"])

            // Made in the provider's dashboard: added, found by the provider's payment reference.
            let dashboard = ProviderEvent(
                provider: "adyen", id: "REFUND:R2:true", kind: .refundSucceeded, paymentReference: "PSP1",
                reference: "R2",
                amount: 200)
            #expect(
                try await store.apply(dashboard, settlingPendingBefore: cutoff) == .init(.applied, orderID: order.id))
            var again = dashboard
            again.id = "REFUND:R2:true:redelivered"
            #expect(try await store.apply(again, settlingPendingBefore: cutoff) == .init(.noChange, orderID: order.id))
            let tooMuch = ProviderEvent(
                provider: "adyen", id: "REFUND:R3:true", kind: .refundSucceeded, paymentReference: "PSP1",
                reference: "R3",
                amount: order.totals.total)
            #expect(
                try await store.apply(tooMuch, settlingPendingBefore: cutoff) == .init(.mismatch, orderID: order.id))
            #expect(try await fixture.store.order(id: order.id)?.refunded == 500)

            // A refund the provider refused: our pending one is cancelled.
            guard
                case .started = try await fixture.store.beginRefund(
                    orderID: order.id, amount: 100, idempotencyKey: "refund-2")
            else { throw HarnessError("no refund") }
            let failed = ProviderEvent(
                provider: "adyen", id: "REFUND:R4:false", kind: .refundFailed, paymentReference: "PSP1",
                reference: "R4",
                amount: 100)
            #expect(try await store.apply(failed, settlingPendingBefore: cutoff) == .init(.applied, orderID: order.id))
            let pendingLeft = try await fixture.column(
                "SELECT count(*) FROM refunds WHERE order_id = '\(order.id)' AND status = 'pending'")
            #expect(pendingLeft == ["0"])
        }
    }

    @Test(
        "a dispute is recorded once per provider reference, with the order's event", arguments: StoreBackend.available)
    func disputes(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let order = try await Self.order(
                fixture, transaction: "dd01", outcome: .decided(.approved(reference: "pay_1")))
            let opened = ProviderEvent(
                provider: "checkout", id: "evt_d1", kind: .disputeOpened, paymentReference: "pay_1", reference: "dsp_1",
                amount: 100, currencyCode: "USD", reason: "fraudulent")
            #expect(
                try await store.apply(opened, settlingPendingBefore: fixedNow) == .init(.applied, orderID: order.id))
            var second = opened
            second.id = "evt_d2"
            #expect(
                try await store.apply(second, settlingPendingBefore: fixedNow) == .init(.noChange, orderID: order.id))
            let disputes = try await store.disputes(orderID: order.id)
            #expect(disputes.map(\.reference) == ["dsp_1"])
            #expect(disputes.first?.reason == "fraudulent")
            let kinds = try await fixture.store.events(checkoutID: order.checkoutID).map(\.kind)
            #expect(kinds.last == "disputeOpened")
            #expect(try await fixture.store.order(id: order.id)?.status == .paid)
        }
    }
}

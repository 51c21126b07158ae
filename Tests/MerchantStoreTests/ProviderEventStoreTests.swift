import ApplePay
import Foundation
import MerchantCore
import MerchantStore
import MerchantTestSupport
import TestSupport
import Testing

/// ``ProviderEventStore`` on SQLite and PostgreSQL: provider events applied once, merged by ``PaymentStateMachine``.
@Suite("Provider events applied to the order store")
struct ProviderEventStoreTests {
    /// A store fixture with one order of `transaction`, left `pending` (or moved to `status`).
    static func order(_ fixture: StoreFixture, transaction: String, outcome: ChargeAttempt?) async throws -> Order {
        let (pending, _, _) = try await fixture.pendingOrder(transaction: transaction)
        guard let outcome else { return pending }
        return try await fixture.store.completePayment(orderID: pending.id, outcome: outcome)
    }

    @Test(
        "an unknown payment settles once; a replay and a wrong amount change nothing; a later failure keeps the approval as a discrepancy",
        arguments: StoreBackend.available)
    func settle(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let unknown = try await Self.order(
                fixture, transaction: "bb01", outcome: .unknown(ProcessorError(.timeout, "no answer")))
            var event = ProviderEvent(
                provider: "stripe", id: "evt_a", kind: .paymentSucceeded, merchantReference: "bb01",
                paymentReference: "pi_a", amount: unknown.payment.amount + 1, currencyCode: "USD")
            #expect(try await store.apply(event) == .init(.mismatch, orderID: unknown.id))
            event.id = "evt_b"
            event.amount = unknown.payment.amount
            #expect(try await store.apply(event) == .init(.applied, orderID: unknown.id))
            #expect(try await store.apply(event) == .init(.duplicate))
            let paid = try #require(try await fixture.store.order(id: unknown.id))
            #expect(paid.status == .paid)
            #expect(paid.payment.processorReference == "pi_a")
            event.id = "evt_c"
            event.kind = .paymentFailed
            #expect(try await store.apply(event) == .init(.discrepancy, orderID: unknown.id))
            #expect(try await fixture.store.order(id: unknown.id)?.status == .paid)
            let open = try await fixture.store.discrepancies(openOnly: true, limit: 10)
            #expect(open.map(\.orderID) == [unknown.id])
            #expect(open.first?.corrected == false)
            let nobody = ProviderEvent(
                provider: "stripe", id: "evt_z", kind: .paymentSucceeded, merchantReference: "none")
            #expect(try await store.apply(nobody) == .init(.orderNotFound))
        }
    }

    @Test(
        "a webhook that arrives while the charge is in flight is applied, and the call's lost answer does not undo it",
        arguments: StoreBackend.available)
    func webhookWhileInFlight(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let pending = try await Self.order(fixture, transaction: "bb02", outcome: nil)
            let found = ProviderEvent(
                provider: "adyen", id: "AUTHORISATION:X:true", kind: .paymentSucceeded,
                merchantReference: pending.id, paymentReference: "PSPX")
            #expect(try await store.apply(found) == .init(.applied, orderID: pending.id))
            #expect(try await fixture.store.order(id: pending.id)?.status == .paid)
            // The call then times out: less certain than the webhook, so the order stays paid.
            let after = try await fixture.store.completePayment(
                orderID: pending.id, outcome: .unknown(ProcessorError(.timeout, "no answer")))
            #expect(after.status == .paid)
            #expect(after.payment.processorReference == "PSPX")
            #expect(try await fixture.store.discrepancies(openOnly: true, limit: 10).isEmpty)
        }
    }

    @Test(
        "a payment recorded declined that the provider captured becomes paid, with the discrepancy, and locks its checkout",
        arguments: StoreBackend.available)
    func declinedThenCaptured(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let (pending, checkout, breakdown) = try await fixture.pendingOrder(transaction: "bb03")
            let declined = try await fixture.store.completePayment(
                orderID: pending.id, outcome: .decided(.declined(.doNotHonor)))
            #expect(declined.status == .declined)
            let captured = ProviderEvent(
                provider: "checkout", id: "evt_cap", kind: .paymentSucceeded, merchantReference: "bb03",
                paymentReference: "pay_3", amount: declined.payment.amount, currencyCode: "USD")
            #expect(try await store.apply(captured) == .init(.discrepancy, orderID: declined.id))
            let corrected = try #require(try await fixture.store.order(id: declined.id))
            #expect(corrected.status == .paid)
            #expect(corrected.payment.processorReference == "pay_3")
            let discrepancy = try #require(try await fixture.store.discrepancies(openOnly: true, limit: 10).first)
            #expect(discrepancy.recorded == "declined")
            #expect(discrepancy.provider == "approved")
            #expect(discrepancy.corrected)
            let kinds = try await fixture.store.events(checkoutID: declined.checkoutID).map(\.kind)
            #expect(kinds.suffix(2) == ["paymentCorrected", "paymentDiscrepancy"])
            // The checkout is locked again: a second token is refused.
            let second = try await fixture.store.beginPayment(
                fixture.newOrder(checkout, breakdown, transaction: "bb03-second"))
            guard case .checkoutLocked(let locked) = second else {
                Issue.record("a corrected checkout must be locked, got \(second)")
                return
            }
            #expect(locked.id == declined.id)
            let resolved = try await fixture.store.resolveDiscrepancy(
                id: discrepancy.id, resolution: "shipped: the provider captured it")
            #expect(resolved?.resolution == "shipped: the provider captured it")
            #expect(try await fixture.store.discrepancies(openOnly: true, limit: 10).isEmpty)
        }
    }

    @Test(
        "a checkout paid again after a decline the provider later captured: both kept, the double charge listed",
        arguments: StoreBackend.available)
    func doubleCharge(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let (pending, checkout, breakdown) = try await fixture.pendingOrder(transaction: "bb04")
            let declined = try await fixture.store.completePayment(
                orderID: pending.id, outcome: .decided(.declined(.doNotHonor)))
            guard
                case .started(let again) = try await fixture.store.beginPayment(
                    fixture.newOrder(checkout, breakdown, transaction: "bb04-again"))
            else { throw HarnessError("the declined checkout must take a second token") }
            _ = try await fixture.store.completePayment(
                orderID: again.id, outcome: .decided(.approved(reference: "pay_again")))
            let late = ProviderEvent(
                provider: "checkout", id: "evt_late", kind: .paymentSucceeded, merchantReference: "bb04",
                paymentReference: "pay_first")
            #expect(try await store.apply(late) == .init(.discrepancy, orderID: declined.id))
            #expect(try await fixture.store.order(id: declined.id)?.status == .declined)
            let discrepancy = try #require(try await fixture.store.discrepancies(openOnly: true, limit: 10).first)
            #expect(discrepancy.doubleChargeOrderID == again.id)
            #expect(discrepancy.corrected == false)
            #expect(discrepancy.processorReference == "pay_first")
        }
    }

    @Test(
        "a payment the provider decides later stays processing, locked, until its webhook settles it",
        arguments: StoreBackend.available)
    func processingThenWebhook(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let processing = try await Self.order(
                fixture, transaction: "bb05", outcome: .decided(.processing(reference: "PSP5")))
            #expect(processing.status == .processing)
            #expect(processing.payment.status == .processing)
            #expect(processing.payment.processorReference == "PSP5")
            let unsettled = try await fixture.store.unsettledOrders(
                updatedBefore: fixedNow.addingTimeInterval(3600), limit: 10)
            #expect(unsettled.map(\.id).contains(processing.id))
            // A look-up that still finds it undecided changes nothing.
            let still = ProcessorCharge(
                reference: "PSP5", idempotencyKey: "bb05",
                amount: Money(minorUnits: processing.payment.amount, currency: .usDollar),
                status: .processing)
            #expect(try await fixture.store.settlePayment(orderID: processing.id, charge: still) == nil)
            let failed = ProviderEvent(
                provider: "adyen", id: "AUTHORISATION:PSP5:false", kind: .paymentFailed, paymentReference: "PSP5",
                reason: "Refused")
            #expect(try await store.apply(failed) == .init(.applied, orderID: processing.id))
            let settled = try #require(try await fixture.store.order(id: processing.id))
            #expect(settled.status == .declined)
            #expect(settled.payment.failureCode == "Refused")
        }
    }

    @Test(
        "refunds: ours completed by its reference or key (never its amount), one made at the provider added, a failure given back",
        arguments: StoreBackend.available)
    func refunds(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let order = try await Self.order(
                fixture, transaction: "cc01", outcome: .decided(.approved(reference: "PSP1")))
            // Two refunds of one amount, in flight together: each is matched by its own key.
            guard
                case .started(let first, _) = try await fixture.store.beginRefund(
                    orderID: order.id, amount: 300, idempotencyKey: "refund-1"),
                case .started(let second, _) = try await fixture.store.beginRefund(
                    orderID: order.id, amount: 300, idempotencyKey: "refund-2")
            else { throw HarnessError("no refund") }
            let secondDone = ProviderEvent(
                provider: "adyen", id: "REFUND:R2:true", kind: .refundSucceeded, merchantReference: "cc01",
                paymentReference: "PSP1", reference: "R2", refundKey: "refund-2", amount: 300, currencyCode: "USD")
            #expect(try await store.apply(secondDone) == .init(.applied, orderID: order.id))
            // The same refund again under another event id: known by its reference.
            var again = secondDone
            again.id = "REFUND:R2:true:redelivered"
            #expect(try await store.apply(again) == .init(.noChange, orderID: order.id))
            let afterSecond = try #require(try await fixture.store.order(id: order.id))
            #expect(afterSecond.refunded == 300)
            #expect(try await fixture.column("SELECT status FROM refunds WHERE id = '\(first.id)'") == ["pending"])
            #expect(
                try await fixture.column("SELECT processor_reference FROM refunds WHERE id = '\(second.id)'") == ["R2"])
            // A refund event of the same amount with neither our key nor a known reference is not ours: added.
            let dashboard = ProviderEvent(
                provider: "adyen", id: "REFUND:R9:true", kind: .refundSucceeded, paymentReference: "PSP1",
                reference: "R9", amount: 300)
            #expect(try await store.apply(dashboard) == .init(.applied, orderID: order.id))
            #expect(try await fixture.column("SELECT status FROM refunds WHERE id = '\(first.id)'") == ["pending"])
            #expect(try await fixture.store.order(id: order.id)?.refunded == 600)
            // More than is left (the pending first refund reserved its 300): a mismatch.
            let tooMuch = ProviderEvent(
                provider: "adyen", id: "REFUND:R3:true", kind: .refundSucceeded, paymentReference: "PSP1",
                reference: "R3", amount: order.totals.total)
            #expect(try await store.apply(tooMuch) == .init(.mismatch, orderID: order.id))
            // The first refund fails at the provider: kept as failed, its amount free again.
            let failed = ProviderEvent(
                provider: "adyen", id: "REFUND_FAILED:R1", kind: .refundFailed, paymentReference: "PSP1",
                reference: "R1", refundKey: "refund-1", amount: 300)
            #expect(try await store.apply(failed) == .init(.applied, orderID: order.id))
            #expect(try await fixture.column("SELECT status FROM refunds WHERE id = '\(first.id)'") == ["failed"])
            // A failure of a refund that had succeeded gives its amount back.
            let reversed = ProviderEvent(
                provider: "stripe", id: "evt_refund_failed", kind: .refundFailed, paymentReference: "PSP1",
                reference: "R2")
            #expect(try await store.apply(reversed) == .init(.applied, orderID: order.id))
            let final = try #require(try await fixture.store.order(id: order.id))
            #expect(final.refunded == 300)
            #expect(final.status == .partiallyRefunded)
            // A failure of a refund nobody knows changes nothing (never "the one of the same amount").
            let stranger = ProviderEvent(
                provider: "stripe", id: "evt_other_failed", kind: .refundFailed, paymentReference: "PSP1",
                reference: "re_unknown", amount: 300)
            #expect(try await store.apply(stranger) == .init(.noChange, orderID: order.id))
            #expect(try await fixture.store.order(id: order.id)?.refunded == 300)
        }
    }

    @Test(
        "a void the provider decided later (Adyen's reversal) voids a paid order; one with refunds is a discrepancy",
        arguments: StoreBackend.available)
    func voidDecidedLater(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any ProviderEventStore).self) { fixture, store in
            let paid = try await Self.order(
                fixture, transaction: "ee01", outcome: .decided(.approved(reference: "PSPV")))
            let voided = ProviderEvent(
                provider: "adyen", id: "CANCEL_OR_REFUND:MOD1:true", kind: .paymentVoided, paymentReference: "PSPV",
                reference: "MOD1")
            #expect(try await store.apply(voided) == .init(.applied, orderID: paid.id))
            #expect(try await fixture.store.order(id: paid.id)?.status == .voided)
            let refunded = try await Self.order(
                fixture, transaction: "ee02", outcome: .decided(.approved(reference: "PSPW")))
            guard
                case .started(let refund, _) = try await fixture.store.beginRefund(
                    orderID: refunded.id, amount: 100, idempotencyKey: "ee02-refund")
            else { throw HarnessError("no refund") }
            _ = try await fixture.store.completeRefund(id: refund.id, processorReference: "RF")
            let late = ProviderEvent(
                provider: "adyen", id: "CANCEL_OR_REFUND:MOD2:true", kind: .paymentVoided, paymentReference: "PSPW",
                reference: "MOD2")
            #expect(try await store.apply(late) == .init(.discrepancy, orderID: refunded.id))
            #expect(try await fixture.store.order(id: refunded.id)?.status == .partiallyRefunded)
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
                try await store.apply(opened) == .init(.applied, orderID: order.id))
            var second = opened
            second.id = "evt_d2"
            #expect(
                try await store.apply(second) == .init(.noChange, orderID: order.id))
            let disputes = try await store.disputes(orderID: order.id)
            #expect(disputes.map(\.reference) == ["dsp_1"])
            #expect(disputes.first?.reason == "fraudulent")
            let kinds = try await fixture.store.events(checkoutID: order.checkoutID).map(\.kind)
            #expect(kinds.last == "disputeOpened")
            #expect(try await fixture.store.order(id: order.id)?.status == .paid)
        }
    }
}

import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("A subscription cycle's charge attempt: recorded before it is sent, resolved before anything moves on")
struct SubscriptionChargeAttemptTests {
    static let hour: TimeInterval = 3600
    static let day: TimeInterval = 86_400

    /// On a new store of `backend`: a subscription due at `fixedNow` whose kept method is at `processor`, and the
    /// scheduler on it.
    static func with(
        _ backend: StoreBackend, _ processor: UndecidedProcessor, index: Int,
        _ body: (StoreFixture, any SubscriptionStore, SubscriptionService, Subscription) async throws -> Void
    ) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let subscription = try await SubscriptionChargeRaceTests.subscribed(fixture, processor, index: index)
            try await body(fixture, store, fixture.scheduler(on: store, processor), subscription)
        }
    }

    static func key(_ subscription: Subscription, cycle: Int = 1, attempt: Int = 0) -> String {
        "\(subscription.id):c\(cycle):a\(attempt)"
    }

    @Test(
        "a timed-out cycle, then a cancel: the next pass looks it up, records the approval and voids it; no new key",
        arguments: StoreBackend.available)
    func cancelWhileUnknown(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .lost)
        try await Self.with(backend, processor, index: 30) { fixture, store, service, subscription in
            let key = Self.key(subscription)
            #expect(await service.chargeDue(now: fixedNow).isEmpty, "the answer was lost: nothing recorded")
            let waiting = try #require(try await store.subscription(id: subscription.id))
            #expect(waiting.unresolvedCharge == SubscriptionChargeAttempt(idempotencyKey: key, since: fixedNow))
            #expect(waiting.cycle == 1 && waiting.attempt == 0)

            // The customer cancels while the charge's outcome is unknown: nextChargeAt is cleared, the attempt kept.
            let cancelled = try await service.cancel(id: subscription.id, by: "customer")
            #expect(cancelled.status == .cancelled && cancelled.nextChargeAt == nil)
            #expect(cancelled.unresolvedCharge?.idempotencyKey == key)

            // Within its time limit the attempt may still be in flight at another instance: not looked up yet.
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(5)).isEmpty)
            #expect(processor.lookUps.isEmpty)

            // The next pass looks it up (a look-up, not a resend), finds it approved, records it and gives it back.
            processor.answer(.decided)
            let recorded = await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour))
            #expect(recorded.map(\.idempotencyKey) == [key] && recorded.map(\.status) == ["approved"])
            #expect(processor.lookUps == [key])
            #expect(processor.chargeRequests == [key], "one charge request, never a new key")
            let charges = try await store.subscriptionCharges(subscriptionID: subscription.id)
            #expect(charges.count == 1)
            let charge = try #require(charges.first)
            #expect(
                charge.refundReference?.hasPrefix("void:") == true && charge.refundedAt != nil && !charge.refundOwed)
            #expect(try await processor.inner.charge(idempotencyKey: key)?.status == .voided)
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.status == .cancelled && after.cycle == 1 && after.nextChargeAt == nil)
            #expect(after.unresolvedCharge == nil)
            #expect(try await fixture.subscriptionEventKinds(subscription) == ["subscriptionChargeRefunded"])

            // Nothing more, ever.
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(70 * Self.day)).isEmpty)
            #expect(processor.chargeRequests == [key])
        }
    }

    @Test(
        "an UNLINK while a cycle is processing at the provider: resolved by look-up as declined, recorded, no retry",
        arguments: StoreBackend.available)
    func unlinkWhileProcessing(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .processing)
        try await Self.with(backend, processor, index: 31) { _, store, service, subscription in
            processor.inner.declineNextStoredMethodCharges([.insufficientFunds])
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            let key = Self.key(subscription)
            // What Apple's UNLINK does to it (SubscriptionService.change(for:)), applied as the event is.
            let unlink: @Sendable (Subscription) -> Subscription? = { current in
                var next = current
                next.status = .unlinked
                next.statusReason = "user"
                next.nextChargeAt = nil
                return next
            }
            #expect(
                try await store.applyTokenEvent(
                    eventID: "evt-unlink-31", eventType: "UNLINK",
                    merchantTokenIdentifier: try #require(subscription.merchantTokenIdentifier), change: unlink) == 1)
            #expect(try await store.subscription(id: subscription.id)?.unresolvedCharge?.idempotencyKey == key)
            processor.decide()
            let recorded = await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour))
            #expect(recorded.map(\.status) == ["declined"])
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.status == .unlinked && after.unresolvedCharge == nil && after.attempt == 0)
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(10 * Self.day)).isEmpty)
            #expect(processor.chargeRequests == [key])
        }
    }

    @Test(
        "a timed-out cycle, then two more cycles go by: catch-up waits for the resolution, then skips and charges",
        arguments: StoreBackend.available)
    func catchUpWaitsForTheResolution(_ backend: StoreBackend) async throws {
        // A processor that keeps its keys (ours, docs/PROCESSOR-PROTOCOL.md): it can still be asked two months on.
        // (With a 24-hour key lifetime the attempt would wait for a person instead: pastTheKeyLifetime.)
        let processor = UndecidedProcessor(answer: .lost, resolution: .lookUp(keyLifetime: nil))
        try await Self.with(backend, processor, index: 32) { _, store, service, subscription in
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            // The provider has not decided when it is asked: 65 days on, cycles 2 and 3 are due too.
            processor.decide(false)
            let later = fixedNow.addingTimeInterval(65 * Self.day)
            #expect(await service.chargeDue(now: later).isEmpty)
            var waiting = try #require(try await store.subscription(id: subscription.id))
            #expect(waiting.cycle == 1 && waiting.skippedCycles == 0 && waiting.unresolvedCharge != nil)
            #expect(processor.chargeRequests == [Self.key(subscription)], "no next cycle while the first is unknown")

            // Decided: cycle 1 is recorded, then the catch-up rule passes over cycle 2 and charges cycle 3.
            processor.decide()
            processor.answer(.decided)
            let recorded = await service.chargeDue(now: later)
            #expect(recorded.map(\.cycle) == [1, 3] && recorded.allSatisfy { $0.status == "approved" })
            waiting = try #require(try await store.subscription(id: subscription.id))
            #expect(waiting.cycle == 4 && waiting.skippedCycles == 1 && waiting.unresolvedCharge == nil)
            #expect(processor.chargeRequests == [Self.key(subscription), Self.key(subscription, cycle: 3)])
        }
    }

    @Test(
        "an attempt older than the provider's key lifetime is never sent again, and is listed for a person",
        arguments: StoreBackend.available)
    func pastTheKeyLifetime(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .lost)
        try await Self.with(backend, processor, index: 33) { _, store, service, subscription in
            let key = Self.key(subscription)
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            processor.decide(false)
            // Within the 24 hours: looked up, still undecided; not for a person yet.
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour)).isEmpty)
            #expect(processor.lookUps == [key])
            #expect(try await service.chargesNeedingAttention(now: fixedNow.addingTimeInterval(Self.hour)).isEmpty)

            // Past them: nothing is asked or sent (a Checkout.com "look-up" sends the request again), whatever
            // time passes; the attempt is listed for a person.
            processor.answer(.decided)
            processor.decide()
            for days in [1.5, 3, 40] {
                #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(days * Self.day)).isEmpty)
            }
            #expect(processor.chargeRequests == [key], "no second charge request with any key")
            #expect(processor.lookUps == [key])
            let listed = try await service.chargesNeedingAttention(now: fixedNow.addingTimeInterval(2 * Self.day))
            #expect(listed.map(\.id) == [subscription.id])
            #expect(listed.first?.unresolvedCharge?.idempotencyKey == key)
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.cycle == 1 && after.skippedCycles == 0)
            #expect(try await store.subscriptionCharges(subscriptionID: subscription.id).isEmpty)
        }
    }

    @Test(
        "a look-up finding nothing charged ends the attempt: the cycle is charged again under the same key",
        arguments: StoreBackend.available)
    func nothingCharged(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .decided)
        try await Self.with(backend, processor, index: 34) { _, store, service, subscription in
            // An attempt recorded by an instance that died before it sent the charge.
            var attempted = subscription
            attempted.unresolvedCharge = SubscriptionChargeAttempt(
                idempotencyKey: Self.key(subscription), since: fixedNow)
            _ = try #require(
                try await store.updateSubscription(attempted, expectedVersion: subscription.version, charge: nil))
            let recorded = await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour))
            #expect(recorded.map(\.idempotencyKey) == [Self.key(subscription)])
            #expect(processor.lookUps == [Self.key(subscription)])
            #expect(processor.chargeRequests == [Self.key(subscription)])
            #expect(try await store.subscription(id: subscription.id)?.cycle == 2)
        }
    }

    @Test(
        "a look-up that cannot tell, within the key lifetime: the same key is sent again and replayed, never a new one",
        arguments: StoreBackend.available)
    func lookUpUnavailableResendsTheSameKey(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .lost)
        try await Self.with(backend, processor, index: 38) { _, store, service, subscription in
            let key = Self.key(subscription)
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            processor.answer(.decided)
            processor.lookUps(available: false)
            let recorded = await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour))
            #expect(recorded.map(\.idempotencyKey) == [key] && recorded.map(\.status) == ["approved"])
            #expect(recorded.first?.chargedAt == fixedNow, "charged when first sent")
            #expect(processor.chargeRequests == [key, key], "the same key again")
            #expect(processor.inner.chargeCount == 1, "charged once at the provider")
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.cycle == 2 && after.unresolvedCharge == nil)
        }
    }

    @Test(
        "cancelled while unknown and the look-up cannot tell: nothing is sent again; the webhook settles and it is given back",
        arguments: StoreBackend.available)
    func cancelledLookUpUnavailableWaitsForTheWebhook(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .lost)
        try await Self.with(backend, processor, index: 39) { fixture, store, service, subscription in
            let key = Self.key(subscription)
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            _ = try await service.cancel(id: subscription.id, by: "customer")
            processor.answer(.decided)
            processor.lookUps(available: false)
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour)).isEmpty)
            #expect(processor.chargeRequests == [key], "an ended subscription is not charged again")
            let ledger = try #require(try await processor.inner.charge(idempotencyKey: key))
            let events = try #require(fixture.store as? any ProviderEventStore)
            let result = try await events.apply(
                ProviderEvent(
                    provider: "checkout", id: "evt_39", kind: .paymentSucceeded, merchantReference: key,
                    paymentReference: ledger.reference, amount: 999, currencyCode: "USD"))
            #expect(result == ProviderEventResult(.applied, subscriptionID: subscription.id))
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(2 * Self.hour)).isEmpty)
            let charge = try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            #expect(charge.refundReference?.hasPrefix("void:") == true && !charge.refundOwed)
            #expect(try await processor.inner.charge(idempotencyKey: key)?.status == .voided)
            #expect(try await store.subscription(id: subscription.id)?.unresolvedCharge == nil)
        }
    }

    @Test(
        "Adyen-like: a cycle answered Received (processing) waits, never looked up, and its webhook settles it",
        arguments: StoreBackend.available)
    func processingSettledByWebhook(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(
            answer: .processing, resolution: .webhook(keyLifetime: .seconds(31 * 86_400)))
        try await Self.with(backend, processor, index: 35) { fixture, store, service, subscription in
            let key = Self.key(subscription)
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            let waiting = try #require(try await store.subscription(id: subscription.id))
            let reference = try #require(waiting.unresolvedCharge?.processorReference)
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour)).isEmpty)
            #expect(processor.lookUps.isEmpty, "only the webhook can tell")

            let events = try #require(fixture.store as? any ProviderEventStore)
            let authorised = ProviderEvent(
                provider: "adyen", id: "AUTH-35", kind: .paymentSucceeded, merchantReference: key,
                paymentReference: reference, amount: 999, currencyCode: "USD")
            #expect(
                try await events.apply(authorised) == ProviderEventResult(.applied, subscriptionID: subscription.id))
            #expect(try await events.apply(authorised).outcome == .duplicate)
            var again = authorised
            again.id = "AUTH-35-again"
            #expect(try await events.apply(again).outcome == .noChange)

            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.cycle == 2 && after.status == .active && after.unresolvedCharge == nil)
            let charges = try await store.subscriptionCharges(subscriptionID: subscription.id)
            #expect(charges.map(\.status) == ["approved"] && charges.first?.processorReference == reference)
            // The next cycle is charged as usual, with its own key.
            processor.answer(.decided)
            let second = try #require(after.nextChargeAt)
            #expect(await service.chargeDue(now: second).map(\.cycle) == [2])
            #expect(processor.chargeRequests == [key, Self.key(subscription, cycle: 2)])
        }
    }

    @Test(
        "Adyen-like: cancelled while processing, the webhook's approval is recorded and given back by the next pass",
        arguments: StoreBackend.available)
    func processingCancelledThenApproved(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(
            answer: .processing, resolution: .webhook(keyLifetime: .seconds(31 * 86_400)))
        try await Self.with(backend, processor, index: 36) { fixture, store, service, subscription in
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            let reference = try #require(try await store.subscription(id: subscription.id)?.unresolvedCharge)
                .processorReference
            _ = try await service.cancel(id: subscription.id, by: "customer")
            // The webhook names the payment by the provider's reference only.
            let events = try #require(fixture.store as? any ProviderEventStore)
            let result = try await events.apply(
                ProviderEvent(provider: "adyen", id: "AUTH-36", kind: .paymentSucceeded, paymentReference: reference))
            #expect(result.outcome == .applied && result.subscriptionID == subscription.id)
            #expect(try await store.chargesOwingRefund(limit: 10).map(\.subscriptionID) == [subscription.id])
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour)).isEmpty)
            let charge = try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            #expect(charge.status == "approved" && charge.refundedAt != nil && !charge.refundOwed)
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.status == .cancelled && after.cycle == 1 && after.unresolvedCharge == nil)
            #expect(processor.chargeRequests.count == 1)
        }
    }

    @Test(
        "a refund and a dispute webhook on a subscription charge are recorded against it, not orderNotFound",
        arguments: StoreBackend.available)
    func refundAndDisputeWebhooks(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .decided)
        try await Self.with(backend, processor, index: 37) { fixture, store, service, subscription in
            let charged = await service.chargeDue(now: fixedNow)
            let reference = try #require(charged.first?.processorReference)
            let events = try #require(fixture.store as? any ProviderEventStore)
            let refund = ProviderEvent(
                provider: "stripe", id: "evt_re_37", kind: .refundSucceeded, paymentReference: reference,
                reference: "re_37", amount: 999, currencyCode: "USD")
            #expect(try await events.apply(refund) == ProviderEventResult(.applied, subscriptionID: subscription.id))
            var again = refund
            again.id = "evt_re_37_again"
            #expect(try await events.apply(again).outcome == .noChange)
            let charge = try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            #expect(charge.refundReference == "refund:re_37" && charge.refundedAt != nil)
            #expect(try await fixture.subscriptionEventKinds(subscription) == ["subscriptionChargeRefunded"])

            let dispute = ProviderEvent(
                provider: "stripe", id: "evt_dp_37", kind: .disputeOpened, paymentReference: reference,
                reference: "dp_37", amount: 999, currencyCode: "USD", reason: "fraudulent")
            #expect(try await events.apply(dispute) == ProviderEventResult(.applied, subscriptionID: subscription.id))
            let orderID = try #require(subscription.orderID)
            let disputes = try await events.disputes(orderID: orderID)
            #expect(disputes.map(\.reference) == ["dp_37"])
            #expect(disputes.first?.subscriptionChargeKey == Self.key(subscription))
            // An event naming nothing we know is still orderNotFound.
            let stray = ProviderEvent(
                provider: "stripe", id: "evt_stray", kind: .refundSucceeded, paymentReference: "ch_unknown",
                reference: "re_x", amount: 1)
            #expect(try await events.apply(stray).outcome == .orderNotFound)
        }
    }

    @Test(
        "a void webhook on a recorded subscription charge marks it given back, once", arguments: StoreBackend.available)
    func voidWebhook(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .decided)
        try await Self.with(backend, processor, index: 40) { fixture, store, service, subscription in
            let reference = try #require(await service.chargeDue(now: fixedNow).first?.processorReference)
            let events = try #require(fixture.store as? any ProviderEventStore)
            let voided = ProviderEvent(
                provider: "adyen", id: "CANCEL-40", kind: .paymentVoided, paymentReference: reference)
            #expect(try await events.apply(voided) == ProviderEventResult(.applied, subscriptionID: subscription.id))
            var again = voided
            again.id = "CANCEL-40-again"
            #expect(try await events.apply(again).outcome == .noChange)
            let charge = try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            #expect(charge.refundReference == "void:" + reference && charge.refundedAt != nil)
        }
    }

    @Test(
        "refunds made at the provider record their amounts: two partial ones add up, one beyond what is left is a mismatch, a failed one takes its amount back",
        arguments: StoreBackend.available)
    func partialRefundWebhooks(_ backend: StoreBackend) async throws {
        let processor = UndecidedProcessor(answer: .decided)
        try await Self.with(backend, processor, index: 41) { fixture, store, service, subscription in
            let reference = try #require(await service.chargeDue(now: fixedNow).first?.processorReference)
            let events = try #require(fixture.store as? any ProviderEventStore)
            func refund(_ id: String, _ kind: ProviderEvent.Kind, _ refund: String, _ amount: Int64) async throws
                -> ProviderEventResult.Outcome
            {
                try await events.apply(
                    ProviderEvent(
                        provider: "stripe", id: id, kind: kind, paymentReference: reference, reference: refund,
                        amount: amount, currencyCode: "USD", reason: kind == .refundFailed ? "expired_card" : nil)
                ).outcome
            }
            func charge() async throws -> SubscriptionCharge {
                try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            }
            #expect(subscription.amount == 999)
            #expect(try await refund("evt_a", .refundSucceeded, "re_a", 300) == .applied)
            #expect(try await refund("evt_b", .refundSucceeded, "re_b", 400) == .applied)
            #expect(try await refund("evt_b_again", .refundSucceeded, "re_b", 400) == .noChange)
            var now = try await charge()
            #expect(now.refunded == 700 && now.refundedAt != nil && now.refundReference == "refund:re_a")
            // (Recorded at one instant on the fixture's clock: in no particular order.)
            let byReference = { (charge: SubscriptionCharge) in charge.refunds.sorted { $0.reference! < $1.reference! }
            }
            #expect(byReference(now).map(\.reference) == ["re_a", "re_b"])
            #expect(now.refunds.allSatisfy { $0.status == .succeeded })
            // 299 left: a refund of 400 is not this charge's.
            #expect(try await refund("evt_c", .refundSucceeded, "re_c", 400) == .mismatch)
            // re_a fails after it succeeded (a card closed since): its 300 are no longer given back.
            #expect(try await refund("evt_a_failed", .refundFailed, "re_a", 300) == .applied)
            #expect(try await refund("evt_a_failed_again", .refundFailed, "re_a", 300) == .noChange)
            #expect(try await refund("evt_x_failed", .refundFailed, "re_x", 300) == .noChange)
            now = try await charge()
            #expect(now.refunded == 400 && now.refundedAt != nil)
            #expect(byReference(now).map(\.status) == [.failed, .succeeded])
            #expect(byReference(now).first?.failureCode == "expired_card")
            #expect(
                try await store.chargesWithFailedGiveBacks(limit: 10).isEmpty,
                "a refund made at the provider is the provider's to make again: not ours to list")
            // What is left is 599 again: a refund of it fits.
            #expect(try await refund("evt_d", .refundSucceeded, "re_d", 599) == .applied)
            #expect(try await charge().refunded == 999)
            #expect(
                try await fixture.subscriptionEventKinds(subscription) == [
                    "subscriptionChargeRefunded", "subscriptionChargeRefunded", "subscriptionChargeRefundFailed",
                    "subscriptionChargeRefunded",
                ])
        }
    }

    @Test(
        "a give-back refund decided later is pending until its webhook: a failure is recorded failed, a success gives the money back",
        arguments: StoreBackend.available, [false, true])
    func giveBackDecidedLater(_ backend: StoreBackend, succeeds: Bool) async throws {
        let processor = UndecidedProcessor(answer: .lost)
        processor.refundsOnlyDecidedLater(true)
        try await Self.with(backend, processor, index: succeeds ? 42 : 43) { fixture, store, service, subscription in
            let key = Self.key(subscription)
            #expect(await service.chargeDue(now: fixedNow).isEmpty)
            _ = try await service.cancel(id: subscription.id, by: "customer")
            // Looked up approved after the cancel: given back by a refund the provider decides later.
            processor.answer(.decided)
            #expect(await service.chargeDue(now: fixedNow.addingTimeInterval(Self.hour)).map(\.status) == ["approved"])
            var charge = try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            let refund = try #require(charge.refunds.first)
            #expect(refund.status == .pending && refund.refundKey == key + ":refund" && refund.amount == 999)
            #expect(!charge.refundOwed && charge.refunded == 0 && charge.refundedAt == nil)
            #expect(charge.refundReference == "refund:" + (refund.reference ?? "?"))
            #expect(try await store.chargesOwingRefund(limit: 10).isEmpty, "taken: not sent again")
            #expect(try await store.chargesWithFailedGiveBacks(limit: 10).isEmpty, "pending: not failed yet")
            // Its webhook names it by our key (Stripe's metadata[refund_key]) and its own reference.
            let events = try #require(fixture.store as? any ProviderEventStore)
            let decided = ProviderEvent(
                provider: "stripe", id: "evt_refund_\(succeeds)", kind: succeeds ? .refundSucceeded : .refundFailed,
                paymentReference: charge.processorReference, reference: refund.reference, refundKey: key + ":refund",
                amount: 999, currencyCode: "USD", reason: succeeds ? nil : "expired_or_canceled_card")
            #expect(try await events.apply(decided) == ProviderEventResult(.applied, subscriptionID: subscription.id))
            charge = try #require(try await store.subscriptionCharges(subscriptionID: subscription.id).first)
            #expect(charge.refunds.map(\.status) == [succeeds ? .succeeded : .failed])
            #expect(charge.refunded == (succeeds ? 999 : 0) && (charge.refundedAt != nil) == succeeds)
            // A failed give-back is sent by nothing again: it waits for a person (GET /admin/v1/attention).
            #expect(
                try await store.chargesWithFailedGiveBacks(limit: 10).map(\.idempotencyKey) == (succeeds ? [] : [key]))
            #expect(
                try await fixture.subscriptionEventKinds(subscription) == [
                    "subscriptionChargeRefundPending",
                    succeeds ? "subscriptionChargeRefunded" : "subscriptionChargeRefundFailed",
                ])
            #expect(processor.chargeRequests == [key])
        }
    }
}

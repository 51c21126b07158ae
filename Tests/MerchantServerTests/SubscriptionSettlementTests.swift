import ApplePay
import Foundation
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantTestSupport
import ProcessorAPI
import ProcessorService
import Synchronization
import Testing

@testable import MerchantCore

/// Subscriptions at the edges: a plan payment settled by the reconciler, a deferred plan's free-cancellation
/// date, and the sandbox's movable clock on `POST /admin/v1/subscriptions/charge-due`.
@Suite("Subscriptions: late settlement, free cancellation, the sandbox clock")
struct SubscriptionSettlementTests {
    static let day: TimeInterval = 86_400
    /// TASTING-SEAT's dates in the demo catalog.
    static let billingDate = Date(timeIntervalSince1970: 1_901_145_600)  // 2030-03-31T00:00:00Z
    static let freeCancellationDate = Date(timeIntervalSince1970: 1_900_540_800)  // 2030-03-24T00:00:00Z

    /// A server on a new sandbox processor and a ``VirtualClock`` (at the present time until the test sets it).
    static func withVirtualClock(
        _ body: (ServerHarness, SandboxProcessor, VirtualClock) async throws -> Void
    ) async throws {
        let processor = SandboxProcessor()
        let clock = VirtualClock()
        try await ServerHarness.with(processor: processor, clock: clock.read) { try await body($0, processor, clock) }
    }

    static func subscriptions(_ server: ServerHarness) async throws -> [[String: Any]] {
        let list = try await server.admin("GET", "/admin/v1/subscriptions")
        #expect(list.status == 200, "\(list.text)")
        return list.json["subscriptions"] as? [[String: Any]] ?? []
    }

    @Test(
        "a plan payment whose answer was lost starts its subscription when the reconciler finds it charged, as a direct one does"
    )
    func lateApprovalStartsSubscription() async throws {
        try await ProcessorHarness.with(armed: FaultBody(kind: .dropAfterCommit, count: 1)) { ledger in
            try await ServerHarness.with(processor: ledger.processor(timeout: .seconds(10))) { server in
                // The answer of the trial's charge is lost: the customer hears "being confirmed"; no subscription yet.
                let (checkout, body, lost) = try await server.payWithMerchantToken(sku: "BEANS-MONTHLY")
                #expect(lost.status == 202, "\(lost.text)")
                #expect(lost.errorCode == "paymentOutcomeUnknown")
                #expect(lost.json["subscriptionId"] == nil)
                let orderID = try (lost.json["orderId"] as? String).orThrow("orderId")
                #expect(try await Self.subscriptions(server).isEmpty)
                let key = try await FailureTests.transactionID(of: orderID, server)
                try await ledger.waitForCharge(key)

                // The reconciler finds the charge: the order is paid and the subscription starts.
                let settled = try await FailureTests.reconcile(server)
                #expect(settled.first?["to"] as? String == "paid")
                let list = try await Self.subscriptions(server)
                #expect(list.count == 1)
                let started = try list.first.orThrow("no subscription")
                #expect(started["status"] as? String == "active")
                #expect(started["orderId"] as? String == orderID)
                #expect(started["checkoutId"] as? String == checkout.id)
                #expect((started["merchantTokenIdentifier"] as? String)?.hasPrefix("DNITHE") == true)
                #expect(started["network"] as? String != nil)
                #expect(started["cardSuffix"] as? String != nil)
                #expect(server.log.text.contains("subscription of a settled payment"))

                // Just as a direct payment: cycle 1 due a month after the checkout (the trial's end), in whole seconds.
                let service = try #require(server.application.api.subscriptions)
                let id = try (started["id"] as? String).orThrow("id")
                let stored = try #require(try await service.store.subscription(id: id))
                let created = try #require(try await server.application.api.store.checkout(id: checkout.id)).createdAt
                let expectedAnchor = try #require(Calendar.utc.date(byAdding: .month, value: 1, to: created))
                #expect(abs(stored.anchor.timeIntervalSince(expectedAnchor)) < 1)
                #expect(stored.anchor.timeIntervalSince1970 == stored.anchor.timeIntervalSince1970.rounded())
                #expect(stored.nextChargeAt == stored.anchor)
                #expect(stored.cycle == 1 && stored.attempt == 0)

                // A second pass settles nothing more and starts nothing more.
                #expect(try await FailureTests.reconcile(server).isEmpty)
                #expect(try await Self.subscriptions(server).count == 1)
                // The customer's retry with the same token gets the order and the same subscription.
                let retry = try await server.pay(checkout, raw: body)
                #expect(retry.status == 200, "\(retry.text)")
                #expect(retry.json["subscriptionId"] as? String == id)
                #expect(retry.json["orderId"] as? String == orderID)

                // And it is charged like any other: cycle 1 on its date, through the kept method, once.
                let due = try #require(stored.nextChargeAt)
                let charges = await service.chargeDue(now: due)
                #expect(charges.map(\.status) == ["approved"])
                #expect(charges.map(\.amount) == [999])
                #expect(await service.chargeDue(now: due).isEmpty)
                let approved = try await ledger.charges().filter { $0.status != .declined }
                #expect(approved.count == 2, "the $1 trial and cycle 1")
                // No token material was written to the log.
                #expect(!server.log.text.contains("4761120010000492"))
                #expect(!server.log.text.contains("onlinePaymentCryptogram"))
            }
            ledger.service.disarm()
        }
    }

    @Test("a deferred plan cancelled before its free-cancellation date is never charged; after it, charged once")
    func freeCancellationDate() async throws {
        try await Self.withVirtualClock { server, processor, clock in
            let free = try await SubscriptionTests.subscribe(server, sku: "TASTING-SEAT")
            let late = try await SubscriptionTests.subscribe(server, sku: "TASTING-SEAT")
            let atDeadline = try await SubscriptionTests.subscribe(server, sku: "TASTING-SEAT")
            #expect(processor.chargeCount == 0)
            func cancel(_ paid: [String: Any]) async throws -> ServerHarness.Reply {
                let id = try (paid["subscriptionId"] as? String).orThrow("id")
                let secret = try (paid["subscriptionSecret"] as? String).orThrow("secret")
                return try await server.post("/v1/subscriptions/\(id)/cancel?secret=\(secret)", json: [:])
            }

            // A week before the free-cancellation date: free.
            clock.set(Self.freeCancellationDate.addingTimeInterval(-7 * Self.day))
            let freeReply = try await cancel(free)
            #expect(freeReply.status == 200, "\(freeReply.text)")
            #expect(freeReply.json["status"] as? String == "cancelled")
            #expect(freeReply.json["nextChargeAt"] == nil)
            // At the date itself: still free.
            clock.set(Self.freeCancellationDate)
            #expect(try await cancel(atDeadline).json["nextChargeAt"] == nil)
            // A day after it: cancelled, but the seat is still charged on the billing date.
            clock.set(Self.freeCancellationDate.addingTimeInterval(Self.day))
            let lateReply = try await cancel(late)
            #expect(lateReply.status == 200, "\(lateReply.text)")
            #expect(lateReply.json["status"] as? String == "cancelled")
            #expect(lateReply.json["statusReason"] as? String == "customer")
            #expect(lateReply.json["nextChargeAt"] as? String == "2030-03-31T00:00:00Z")
            #expect(try await cancel(late).errorCode == "subscriptionNotLive", "cancelled once")
            let lateID = try (late["subscriptionId"] as? String).orThrow("id")
            let secret = try (late["subscriptionSecret"] as? String).orThrow("secret")
            let page = try await server.get("/v1/subscriptions/\(lateID)/manage?secret=\(secret)")
            #expect(page.text.contains(#"id="next-charge">31 March 2030</dd>"#), "\(page.text)")

            // The scheduler: nothing before the billing date, then only the late cancellation, once.
            let service = try #require(server.application.api.subscriptions)
            #expect(await service.chargeDue(now: Self.billingDate.addingTimeInterval(-1)).isEmpty)
            let charges = await service.chargeDue(now: Self.billingDate)
            #expect(charges.map(\.subscriptionID) == [lateID])
            #expect(charges.map(\.amount) == [4500])
            #expect(charges.map(\.status) == ["approved"])
            #expect(await service.chargeDue(now: Self.billingDate.addingTimeInterval(30 * Self.day)).isEmpty)
            #expect(processor.chargeCount == 1)
            let after = try #require(try await service.store.subscription(id: lateID))
            #expect(after.status == .cancelled && after.statusReason == "customer" && after.nextChargeAt == nil)
        }
    }

    @Test("cancellationOwesCharge: only a deferred plan not charged yet, cancelled after its free-cancellation date")
    func owesChargeRules() {
        func subscription(_ plan: BillingPlan, cycle: Int = 1) -> Subscription {
            Subscription(
                id: "sub_1", secret: "s", checkoutID: "chk_1", orderID: nil, sku: "X", productName: "X", plan: plan,
                amount: 4500, currencyCode: "USD", merchantTokenIdentifier: nil, paymentMethodReference: "pm_1",
                network: nil, cardSuffix: nil, cardExpiration: nil, cycle: cycle, anchor: Self.billingDate,
                nextChargeAt: cycle == 1 ? Self.billingDate : nil, createdAt: Date(), updatedAt: Date())
        }
        let withDate = BillingPlan.deferred(
            DeferredPlan(billingDate: Self.billingDate, freeCancellationDate: Self.freeCancellationDate))
        let withoutDate = BillingPlan.deferred(DeferredPlan(billingDate: Self.billingDate))
        let after = Self.freeCancellationDate.addingTimeInterval(1)
        #expect(!SubscriptionBilling.cancellationOwesCharge(subscription(withDate), at: Self.freeCancellationDate))
        #expect(SubscriptionBilling.cancellationOwesCharge(subscription(withDate), at: after))
        #expect(!SubscriptionBilling.cancellationOwesCharge(subscription(withDate, cycle: 2), at: after))
        #expect(!SubscriptionBilling.cancellationOwesCharge(subscription(withoutDate), at: after))
        let monthly = BillingPlan.recurring(RecurringPlan(intervalUnit: .month))
        #expect(!SubscriptionBilling.cancellationOwesCharge(subscription(monthly), at: after))
    }

    @Test("an owed charge that is declined is retried on the retry days, the subscription staying cancelled")
    func owedChargeDeclined() async throws {
        try await Self.withVirtualClock { server, processor, clock in
            let paid = try await SubscriptionTests.subscribe(server, sku: "TASTING-SEAT")
            let id = try (paid["subscriptionId"] as? String).orThrow("id")
            clock.set(Self.freeCancellationDate.addingTimeInterval(Self.day))
            let cancelled = try await server.admin("POST", "/admin/v1/subscriptions/\(id)/cancel")
            #expect(cancelled.status == 200 && cancelled.json["statusReason"] as? String == "merchant")
            processor.declineNextStoredMethodCharges([.insufficientFunds])
            let service = try #require(server.application.api.subscriptions)
            let first = await service.chargeDue(now: Self.billingDate)
            #expect(first.map(\.status) == ["declined"])
            let retrying = try #require(try await service.store.subscription(id: id))
            #expect(retrying.status == .cancelled && retrying.statusReason == "merchant")
            #expect(retrying.nextChargeAt == Self.billingDate.addingTimeInterval(Self.day))
            let second = await service.chargeDue(now: Self.billingDate.addingTimeInterval(Self.day))
            #expect(second.map(\.status) == ["approved"])
            #expect(processor.chargeCount == 1)
            #expect(try await service.store.subscription(id: id)?.nextChargeAt == nil)
        }
    }

    @Test(
        "a cycle's charge unresolved past the processor's key lifetime is on GET /admin/v1/attention (subscriptionCharges)"
    )
    func unresolvedChargeNeedsAttention() async throws {
        let processor = UndecidedProcessor(answer: .decided)
        let clock = VirtualClock()
        try await ServerHarness.with(processor: processor, clock: clock.read) { server in
            let paid = try await SubscriptionTests.subscribe(server, sku: "BEANS-MONTHLY")
            let id = try (paid["subscriptionId"] as? String).orThrow("id")
            let service = try #require(server.application.api.subscriptions)
            let due = try #require(try await service.store.subscription(id: id)?.nextChargeAt)
            // Cycle 1's answer is lost, and the provider does not say when asked.
            processor.answer(.lost)
            processor.decide(false)
            #expect(await service.chargeDue(now: due).isEmpty)
            func listed(at now: Date) async throws -> [[String: Any]] {
                clock.set(now)
                let attention = try await server.admin("GET", "/admin/v1/attention")
                #expect(attention.status == 200, "\(attention.text)")
                return try (attention.json["subscriptionCharges"] as? [[String: Any]]).orThrow("subscriptionCharges")
            }
            #expect(try await listed(at: due.addingTimeInterval(3600)).isEmpty, "within 24 hours the pass asks")
            let late = try await listed(at: due.addingTimeInterval(25 * 3600))
            #expect(late.count == 1)
            #expect(late.first?["subscriptionId"] as? String == id)
            #expect(late.first?["idempotencyKey"] as? String == "\(id):c1:a0")
            #expect(late.first?["since"] as? String == ISO8601DateFormatter().string(from: due))
            #expect(late.first?["status"] as? String == "active")
            #expect(processor.chargeRequests == ["\(id):c1:a0"])
        }
    }

    @Test(
        "a give-back refund the provider failed is on GET /admin/v1/attention (failedRefunds) until the charge is refunded"
    )
    func failedGiveBackNeedsAttention() async throws {
        let processor = UndecidedProcessor(answer: .decided)
        try await ServerHarness.with(processor: processor) { server in
            let paid = try await SubscriptionTests.subscribe(server, sku: "BEANS-MONTHLY")
            let id = try (paid["subscriptionId"] as? String).orThrow("id")
            let service = try #require(server.application.api.subscriptions)
            let due = try #require(try await service.store.subscription(id: id)?.nextChargeAt)
            // Cycle 1's answer is lost and the customer cancels; the look-up finds it approved, and it is given back
            // by a refund the provider decides later.
            processor.answer(.lost)
            processor.refundsOnlyDecidedLater(true)
            #expect(await service.chargeDue(now: due).isEmpty)
            _ = try await service.cancel(id: id, by: "customer")
            processor.answer(.decided)
            #expect(await service.chargeDue(now: due.addingTimeInterval(3600)).map(\.status) == ["approved"])
            let charge = try #require(try await service.store.subscriptionCharges(subscriptionID: id).first)
            let refund = try #require(charge.refunds.first)
            func listed() async throws -> [[String: Any]] {
                let attention = try await server.admin("GET", "/admin/v1/attention")
                #expect(attention.status == 200, "\(attention.text)")
                return try (attention.json["failedRefunds"] as? [[String: Any]]).orThrow("failedRefunds")
            }
            #expect(try await listed().isEmpty, "pending: the provider has not decided")
            let events = try #require(server.application.store as? any ProviderEventStore)
            let failed = ProviderEvent(
                provider: "stripe", id: "evt_give_back_failed", kind: .refundFailed,
                paymentReference: charge.processorReference, reference: refund.reference, refundKey: refund.refundKey,
                amount: charge.amount, currencyCode: "USD", reason: "expired_or_canceled_card")
            #expect(try await events.apply(failed).outcome == .applied)
            let items = try await listed()
            #expect(items.count == 1)
            #expect(items.first?["subscriptionId"] as? String == id)
            #expect(items.first?["idempotencyKey"] as? String == charge.idempotencyKey)
            #expect(items.first?["refundKey"] as? String == charge.idempotencyKey + ":refund")
            #expect((items.first?["amountMinor"] as? NSNumber)?.int64Value == charge.amount)
            #expect(items.first?["currencyCode"] as? String == "USD")
            #expect(items.first?["failureCode"] as? String == "expired_or_canceled_card")
            // A person refunds it in the provider's dashboard: its webhook records that refund, and the item goes.
            let byHand = ProviderEvent(
                provider: "stripe", id: "evt_refunded_by_hand", kind: .refundSucceeded,
                paymentReference: charge.processorReference, reference: "re_by_hand", amount: charge.amount,
                currencyCode: "USD")
            #expect(try await events.apply(byHand).outcome == .applied)
            #expect(try await listed().isEmpty)
        }
    }

    @Test("charge-due takes the sandbox's now: the second charge a month on, once; a bad date is refused")
    func movableClock() async throws {
        let processor = SandboxProcessor()
        try await ServerHarness.with(processor: processor) { server in
            let paid = try await SubscriptionTests.subscribe(server, sku: "BEANS-MONTHLY")
            let id = try (paid["subscriptionId"] as? String).orThrow("id")
            let shown = try await server.admin("GET", "/admin/v1/subscriptions/\(id)")
            let next = try ((shown.json["subscription"] as? [String: Any])?["nextChargeAt"] as? String)
                .orThrow("nextChargeAt")
            // Now (wall clock): nothing due, the trial runs for a month.
            let now = try await server.admin("POST", "/admin/v1/subscriptions/charge-due")
            #expect(now.status == 200, "\(now.text)")
            #expect((now.json["charges"] as? [Any])?.isEmpty == true)
            // The clock moved to nextChargeAt exactly (as the admin API printed it): cycle 1 is charged.
            let moved = try await server.admin("POST", "/admin/v1/subscriptions/charge-due", json: ["now": next])
            #expect(moved.status == 200, "\(moved.text)")
            #expect(moved.json["now"] as? String == next)
            let charges = moved.json["charges"] as? [[String: Any]] ?? []
            #expect(charges.count == 1)
            #expect(charges.first?["cycle"] as? Int == 1)
            #expect(charges.first?["amount"] as? String == "9.99")
            #expect(charges.first?["status"] as? String == "approved")
            // Again at the same instant, or back in time: nothing twice.
            let again = try await server.admin("POST", "/admin/v1/subscriptions/charge-due", json: ["now": next])
            #expect((again.json["charges"] as? [Any])?.isEmpty == true)
            let back = try await server.admin(
                "POST", "/admin/v1/subscriptions/charge-due", json: ["now": "2020-01-01T00:00:00Z"])
            #expect((back.json["charges"] as? [Any])?.isEmpty == true)
            #expect(processor.chargeCount == 2, "the trial and cycle 1")
            let bad = try await server.admin("POST", "/admin/v1/subscriptions/charge-due", json: ["now": "tomorrow"])
            #expect(bad.status == 400 && bad.errorCode == "invalidRequest", "\(bad.text)")
        }
    }

    @Test("outside sandbox mode charge-due refuses a now (clockNotMovable) and charges by its own clock")
    func clockNotMovableOutsideSandbox() async throws {
        try await ServerHarness.with(
            processor: SandboxProcessor(), configure: { $0.sandboxFolder = nil },
            body: { server in
                let refused = try await server.admin(
                    "POST", "/admin/v1/subscriptions/charge-due", json: ["now": "2040-01-01T00:00:00Z"])
                #expect(refused.status == 400, "\(refused.text)")
                #expect(refused.errorCode == "clockNotMovable")
                let plain = try await server.admin("POST", "/admin/v1/subscriptions/charge-due")
                #expect(plain.status == 200, "\(plain.text)")
            })
    }
}

extension Calendar {
    /// Gregorian in UTC, as ``BillingCalendar`` counts.
    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar
    }
}

extension ServerHarness {
    /// A checkout for one `sku`, paid with a sandbox merchant token: the checkout, the payment's body and the answer.
    func payWithMerchantToken(sku: String) async throws -> (checkout: CreatedCheckout, body: Data, reply: Reply) {
        let checkout = try await createCheckout([["sku": sku, "quantity": 1]])
        let body = try paymentBody(
            amount: checkout.total, applicationData: checkout.applicationData, merchantToken: true)
        return (checkout, body, try await pay(checkout, raw: body))
    }
}

import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantTestSupport
import TestSupport
import Testing

/// The subscription store's newer contract, on SQLite and PostgreSQL: Apple's events applied in one transaction
/// with their effect, Apple's whole card metadata kept, refunds recorded with an event, pruning that keeps the
/// checkouts subscriptions refer to.
@Suite("Subscription store: token events, card metadata, refunds, pruning (SQLite and PostgreSQL)")
struct SubscriptionEventStoreTests {
    static let unlink: @Sendable (Subscription) -> Subscription? = { subscription in
        guard subscription.status != .unlinked else { return nil }
        var next = subscription
        next.status = .unlinked
        next.statusReason = "user"
        next.nextChargeAt = nil
        return next
    }

    @Test(
        "Apple's card metadata round-trips: fpanSuffix, country, both descriptions", arguments: StoreBackend.available)
    func cardMetadata(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let order = try await fixture.paidOrder(transaction: "card01")
            var subscription = fixture.subscription(for: order, id: "sub_c0c0c0c0c0c0c0c0c0c0c0c0")
            subscription.cardCountry = "US"
            subscription.cardDescription = "Visa Debit"
            subscription.cardLongDescription = "Sandbox Bank Visa Debit card"
            let stored = try await store.insertSubscription(subscription)
            #expect(stored == subscription)
            var next = stored
            next.cardSuffix = "4242"
            next.cardCountry = "GB"
            let written = try #require(
                try await store.updateSubscription(next, expectedVersion: stored.version, charge: nil))
            #expect(try await store.subscription(id: stored.id) == written)
            #expect(
                written.cardCountry == "GB" && written.cardDescription == "Visa Debit" && written.cardSuffix == "4242")
        }
    }

    @Test(
        "an event is applied in one transaction with its change: once, and an UNLINK racing other writers is never lost",
        arguments: StoreBackend.available)
    func eventsApplyWithTheirChange(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let other = try await fixture.anotherSubscriptionStore()
            let stored = try await fixture.storedSubscription(transaction: "evt01", id: "sub_e0e0e0e0e0e0e0e0e0e0e0e0")

            // A change that cannot be written rolls the event id back with it: the event is not recorded as applied.
            let failing: @Sendable (Subscription) -> Subscription? = { subscription in
                var next = subscription
                next.cycle = 0  // refused by the CHECK (cycle >= 1)
                return next
            }
            await #expect(throws: OrderStoreError.self) {
                try await store.applyTokenEvent(
                    eventID: "ev-fail", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE000000001", change: failing
                )
            }
            #expect(
                try await store.applyTokenEvent(
                    eventID: "ev-fail", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE000000001",
                    change: { _ in nil }) != nil,
                "the failed event was not recorded")
            #expect(try await store.subscription(id: stored.id) == stored)

            // Writers bumping the version while the UNLINK is applied (a scheduler, a card update): the UNLINK wins or
            // waits, and is applied exactly once.
            let results = try await withThrowingTaskGroup(of: Int?.self) { group in
                for index in 0..<6 {
                    let instance = index % 2 == 0 ? store : other
                    group.addTask {
                        for _ in 0..<5 {
                            guard let current = try await instance.subscription(id: stored.id), current.isLive else {
                                return nil
                            }
                            var next = current
                            next.network = "Visa \(index)"
                            _ = try await instance.updateSubscription(
                                next, expectedVersion: current.version, charge: nil)
                        }
                        return nil
                    }
                }
                group.addTask {
                    for _ in 0..<20 {
                        do {
                            return try await other.applyTokenEvent(
                                eventID: "ev-unlink", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE000000001",
                                change: Self.unlink)
                        } catch let error as OrderStoreError where error.code == .conflict {
                            continue
                        }
                    }
                    return -1
                }
                return try await group.reduce(into: [Int?]()) { $0.append($1) }
            }
            #expect(results.compactMap { $0 } == [1], "the UNLINK changed one subscription")
            let unlinked = try #require(try await store.subscription(id: stored.id))
            #expect(unlinked.status == .unlinked && unlinked.nextChargeAt == nil)
            // Again: recorded before, nothing changes.
            #expect(
                try await store.applyTokenEvent(
                    eventID: "ev-unlink", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE000000001",
                    change: Self.unlink) == nil)
            #expect(try await store.subscription(id: stored.id) == unlinked)
        }
    }

    @Test("a refund of an approved charge is recorded once, with an event", arguments: StoreBackend.available)
    func refundRecorded(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let stored = try await fixture.storedSubscription(transaction: "ref01", id: "sub_f0f0f0f0f0f0f0f0f0f0f0f0")
            let charge = fixture.charge(stored)
            var cancelled = stored
            cancelled.status = .cancelled
            cancelled.statusReason = "customer"
            let written = try #require(
                try await store.updateSubscription(cancelled, expectedVersion: stored.version, charge: charge))
            #expect(try await store.recordChargeRefund(charge, of: written, reference: "void:ch_1", at: fixedNow))
            #expect(!(try await store.recordChargeRefund(charge, of: written, reference: "void:ch_1", at: fixedNow)))
            let charges = try await store.subscriptionCharges(subscriptionID: stored.id)
            #expect(
                charges.count == 1 && charges[0].refundReference == "void:ch_1" && charges[0].refundedAt == fixedNow)
            #expect(try await fixture.subscriptionEventKinds(stored) == ["subscriptionChargeRefunded"])
        }
    }

    @Test(
        "pruning passes over a checkout a subscription refers to (a deferred plan without an order) and prunes the rest",
        arguments: StoreBackend.available)
    func pruningKeepsSubscribedCheckouts(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let (deferredCheckout, _) = try await fixture.checkout()
            let (unpaid, _) = try await fixture.checkout()
            var deferred = Subscription(
                id: "sub_d1d1d1d1d1d1d1d1d1d1d1d1", secret: "s", checkoutID: deferredCheckout.id, orderID: nil,
                sku: "TASTING-SEAT", productName: "Tasting", plan: .recurring(RecurringPlan(intervalUnit: .month)),
                amount: 500, currencyCode: "USD", merchantTokenIdentifier: "DNITHE2", paymentMethodReference: "pm_d",
                network: "Visa", cardSuffix: "1234", cardExpiration: nil, anchor: fixedNow, nextChargeAt: fixedNow,
                createdAt: fixedNow, updatedAt: fixedNow)
            deferred = try await store.insertSubscription(deferred)
            let pruned = try await fixture.store.pruneExpiredCheckouts(
                createdBefore: fixedNow.addingTimeInterval(86_400), batch: 1)
            #expect(pruned == 1)
            #expect(try await fixture.store.checkout(id: unpaid.id) == nil)
            #expect(try await fixture.store.checkout(id: deferredCheckout.id) != nil)
            #expect(try await store.subscription(id: deferred.id) == deferred)
        }
    }
}

import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantTestSupport
import TestSupport
import Testing

@Suite("Subscription and Wallet order stores: SQLite and PostgreSQL")
struct SubscriptionStoreTests {
    @Test(
        "a subscription round-trips; a second one for the same checkout answers the first",
        arguments: StoreBackend.available)
    func insertAndRead(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let order = try await fixture.paidOrder(transaction: "sub01")
            let first = fixture.subscription(for: order, id: "sub_aaaaaaaaaaaaaaaaaaaaaaaa")
            #expect(try await store.insertSubscription(first) == first)
            var again = fixture.subscription(for: order, id: "sub_bbbbbbbbbbbbbbbbbbbbbbbb")
            again.amount = 1
            #expect(try await store.insertSubscription(again) == first)
            #expect(try await store.subscription(id: first.id) == first)
            #expect(try await store.subscription(id: again.id) == nil)
            #expect(try await store.subscriptions(SubscriptionFilter(checkoutID: order.checkoutID)) == [first])
            #expect(try await store.subscriptions(SubscriptionFilter(statuses: [.cancelled])).isEmpty)
            #expect(
                try await store.subscriptions(SubscriptionFilter(statuses: [.active, .pastDue], dueBy: fixedNow)) == [
                    first
                ]
            )
            #expect(try await store.subscriptions(SubscriptionFilter(dueBy: fixedNow.addingTimeInterval(-1))).isEmpty)
            #expect(
                try await store.subscriptions(SubscriptionFilter(merchantTokenIdentifier: "DNITHE000000001")) == [first]
            )
            // The payment is marked as made with a merchant token; no MPAN is stored anywhere.
            let marked = try await fixture.column("SELECT merchant_token FROM payments")
            #expect(marked == (backend == .sqlite ? ["1"] : ["t"]))
        }
    }

    @Test(
        "the processor's customer of the kept method (Stripe's) round-trips through insert and update",
        arguments: StoreBackend.available)
    func customerReference(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let order = try await fixture.paidOrder(transaction: "sub-customer")
            var subscription = fixture.subscription(for: order, id: "sub_cccccccccccccccccccccccc")
            subscription.customerReference = "cus_first"
            #expect(try await store.insertSubscription(subscription).customerReference == "cus_first")
            var moved = try #require(try await store.subscription(id: subscription.id))
            #expect(moved.customerReference == "cus_first")
            moved.customerReference = "cus_second"
            _ = try await store.updateSubscription(moved, expectedVersion: moved.version, charge: nil)
            #expect(try await store.subscription(id: subscription.id)?.customerReference == "cus_second")
        }
    }

    @Test(
        "an update writes only over the version read, with its charge; a cycle is approved once; events apply once",
        arguments: StoreBackend.available)
    func versionedUpdates(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let stored = try await fixture.storedSubscription(transaction: "sub02", id: "sub_cccccccccccccccccccccccc")
            var next = stored
            next.cycle = 2
            next.nextChargeAt = fixedNow.addingTimeInterval(86_400 * 30)
            let written = try #require(
                try await store.updateSubscription(
                    next, expectedVersion: stored.version, charge: fixture.charge(stored)))
            #expect(written.version == stored.version + 1)
            #expect(written.cycle == 2)
            // A second writer that read the same version changes nothing.
            var late = stored
            late.status = .cancelled
            #expect(try await store.updateSubscription(late, expectedVersion: stored.version, charge: nil) == nil)
            #expect(try await store.subscription(id: stored.id) == written)
            // A second approval of cycle 1 (under another key) is refused, and the update with it is not written.
            var again = written
            again.cycle = 3
            var duplicate = fixture.charge(stored)
            duplicate.idempotencyKey += "-other"
            duplicate.attempt = 1
            await #expect(throws: OrderStoreError.self) {
                try await store.updateSubscription(again, expectedVersion: written.version, charge: duplicate)
            }
            #expect(try await store.subscription(id: stored.id) == written)
            let charges = try await store.subscriptionCharges(subscriptionID: stored.id)
            #expect(charges == [fixture.charge(stored)])
            #expect(
                try await store.applyTokenEvent(
                    eventID: "ev-1", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE1", change: { _ in nil })
                    != nil)
            #expect(
                try await store.applyTokenEvent(
                    eventID: "ev-1", eventType: "UNLINK", merchantTokenIdentifier: "DNITHE1", change: { _ in nil })
                    == nil
            )
        }
    }

    @Test(
        "two stores (two instances) writing the same version at once: exactly one wins, one charge row",
        arguments: StoreBackend.available)
    func racingInstances(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, first in
            let second = try await fixture.anotherSubscriptionStore()
            var current = try await fixture.storedSubscription(transaction: "sub03", id: "sub_dddddddddddddddddddddddd")
            for cycle in 1...5 {
                var next = current
                next.cycle = cycle + 1
                let charge = fixture.charge(current)
                let read = current
                let proposed = next
                let results = try await withThrowingTaskGroup(of: Subscription?.self) { group in
                    for index in 0..<8 {
                        let store = index % 2 == 0 ? first : second
                        group.addTask {
                            try await store.updateSubscription(proposed, expectedVersion: read.version, charge: charge)
                        }
                    }
                    return try await group.reduce(into: [Subscription?]()) { $0.append($1) }
                }
                #expect(results.compactMap { $0 }.count == 1, "cycle \(cycle)")
                current = try #require(try await first.subscription(id: read.id))
                #expect(current.cycle == cycle + 1)
            }
            let charges = try await second.subscriptionCharges(subscriptionID: current.id)
            #expect(charges.map(\.cycle) == [1, 2, 3, 4, 5])
        }
    }

    @Test(
        "four instances run the scheduler at once on one database after an outage: one cycle charged and recorded once",
        arguments: StoreBackend.available)
    func schedulersOnSeveralInstances(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let processor = SandboxProcessor()
            var ids: [String] = []
            for index in 0..<12 {
                let order = try await fixture.paidOrder(transaction: String(format: "sched%02d", index))
                var subscription = fixture.subscription(for: order, id: "sub_" + String(format: "%024d", index))
                subscription.paymentMethodReference = try await processor.storePaymentMethod(
                    testToken(), idempotencyKey: "keep-\(index)", rootFingerprint: nil)
                ids.append(try await store.insertSubscription(subscription).id)
            }
            var services: [SubscriptionService] = []
            for _ in 0..<4 {
                services.append(fixture.scheduler(on: try await fixture.anotherSubscriptionStore(), processor))
            }
            // Cycles 1 to 4 are due (the anchor and the three monthly dates after it): the catch-up rule charges the
            // latest only and skips the three before it, once, whichever instance gets there first.
            let now = fixedNow.addingTimeInterval(92 * 86_400)
            let recorded = await withTaskGroup(of: [SubscriptionCharge].self) { group in
                for service in services { group.addTask { await service.chargeDue(now: now) } }
                return await group.reduce(into: [SubscriptionCharge]()) { $0 += $1 }
            }
            #expect(processor.chargeCount == 12, "one cycle charged per subscription at the processor")
            #expect(recorded.count == 12, "each outcome recorded by exactly one instance")
            #expect(Set(recorded.map(\.idempotencyKey)).count == 12)
            for id in ids {
                let charges = try await store.subscriptionCharges(subscriptionID: id)
                #expect(charges.map(\.cycle) == [4], "\(id)")
                #expect(charges.allSatisfy { $0.status == "approved" && $0.amount == 999 })
                let after = try await store.subscription(id: id)
                #expect(after?.cycle == 5 && after?.skippedCycles == 3)
            }
        }
    }

    @Test(
        "Wallet orders: fulfilment steps of paid orders only, each moving updatedAt a second on; registrations",
        arguments: StoreBackend.available)
    func walletRecords(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let order = try await fixture.paidOrder(transaction: "wal01")
            let shipped = FulfillmentStep(status: .shipped, carrier: "UPS", trackingNumber: "1Z999", at: fixedNow)
            let afterShipping = try await fixture.store.recordFulfillment(orderID: order.id, shipped)
            #expect(afterShipping.updatedAt.timeIntervalSince(order.updatedAt) >= 1)
            let delivered = FulfillmentStep(status: .delivered, carrier: "UPS", trackingNumber: "1Z999", at: fixedNow)
            let afterDelivery = try await fixture.store.recordFulfillment(orderID: order.id, delivered)
            #expect(afterDelivery.updatedAt > afterShipping.updatedAt)
            #expect(try await fixture.store.fulfillments(orderID: order.id).map(\.status) == [.shipped, .delivered])
            await #expect(throws: OrderStoreError(.notFound, "")) {
                try await fixture.store.recordFulfillment(orderID: "ord_nope", shipped)
            }
            let (pending, _, _) = try await fixture.pendingOrder(transaction: "wal02")
            await #expect(throws: OrderStoreError(.conflict, "")) {
                try await fixture.store.recordFulfillment(orderID: pending.id, shipped)
            }

            let registration = DeviceRegistration(
                deviceIdentifier: "device-1", pushToken: "push-1", orderTypeIdentifier: "order.com.example",
                orderID: order.id)
            #expect(try await fixture.store.registerDevice(registration))
            var renewed = registration
            renewed.pushToken = "push-2"
            #expect(!(try await fixture.store.registerDevice(renewed)))
            var other = registration
            other.deviceIdentifier = "device-2"
            #expect(try await fixture.store.registerDevice(other))
            let byOrder = try await fixture.store.registrations(
                deviceIdentifier: nil, orderTypeIdentifier: "order.com.example", orderID: order.id)
            #expect(Set(byOrder.map(\.pushToken)) == ["push-2", "push-1"])
            let byDevice = try await fixture.store.registrations(
                deviceIdentifier: "device-1", orderTypeIdentifier: "order.com.example", orderID: nil)
            #expect(byDevice == [renewed])
            #expect(
                try await fixture.store.unregisterDevice(
                    deviceIdentifier: "device-1", orderTypeIdentifier: "order.com.example", orderID: order.id))
            #expect(
                !(try await fixture.store.unregisterDevice(
                    deviceIdentifier: "device-1", orderTypeIdentifier: "order.com.example", orderID: order.id)))
            var unknownOrder = registration
            unknownOrder.orderID = "ord_nope"
            await #expect(throws: OrderStoreError(.conflict, "")) {
                try await fixture.store.registerDevice(unknownOrder)
            }
        }
    }
}

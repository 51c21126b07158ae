import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantTestSupport
import ProcessorService
import Processors
import Synchronization
import TestSupport
import Testing

/// A real processor held mid-charge: stored-method charges go to the inner processor at once, and their answer is
/// handed back only when the test releases it, so the test can change the subscription while a charge it does not
/// yet know about is approved at the processor.
final class HeldProcessor: PaymentProcessor {
    let inner: any PaymentProcessor
    private let gate = Mutex<(open: Bool, arrived: Int, waiters: [CheckedContinuation<Void, Never>])>((false, 0, []))
    /// Voids and refunds that time out (the processor's answer lost) before they are sent on.
    let lostGiveBacks = Mutex(0)

    init(_ inner: any PaymentProcessor) { self.inner = inner }

    var name: String { "held" }

    /// Lets every held answer (and every later one) through.
    func release() {
        let waiters = gate.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until `count` stored-method charges have been answered by the inner processor and are held.
    func waitForHeld(_ count: Int) async throws {
        for _ in 0..<2000 {
            if gate.withLock({ $0.arrived }) >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        struct NotHeld: Error {}
        throw NotHeld()
    }

    private func hold() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let open = gate.withLock { state -> Bool in
                state.arrived += 1
                if !state.open { state.waiters.append(waiter) }
                return state.open
            }
            if open { waiter.resume() }
        }
    }

    func charge(storedMethod request: StoredMethodChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let outcome = try await inner.charge(storedMethod: request)
        await hold()
        return outcome
    }

    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        try await inner.charge(request)
    }
    func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        try await inner.charge(idempotencyKey: idempotencyKey)
    }
    func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        try loseGiveBack()
        return try await inner.void(reference: reference)
    }
    func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        try loseGiveBack()
        return try await inner.refund(reference: reference, amount: amount, idempotencyKey: idempotencyKey)
    }
    private func loseGiveBack() throws(ProcessorError) {
        let lose = lostGiveBacks.withLock { count -> Bool in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
        if lose { throw ProcessorError(.timeout, "the answer was lost") }
    }
    func storePaymentMethod(_ token: NetworkToken, idempotencyKey: String, rootFingerprint: String?)
        async throws(ProcessorError) -> String
    {
        try await inner.storePaymentMethod(token, idempotencyKey: idempotencyKey, rootFingerprint: rootFingerprint)
    }
}

@Suite("Subscription charges that race a change, outages, and schedulers at the same moment")
struct SubscriptionChargeRaceTests {
    /// A stored subscription whose kept method is at `processor`, due at `fixedNow`.
    static func subscribed(
        _ fixture: StoreFixture, _ processor: any PaymentProcessor, index: Int, anchor: Date = fixedNow
    ) async throws -> Subscription {
        let order = try await fixture.paidOrder(transaction: String(format: "race%02d", index))
        var subscription = fixture.subscription(
            for: order, id: "sub_" + String(format: "%024d", 500 + index), nextChargeAt: anchor)
        subscription.anchor = anchor
        subscription.paymentMethodReference = try await processor.storePaymentMethod(
            testToken(), idempotencyKey: "keep-race-\(index)", rootFingerprint: nil)
        return try await fixture.subscriptions.insertSubscription(subscription)
    }

    /// What `heldCharge` leaves for the checks: the store, the processor service, the scheduler's service, the
    /// subscription as it was, and what the scheduler recorded.
    struct HeldCharge {
        let fixture: StoreFixture
        let loopback: LoopbackProcessor
        let service: SubscriptionService
        let subscription: Subscription
        let recorded: [SubscriptionCharge]
        var store: any SubscriptionStore { get throws { try fixture.subscriptions } }
    }

    /// On a new store and processor service (both removed after, also on failure): runs the scheduler for a new
    /// subscription whose kept method is at the service, holds the processor's approval, runs `meanwhile`, releases
    /// it, then runs `check` on what happened.
    static func heldCharge(
        _ backend: StoreBackend, index: Int, lostGiveBacks: Int = 0,
        meanwhile: (SubscriptionService, Subscription) async throws -> Void,
        check: (HeldCharge) async throws -> Void
    ) async throws {
        try await StoreFixture.with(backend) { fixture in
            let loopback = try LoopbackProcessor()
            try await withCleanup {
                let held = HeldProcessor(loopback.client)
                held.lostGiveBacks.withLock { $0 = lostGiveBacks }
                let service = fixture.scheduler(on: try fixture.subscriptions, held)
                let subscription = try await subscribed(fixture, loopback.client, index: index)
                let scheduler = Task { await service.chargeDue(now: fixedNow) }
                try await held.waitForHeld(1)
                do {
                    try await meanwhile(service, subscription)
                } catch {
                    held.release()
                    _ = await scheduler.value
                    throw error
                }
                held.release()
                try await check(
                    HeldCharge(
                        fixture: fixture, loopback: loopback, service: service, subscription: subscription,
                        recorded: await scheduler.value))
            } cleanup: {
                await loopback.stop()
            }
        }
    }

    @Test(
        "a cancel while the processor approves: the charge is recorded and voided, with an event; never a silent approval",
        arguments: StoreBackend.available)
    func cancelDuringCharge(_ backend: StoreBackend) async throws {
        try await Self.heldCharge(backend, index: 1) { service, subscription in
            // The processor has approved; the scheduler does not know yet. The customer cancels now.
            let cancelled = try await service.cancel(id: subscription.id, by: "customer")
            #expect(cancelled.status == .cancelled)
        } check: { held in
            #expect(held.recorded.map(\.status) == ["approved"], "the approval is recorded")
            let charges = try await held.store.subscriptionCharges(subscriptionID: held.subscription.id)
            #expect(charges.count == 1)
            let charge = try #require(charges.first)
            #expect(charge.status == "approved" && charge.refundReference != nil && charge.refundedAt != nil)
            // At the processor the charge is given back.
            let ledger = try #require(try await held.loopback.client.charge(idempotencyKey: charge.idempotencyKey))
            #expect(ledger.status == .voided || ledger.status == .refunded, "\(ledger.status)")
            // The subscription stays cancelled (not revived, cycle not advanced) and the event log says what happened.
            let after = try #require(try await held.store.subscription(id: held.subscription.id))
            #expect(after.status == .cancelled && after.cycle == 1 && after.nextChargeAt == nil)
            #expect(try await held.fixture.subscriptionEventKinds(held.subscription) == ["subscriptionChargeRefunded"])
            // Nothing more is charged.
            #expect(await held.service.chargeDue(now: fixedNow.addingTimeInterval(40 * 86_400)).isEmpty)
        }
    }

    @Test(
        "a cancel during a charge whose void and refund answers are lost: the refund stays owed and the next pass gives it back",
        arguments: StoreBackend.available)
    func refundOwedAcrossPasses(_ backend: StoreBackend) async throws {
        try await Self.heldCharge(backend, index: 4, lostGiveBacks: 2) { service, subscription in
            _ = try await service.cancel(id: subscription.id, by: "customer")
        } check: { held in
            let store = try held.store
            #expect(held.recorded.map(\.status) == ["approved"])
            let owed = try await store.chargesOwingRefund(limit: 10)
            #expect(owed.map(\.subscriptionID) == [held.subscription.id] && owed[0].refundedAt == nil)
            // The next scheduler pass (nothing due) gives it back.
            #expect(await held.service.chargeDue(now: fixedNow).isEmpty)
            #expect(try await store.chargesOwingRefund(limit: 10).isEmpty)
            let charge = try #require(try await store.subscriptionCharges(subscriptionID: held.subscription.id).first)
            #expect(charge.refundedAt != nil && !charge.refundOwed)
            let ledger = try await held.loopback.client.charge(idempotencyKey: charge.idempotencyKey)
            #expect(ledger?.status == .voided || ledger?.status == .refunded)
        }
    }

    @Test(
        "a card update while the processor approves: the charge is recorded and the cycle moves on from the update",
        arguments: StoreBackend.available)
    func cardUpdateDuringCharge(_ backend: StoreBackend) async throws {
        try await Self.heldCharge(backend, index: 2) { service, subscription in
            // Over the version with the attempt on its way (recorded before it was sent), which the update keeps.
            var updated = try #require(try await service.store.subscription(id: subscription.id))
            #expect(updated.unresolvedCharge?.idempotencyKey == "\(subscription.id):c1:a0")
            let version = updated.version
            updated.cardSuffix = "7777"
            _ = try #require(try await service.store.updateSubscription(updated, expectedVersion: version, charge: nil))
        } check: { held in
            let store = try held.store
            #expect(held.recorded.map(\.status) == ["approved"])
            let after = try #require(try await store.subscription(id: held.subscription.id))
            #expect(after.cycle == 2 && after.status == .active && after.cardSuffix == "7777")
            #expect(after.unresolvedCharge == nil)
            let charges = try await store.subscriptionCharges(subscriptionID: held.subscription.id)
            #expect(charges.map(\.cycle) == [1] && charges[0].refundedAt == nil)
            #expect(
                try await held.loopback.client.charge(idempotencyKey: charges[0].idempotencyKey)?.status == .approved)
        }
    }

    @Test(
        "after an outage at most one missed cycle is charged; the others are skipped and recorded",
        arguments: StoreBackend.available)
    func catchUpAfterAnOutage(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend, storeAs: (any SubscriptionStore).self) { fixture, store in
            let processor = SandboxProcessor()
            let service = fixture.scheduler(on: store, processor)
            let subscription = try await Self.subscribed(fixture, processor, index: 3)
            // Cycles 1 to 4 are due (the anchor and three monthly dates after it): the server was down for them.
            let now = fixedNow.addingTimeInterval(92 * 86_400)
            let recorded = await service.chargeDue(now: now)
            #expect(recorded.map(\.cycle) == [4])
            #expect(processor.chargeCount == 1)
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(after.skippedCycles == 3 && after.cycle == 5)
            #expect(try await fixture.subscriptionEventKinds(subscription) == ["subscriptionCyclesSkipped"])
            // On time again: the next cycle alone.
            let fifth = try #require(after.nextChargeAt)
            #expect(await service.chargeDue(now: fifth).map(\.cycle) == [5])
            #expect(try await store.subscription(id: subscription.id)?.skippedCycles == 3)
        }
    }

    @Test(
        "two servers' schedulers on one database run at the same moment, cycle after cycle: each cycle charged once",
        arguments: StoreBackend.available)
    func twoSchedulersAtTheSameMoment(_ backend: StoreBackend) async throws {
        try await StoreFixture.with(backend) { fixture in
            let processor = SandboxProcessor()
            var ids: [String] = []
            for index in 0..<6 { ids.append(try await Self.subscribed(fixture, processor, index: 10 + index).id) }
            let servers = [
                fixture.scheduler(on: try await fixture.anotherSubscriptionStore(), processor),
                fixture.scheduler(on: try await fixture.anotherSubscriptionStore(), processor),
            ]
            let store = try fixture.subscriptions
            for cycle in 1...4 {
                let due = try #require(try await store.subscription(id: ids[0])?.nextChargeAt)
                // Both schedulers wake at the same instant with the same clock.
                let recorded = await withTaskGroup(of: [SubscriptionCharge].self) { group in
                    for server in servers { group.addTask { await server.chargeDue(now: due) } }
                    return await group.reduce(into: [SubscriptionCharge]()) { $0 += $1 }
                }
                #expect(recorded.count == ids.count, "cycle \(cycle): each subscription recorded by one server")
                #expect(Set(recorded.map(\.subscriptionID)) == Set(ids))
                #expect(recorded.allSatisfy { $0.cycle == cycle })
            }
            #expect(processor.chargeCount == ids.count * 4, "each cycle charged once at the processor")
            for id in ids {
                let charges = try await store.subscriptionCharges(subscriptionID: id)
                #expect(
                    charges.map(\.cycle).sorted() == [1, 2, 3, 4] && charges.allSatisfy { $0.status == "approved" })
                #expect(try await store.subscription(id: id)?.skippedCycles == 0)
            }
        }
    }
}

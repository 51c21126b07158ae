import ApplePay
import Foundation
import Foundations
import MerchantStore
import MerchantTestSupport
import Synchronization
import TestSupport
import Testing

@testable import MerchantCore

/// The payment state against a provider's own ledger, over generated schedules (seeded, replayable): answers lost,
/// late or repeated; webhooks early (during our call), duplicated, reordered or missing; reconciler passes, server
/// restarts (the store reopened on its file) and concurrent refunds. After each schedule our store must agree with
/// the fake provider's ledger: every captured charge is exactly one paid order (or one recorded discrepancy), no
/// checkout is charged twice, the refunds we record sum to the provider's, and nothing is left unknown or pending
/// once the provider decided and its webhook or look-up had a chance. A failing seed prints its schedule.
///
/// `PROPERTY_SCHEDULES` sets the number of schedules per provider (1,000 by default); `PROPERTY_SEED` replays one.
@Suite("Payment state against provider ledgers (property test)", .serialized)
struct ProviderLedgerPropertyTests {
    static var schedules: Int { ProcessInfo.processInfo.environment["PROPERTY_SCHEDULES"].flatMap(Int.init) ?? 1000 }

    @Test("generated schedules end with our store equal to the provider's ledger", arguments: LedgerProfile.all)
    func schedules(_ profile: LedgerProfile) async throws {
        let folder = try TemporaryDirectory(prefix: "ledger-\(profile.name)")
        defer { folder.remove() }
        let only = ProcessInfo.processInfo.environment["PROPERTY_SEED"].flatMap(UInt64.init)
        let seeds = only.map { [$0] } ?? (0..<UInt64(Self.schedules)).map { 0x5EED_0000 + $0 }
        var world = try LedgerWorld(profile: profile, path: folder.path("orders.sqlite"))
        var tally = LedgerTally()
        for seed in seeds {
            var schedule = Schedule(seed: seed, profile: profile)
            let problems = try await world.run(&schedule, tally: &tally)
            if !problems.isEmpty {
                Issue.record(
                    """
                    \(profile.name) seed \(seed) (PROPERTY_SEED=\(seed)): \(problems.joined(separator: "; "))
                    schedule: \(schedule.log.joined(separator: " → "))
                    """)
                break
            }
        }
        print(
            "ledger property (\(profile.name)): \(seeds.count) schedules, \(tally.captured) captured charges, "
                + "\(tally.paidOrders) paid orders, \(tally.discrepancies) discrepancies, \(tally.lostApprovals) lost "
                + "approvals, \(tally.doubleCharges) double charges, \(tally.mismatchedRefunds) mismatched refunds, "
                + "\(tally.waitingForAPerson) left to a person (no look-up, webhook never sent)")
        #expect(tally.lostApprovals == 0)
        #expect(tally.doubleCharges == 0)
        #expect(tally.mismatchedRefunds == 0)
        #expect(tally.captured > seeds.count / 4, "the schedules must capture charges to prove anything")
    }
}

/// How a provider behaves, as its documentation says.
struct LedgerProfile: Sendable, CustomTestStringConvertible {
    var name: String
    /// Whether its current state can be read by our key or its reference (Stripe `GET /v1/payment_intents/{id}`,
    /// https://docs.stripe.com/api/payment_intents/retrieve; Checkout.com `GET /payments/{id}`,
    /// https://api-reference.checkout.com/#operation/getPaymentDetails). Adyen has none: its webhook decides
    /// (https://docs.adyen.com/development-resources/webhooks/).
    var hasLookUp: Bool
    /// Whether a refund is always asynchronous: Checkout.com answers `202 Accepted`
    /// (https://api-reference.checkout.com/#operation/refundAPayment), Adyen `received`
    /// (https://docs.adyen.com/online-payments/refund/); Stripe's is `succeeded` or `pending`
    /// (https://docs.stripe.com/api/refunds/object#refund_object-status).
    var refundsAlwaysPending: Bool

    var testDescription: String { name }

    static let all = [
        LedgerProfile(name: "stripe", hasLookUp: true, refundsAlwaysPending: false),
        LedgerProfile(name: "checkout", hasLookUp: true, refundsAlwaysPending: true),
        LedgerProfile(name: "adyen", hasLookUp: false, refundsAlwaysPending: true),
    ]
}

/// A small seeded generator (SplitMix64): the same seed, the same schedule.
struct Schedule {
    let seed: UInt64
    let profile: LedgerProfile
    private var state: UInt64
    var log: [String] = []

    init(seed: UInt64, profile: LedgerProfile) {
        self.seed = seed
        self.profile = profile
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `percent`/100.
    mutating func chance(_ percent: UInt64) -> Bool { next() % 100 < percent }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }
    mutating func note(_ step: String) { log.append(step) }
}

/// What the schedules found, over all of them.
struct LedgerTally {
    var captured = 0
    var paidOrders = 0
    var discrepancies = 0
    var lostApprovals = 0
    var doubleCharges = 0
    var mismatchedRefunds = 0
    var waitingForAPerson = 0
}

/// The fake provider's ledger: charges and refunds by key, the first answer to each key saved and replayed, and the
/// webhooks it owes. Its faults come from the schedule.
final class FakeLedger: PaymentProcessor, Sendable {
    enum Fault: Sendable {
        /// Answers at once.
        case none
        /// Commits, then the answer is lost (our call times out).
        case lost
        /// Commits only later (``finishLate()``); our call times out first.
        case late
        /// Fails before committing (a 5xx the provider did not act on).
        case failsBeforeCommit
        /// Takes the charge and decides later (``decideProcessing()``).
        case processing
        /// Commits and sends its webhook while our call is still waiting for the answer.
        case webhookDuringCall
        /// The same, and then the answer is lost: only the webhook, answered 200 and never sent again, tells.
        case webhookDuringLostCall
    }

    struct Charge: Sendable {
        var key: String
        var reference: String
        var checkoutID: String
        var amount: Int64
        /// `approved`, `declined` or `processing` (decision pending: `approveLater`).
        var status: ProcessorChargeStatus
        var approveLater: Bool
        var firstAnswer: ChargeOutcome
    }

    struct Refund: Sendable {
        var key: String
        var reference: String
        var chargeReference: String
        var amount: Int64
        /// `pending` until decided, then `succeeded` or `failed`.
        var status: RefundRecord.Status
        var succeedsLater: Bool
    }

    struct State: Sendable {
        var charges: [String: Charge] = [:]
        var refunds: [String: Refund] = [:]
        var late: [(Charge, [ProviderEvent])] = []
        var outbox: [ProviderEvent] = []
        var fault = Fault.none
        var approve = true
        var refundSucceeds = true
        var counter = 0
        var checkoutOfKey: [String: String] = [:]
    }

    let profile: LedgerProfile
    /// Starts every id the ledger makes (charges, refunds, events): unique across schedules.
    let prefix: String
    let state = Mutex(State())
    /// Applies a webhook during a call (``Fault/webhookDuringCall``).
    /// Answers whether the merchant answered 200 (the provider never sends that event again:
    /// https://docs.adyen.com/development-resources/webhooks/#accept-webhooks).
    let deliverNow = Mutex<(@Sendable (ProviderEvent) async -> Bool)?>(nil)

    init(profile: LedgerProfile, prefix: String = "") {
        self.profile = profile
        self.prefix = "\(profile.name)_\(prefix)"
    }

    var name: String { profile.name }

    var unknownOutcomes: UnknownOutcomeResolution {
        profile.hasLookUp ? .lookUp(keyLifetime: .seconds(24 * 3600)) : .webhook(keyLifetime: .seconds(31 * 86400))
    }

    func expect(checkoutID: String, forKey key: String) { state.withLock { $0.checkoutOfKey[key] = checkoutID } }

    func charge(_ request: ChargeRequest) async throws(ProcessorError) -> ChargeOutcome {
        let key = request.idempotencyKey
        // A repeated key answers the first saved answer, whatever the charge became since
        // (https://docs.stripe.com/api/idempotent_requests).
        let step = state.withLock { state -> (ChargeOutcome?, Fault, [ProviderEvent]) in
            if let known = state.charges[key] { return (known.firstAnswer, .none, []) }
            let fault = state.fault
            state.fault = .none
            if fault == .failsBeforeCommit { return (nil, fault, []) }
            state.counter += 1
            let reference = "\(prefix)ch\(state.counter)"
            var charge = Charge(
                key: key, reference: reference, checkoutID: state.checkoutOfKey[key] ?? "",
                amount: request.amount.minorUnits,
                status: state.approve ? .approved : .declined, approveLater: state.approve,
                firstAnswer: state.approve ? .approved(reference: reference) : .declined(.doNotHonor))
            if fault == .processing {
                charge.status = .processing
                charge.firstAnswer = .processing(reference: reference)
            }
            let events = charge.status == .processing ? [] : [self.event(for: charge, &state.counter)]
            if fault == .late {
                state.late.append((charge, events))
                return (nil, fault, [])
            }
            state.charges[key] = charge
            if fault == .webhookDuringCall || fault == .webhookDuringLostCall {
                return (charge.firstAnswer, fault, events)
            }
            state.outbox += events
            return (charge.firstAnswer, fault, [])
        }
        switch step.1 {
        case .failsBeforeCommit: throw ProcessorError(.serverError, "503 before the charge was made")
        case .lost, .late: throw ProcessorError(.timeout, "no answer within the time limit")
        case .webhookDuringCall, .webhookDuringLostCall:
            let deliver = deliverNow.withLock { $0 }
            for event in step.2 where await deliver?(event) != true {
                state.withLock { $0.outbox.append(event) }
            }
            if step.1 == .webhookDuringLostCall { throw ProcessorError(.timeout, "no answer within the time limit") }
        case .none, .processing: break
        }
        guard let outcome = step.0 else { throw ProcessorError(.invalidAnswer, "no answer") }
        return outcome
    }

    func charge(idempotencyKey: String) async throws(ProcessorError) -> ProcessorCharge? {
        guard profile.hasLookUp else { throw ProcessorError(.lookUpUnavailable, "only its webhook tells") }
        return state.withLock { state in
            state.charges[idempotencyKey].map { charge in
                ProcessorCharge(
                    reference: charge.reference, idempotencyKey: charge.key,
                    amount: Money(minorUnits: charge.amount, currency: .usDollar), status: charge.status,
                    declineReason: charge.status == .declined ? .doNotHonor : nil)
            }
        }
    }

    /// A refund's current state, for the providers that list a payment's refunds (Stripe
    /// https://docs.stripe.com/api/refunds/list; Checkout.com's payment actions); Adyen only tells by webhook.
    func refundStatus(reference: String, charge: String) async throws(ProcessorError) -> RefundRecord.Status {
        guard profile.hasLookUp else { throw ProcessorError(.lookUpUnavailable, "only its webhook tells") }
        guard let refund = state.withLock({ $0.refunds.values.first { $0.reference == reference } }) else {
            throw ProcessorError(.chargeNotFound, "no refund \(reference)")
        }
        return refund.status
    }

    func void(reference: String) async throws(ProcessorError) -> ProcessorCharge {
        throw ProcessorError(.notVoidable, "not exercised")
    }

    func refund(reference: String, amount: Money, idempotencyKey: String) async throws(ProcessorError)
        -> ProcessorRefund
    {
        let result = state.withLock { state -> Result<Refund, ProcessorError> in
            if let known = state.refunds[idempotencyKey] { return .success(known) }
            guard let charge = state.charges.values.first(where: { $0.reference == reference }),
                charge.status == .approved
            else { return .failure(ProcessorError(.chargeNotFound, "no captured charge \(reference)")) }
            let taken = state.refunds.values.filter { $0.chargeReference == reference && $0.status != .failed }
                .reduce(0) { $0 + $1.amount }
            guard taken + amount.minorUnits <= charge.amount else {
                return .failure(ProcessorError(.refundExceedsCharge, "more than is left"))
            }
            state.counter += 1
            let pending = profile.refundsAlwaysPending || !state.refundSucceeds
            var refund = Refund(
                key: idempotencyKey, reference: "\(prefix)re\(state.counter)", chargeReference: reference,
                amount: amount.minorUnits, status: pending ? .pending : .succeeded, succeedsLater: state.refundSucceeds)
            if !pending { refund.succeedsLater = true }
            state.refunds[idempotencyKey] = refund
            if !pending { state.outbox.append(self.event(for: refund, charge: charge, &state.counter)) }
            return .success(refund)
        }
        let refund = try result.get()
        return ProcessorRefund(
            reference: refund.reference, idempotencyKey: refund.key, amount: amount,
            charge: ProcessorCharge(
                reference: refund.chargeReference, idempotencyKey: "", amount: amount, status: .partiallyRefunded),
            isPending: refund.status == .pending)
    }

    /// Late charges commit now, and owe their webhooks.
    func finishLate() {
        state.withLock { state in
            for (charge, events) in state.late where state.charges[charge.key] == nil {
                state.charges[charge.key] = charge
                state.outbox += events
            }
            state.late = []
        }
    }

    /// Charges and refunds decided later are decided now, and owe their webhooks.
    func decideProcessing() {
        state.withLock { state in
            for (key, var charge) in state.charges where charge.status == .processing {
                charge.status = charge.approveLater ? .approved : .declined
                state.charges[key] = charge
                state.outbox.append(self.event(for: charge, &state.counter))
            }
            for (key, var refund) in state.refunds where refund.status == .pending {
                refund.status = refund.succeedsLater ? .succeeded : .failed
                state.refunds[key] = refund
                guard let charge = state.charges.values.first(where: { $0.reference == refund.chargeReference })
                else { continue }
                state.outbox.append(self.event(for: refund, charge: charge, &state.counter))
            }
        }
    }

    func event(for charge: Charge, _ counter: inout Int) -> ProviderEvent {
        counter += 1
        return ProviderEvent(
            provider: profile.name, id: "evt_\(prefix)\(counter)",
            kind: charge.status == .approved ? .paymentSucceeded : .paymentFailed, merchantReference: charge.key,
            paymentReference: charge.reference, amount: charge.amount, currencyCode: "USD",
            reason: charge.status == .approved ? nil : "doNotHonor")
    }

    func event(for refund: Refund, charge: Charge, _ counter: inout Int)
        -> ProviderEvent
    {
        counter += 1
        return ProviderEvent(
            provider: profile.name, id: "evt_\(prefix)\(counter)",
            kind: refund.status == .succeeded ? .refundSucceeded : .refundFailed, merchantReference: charge.key,
            paymentReference: charge.reference, reference: refund.reference, refundKey: refund.key,
            amount: refund.amount, currencyCode: "USD")
    }
}

/// The merchant's side for one provider: a real SQLite store on a file (reopened on "restarts"), the real
/// PaymentService, Reconciler and ProviderEvents, on a virtual clock that each step moves on a second.
struct LedgerWorld {
    let profile: LedgerProfile
    let path: String
    let configuration = StoreConfiguration.demo
    let time = VirtualClock(Date(timeIntervalSince1970: 1_900_000_000))
    var store: SQLiteOrderStore
    var ledger: FakeLedger

    init(profile: LedgerProfile, path: String) throws {
        self.profile = profile
        self.path = path
        ledger = FakeLedger(profile: profile)
        store = try Self.open(path, time)
    }

    static func open(_ path: String, _ time: VirtualClock) throws -> SQLiteOrderStore {
        try SQLiteOrderStore(path: path, clock: time.read)
    }

    var clock: @Sendable () -> Date {
        time.read
    }

    func tick() { time.set(time.date.addingTimeInterval(1)) }

    var payments: PaymentService {
        PaymentService(
            store: store, processor: ledger, timeout: .seconds(5), concurrentWait: .milliseconds(10),
            logger: .silent, clock: clock)
    }

    var reconciler: Reconciler {
        Reconciler(
            store: store, processor: ledger, settleAfter: .seconds(1), timeout: .seconds(5), logger: .silent,
            clock: clock)
    }

    var events: ProviderEvents { ProviderEvents(store: store, logger: .silent) }

    /// One schedule on a fresh checkout (and a fresh ledger, so each schedule's agreement is checked alone).
    mutating func run(_ schedule: inout Schedule, tally: inout LedgerTally) async throws -> [String] {
        ledger = FakeLedger(profile: profile, prefix: "\(schedule.seed)_")
        let ledger = self.ledger
        let events = self.events
        ledger.deliverNow.withLock { $0 = { event in (try? await events.apply(event)) != nil } }
        tick()
        let checkout = try Checkout.create(
            items: [CheckoutItem(sku: "COFFEE-250", quantity: 1 + schedule.below(3))], configuration: configuration,
            now: time.date
        ).selectingShippingContact(
            ShippingAddress(locality: "Austin", administrativeArea: "TX", postalCode: "78701", countryCode: "US"),
            configuration: configuration)
        try await store.insertCheckout(checkout)
        let breakdown = try CheckoutPricing(configuration: configuration).price(checkout)
        var dropped = Set<String>()
        var droppedKeys = Set<String>()
        var tokens = 0

        func pay() async throws -> String {
            tokens += 1
            let key = "\(schedule.seed)-\(tokens)"
            let faults: [FakeLedger.Fault] = [
                .none, .none, .lost, .late, .failsBeforeCommit, .processing, .webhookDuringCall, .webhookDuringLostCall,
            ]
            let fault = faults[schedule.below(faults.count)]
            let approve = schedule.chance(75)
            schedule.note("pay \(key) \(fault) \(approve ? "approve" : "decline")")
            ledger.expect(checkoutID: checkout.id, forKey: key)
            ledger.state.withLock {
                $0.fault = fault
                $0.approve = approve
            }
            tick()
            _ = try await payments.pay(
                StoreFixture.newOrder(checkout, breakdown, transaction: key, configuration: configuration),
                token: testToken())
            return key
        }

        var keys = [try await pay()]
        for _ in 0..<(4 + schedule.below(8)) {
            tick()
            switch schedule.below(10) {
            case 0, 1:
                // The provider sends a webhook it owes: the oldest, the newest (out of order), and maybe again.
                let pick = ledger.state.withLock { state -> ProviderEvent? in
                    guard !state.outbox.isEmpty else { return nil }
                    let index = schedule.chance(50) ? 0 : state.outbox.count - 1
                    let event = state.outbox[index]
                    if !schedule.chance(30) { state.outbox.remove(at: index) }
                    return event
                }
                if let pick, !dropped.contains(pick.id) {
                    schedule.note("webhook \(pick.kind) \(pick.id)")
                    _ = try await events.apply(pick)
                }
            case 2:
                // A webhook the provider never sends: a payment's, or, where the reconciler can look a refund up
                // (not Adyen), a refund's.
                let lookUp = profile.hasLookUp
                let lost = ledger.state.withLock { state -> ProviderEvent? in
                    guard
                        let index = state.outbox.firstIndex(where: {
                            $0.kind == .paymentSucceeded || $0.kind == .paymentFailed
                                || (lookUp && ($0.kind == .refundSucceeded || $0.kind == .refundFailed))
                        })
                    else { return nil }
                    return state.outbox.remove(at: index)
                }
                if let lost {
                    dropped.insert(lost.id)
                    if let key = lost.merchantReference { droppedKeys.insert(key) }
                    schedule.note("webhook never sent \(lost.id)")
                }
            case 3:
                schedule.note("late answers committed")
                ledger.finishLate()
            case 4:
                schedule.note("provider decides")
                ledger.decideProcessing()
            case 5:
                // The reconciler looks a payment up only after `settleAfter`, longer than the provider takes to act
                // on a request it received: by then a late answer has landed.
                schedule.note("reconciler pass")
                ledger.finishLate()
                _ = try await reconciler.reconcileOnce(olderThan: .zero)
            case 6:
                schedule.note("restart")
                store = try Self.open(path, time)
            case 7:
                schedule.note("replay \(keys[0])")
                _ = try await payments.pay(
                    StoreFixture.newOrder(checkout, breakdown, transaction: keys[0], configuration: configuration),
                    token: testToken())
            case 8:
                keys.append(try await pay())
            default:
                try await refundTwice(&schedule, keys: keys)
            }
        }
        // The provider's side finishes: late answers land, decisions are made, every webhook still owed is sent
        // (shuffled), and the reconciler gets its passes.
        ledger.finishLate()
        ledger.decideProcessing()
        var owed = ledger.state.withLock { state -> [ProviderEvent] in
            defer { state.outbox = [] }
            return state.outbox
        }
        while !owed.isEmpty {
            let event = owed.remove(at: schedule.below(owed.count))
            _ = try await events.apply(event)
        }
        for _ in 0..<2 {
            tick()
            _ = try await reconciler.reconcileOnce(olderThan: .zero)
        }
        return try await agreement(checkout: checkout, keys: keys, droppedKeys: droppedKeys, tally: &tally)
    }

    /// Two refunds of the same amount at once, under two keys, on the checkout's paid order.
    private func refundTwice(_ schedule: inout Schedule, keys: [String]) async throws {
        var paid: Order?
        for key in keys {
            if let order = try await store.order(transactionID: key),
                order.status == .paid || order.status == .partiallyRefunded
            {
                paid = order
            }
        }
        guard let order = paid, order.payment.processorReference != nil else { return }
        let amount = max(1, order.totals.total / 4)
        let succeed = schedule.chance(80)
        ledger.state.withLock { $0.refundSucceeds = succeed }
        let base = "\(schedule.seed)-rf\(schedule.below(1_000_000))"
        schedule.note("two refunds of \(amount) (\(succeed ? "succeed" : "fail"))")
        // The admin API's use case (MerchantCore's OrderReversals), both at once.
        let reversals = OrderReversals(store: store, processor: ledger, timeout: .seconds(5), logger: .silent)
        async let first = reversals.refund(order, amount: amount, idempotencyKey: base + "a")
        async let second = reversals.refund(order, amount: amount, idempotencyKey: base + "b")
        _ = try await (first, second)
    }

    /// The checks: our store against the ledger.
    private func agreement(
        checkout: Checkout, keys: [String], droppedKeys: Set<String>, tally: inout LedgerTally
    ) async throws -> [String] {
        var problems: [String] = []
        let state = ledger.state.withLock { $0 }
        var orders: [Order] = []
        for key in keys {
            if let order = try await store.order(transactionID: key) { orders.append(order) }
        }
        let discrepancies = try await store.discrepancies(openOnly: true, limit: 10_000).filter {
            $0.checkoutID == checkout.id
        }
        tally.discrepancies += discrepancies.count
        let captured = state.charges.values.filter { $0.checkoutID == checkout.id && $0.status == .approved }
        tally.captured += captured.count
        if captured.count > 1 {
            tally.doubleCharges += 1
            problems.append("checkout charged \(captured.count) times")
        }
        for charge in state.charges.values where charge.checkoutID == checkout.id {
            guard let order = orders.first(where: { $0.payment.transactionID == charge.key }) else {
                problems.append("the provider has \(charge.key) (\(charge.status)) and we have no order")
                if charge.status == .approved { tally.lostApprovals += 1 }
                continue
            }
            let listed = discrepancies.contains { $0.orderID == order.id }
            switch charge.status {
            case .approved:
                if [.paid, .partiallyRefunded, .refunded].contains(order.status) {
                    tally.paidOrders += 1
                } else if listed {
                    break
                } else if !profile.hasLookUp, order.status.isUnsettled, droppedKeys.contains(charge.key) {
                    tally.waitingForAPerson += 1
                } else {
                    tally.lostApprovals += 1
                    problems.append("captured \(charge.key) is \(order.status) with no discrepancy")
                }
            case .declined:
                if !profile.hasLookUp, order.status.isUnsettled, droppedKeys.contains(charge.key) {
                    tally.waitingForAPerson += 1
                } else if order.status != .declined && !listed {
                    problems.append("declined \(charge.key) is \(order.status)")
                }
            default:
                problems.append("the provider left \(charge.key) \(charge.status) after deciding everything")
            }
            // The refunds we record sum to the provider's.
            let theirs = state.refunds.values.filter {
                $0.chargeReference == charge.reference && $0.status == .succeeded
            }
            .reduce(0) { $0 + $1.amount }
            if order.refunded != theirs {
                tally.mismatchedRefunds += 1
                problems.append("\(charge.key): we recorded \(order.refunded) refunded, the provider \(theirs)")
            }
            let pendingRefunds = try await store.refunds(orderID: order.id).filter { $0.status == .pending }
            if !pendingRefunds.isEmpty {
                problems.append(
                    "\(charge.key): \(pendingRefunds.count) refunds still pending after the provider decided")
            }
        }
        // An order the provider has no charge for: nothing was captured, and once looked up it says so.
        for order in orders where !state.charges.keys.contains(order.payment.transactionID) {
            if [.paid, .partiallyRefunded, .refunded].contains(order.status) {
                problems.append("\(order.payment.transactionID) is \(order.status) but the provider never charged it")
            }
            if profile.hasLookUp, order.status.isUnsettled {
                problems.append("\(order.payment.transactionID) left \(order.status) though a look-up can tell")
            } else if order.status.isUnsettled {
                tally.waitingForAPerson += 1
            }
        }
        return problems
    }
}

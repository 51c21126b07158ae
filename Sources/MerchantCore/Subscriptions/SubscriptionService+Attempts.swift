import ApplePay
import Foundation
import Foundations
import Logging
import Synchronization

/// A cycle's charge as an attempt: resolved by look-up before its cycle moves on, recorded by one rule, and given
/// back when its subscription ended while it was undecided.
extension SubscriptionService {
    // MARK: Resolving attempts

    /// Resolves the attempts whose outcome was not recorded, whatever the subscription's status (a cancel or an
    /// `UNLINK` meanwhile included), and answers the charges it recorded. Each attempt older than the charge's time
    /// limit (so that no instance is still waiting for its answer) and within the provider's key lifetime is looked
    /// up by its key (``PaymentProcessor/charge(lookingUp:)``); a decided charge is recorded by the rule of every
    /// answer (an approval of a subscription that ended meanwhile is then given back). Still undecided, it waits.
    /// When the look-up cannot tell (`lookUpUnavailable`, or a refusal of the look-up) or finds nothing charged,
    /// a subscription still owing the charge has it sent again under the same key, which the provider answers with
    /// its first outcome within the key lifetime; one that ended meanwhile waits for the webhook (nothing charged:
    /// the attempt ends). Never a new key. A provider only its webhook settles (Adyen) is not asked. Past the key
    /// lifetime nothing is asked or sent (a look-up would guess, and Checkout.com's and Stripe's look-ups send a
    /// request under the key again): the attempt waits for its webhook or a person (``chargesNeedingAttention(now:)``).
    public func resolveUnresolvedCharges(now: Date? = nil) async -> [SubscriptionCharge] {
        let now = now ?? clock()
        let unresolved: [Subscription]
        do {
            unresolved = try await store.subscriptions(SubscriptionFilter(unresolved: true, limit: 500))
        } catch {
            logger.error("cannot list unresolved subscription charges", metadata: ["code": "\(error.code.rawValue)"])
            return []
        }
        var recorded: [SubscriptionCharge] = []
        for subscription in unresolved {
            if let charge = await resolve(subscription, now: now) { recorded.append(charge) }
        }
        return recorded
    }

    /// The attempts past the provider's key lifetime that no look-up settles: for a person, who looks the key up in
    /// the provider's dashboard (`GET /admin/v1/attention`'s `subscriptionCharges`).
    public func chargesNeedingAttention(now: Date? = nil) async throws(OrderStoreError) -> [Subscription] {
        let now = now ?? clock()
        let resolution = processor.unknownOutcomes
        guard resolution.keyLifetime != nil else { return [] }
        return try await store.subscriptions(SubscriptionFilter(unresolved: true, limit: 500)).filter {
            guard let attempt = $0.unresolvedCharge else { return false }
            return Self.isPastKeyLifetime(attempt, resolution, now: now)
        }
    }

    static func isPastKeyLifetime(
        _ attempt: SubscriptionChargeAttempt, _ resolution: UnknownOutcomeResolution, now: Date
    ) -> Bool {
        guard let lifetime = resolution.keyLifetime else { return false }
        return attempt.since.addingTimeInterval(seconds(lifetime)) < now
    }

    /// Whether the scheduler may still charge it: live, or a cancelled deferred plan that still owes its charge.
    static func isChargeable(_ subscription: Subscription) -> Bool {
        subscription.isLive || (subscription.status == .cancelled && subscription.nextChargeAt != nil)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Looks one unresolved attempt up and records it when the provider decided (see
    /// ``resolveUnresolvedCharges(now:)``).
    func resolve(_ subscription: Subscription, now: Date) async -> SubscriptionCharge? {
        guard let attempt = subscription.unresolvedCharge else { return nil }
        // Sent less than a time limit ago: an instance may still be waiting for its answer.
        guard attempt.since.addingTimeInterval(Self.seconds(timeout)) <= now else { return nil }
        let resolution = processor.unknownOutcomes
        let fields: Logger.Metadata = [
            "subscriptionId": "\(subscription.id)", "idempotencyKey": "\(attempt.idempotencyKey)",
        ]
        if Self.isPastKeyLifetime(attempt, resolution, now: now) {
            logger.warning(
                "subscription charge unresolved past the provider's key lifetime: for a person", metadata: fields)
            return nil
        }
        // Only the provider's webhook can tell (Adyen): nothing to ask.
        if case .webhook = resolution { return nil }
        let processor = self.processor
        let lookup = ChargeLookup(
            idempotencyKey: attempt.idempotencyKey,
            amount: Money(
                minorUnits: subscription.amount, currency: Currency(code: subscription.currencyCode) ?? .usDollar),
            processorReference: attempt.processorReference)
        let result = await PaymentProcessing.withTimeLimit(timeout) {
            () async throws(ProcessorError) -> ProcessorCharge? in
            try await processor.charge(lookingUp: lookup)
        }
        let found: ProcessorCharge?
        switch result {
        case .success(let charge): found = charge
        case .failure(let error) where error.code == .chargeNotFound: found = nil
        case .failure(let error) where error.code == .lookUpUnavailable || !error.outcomeIsUnknown:
            // The look-up cannot tell (Checkout.com after a restart; Stripe, whose look-up is another request under
            // the same key). Within the key lifetime the provider answers the same key with its first outcome: the
            // same charge is sent again, for a subscription still owing it. One that ended waits for the webhook.
            var waiting = fields
            waiting["code"] = "\(error.code.rawValue)"
            guard Self.isChargeable(subscription) else {
                logger.info("subscription charge still unresolved: the look-up cannot tell", metadata: waiting)
                return nil
            }
            logger.info("subscription charge sent again under its key: the look-up cannot tell", metadata: waiting)
            return await send(subscription, key: attempt.idempotencyKey, at: attempt.since, resending: true)
        case .failure(let error):
            var waiting = fields
            waiting["code"] = "\(error.code.rawValue)"
            logger.info("subscription charge still unresolved", metadata: waiting)
            return nil
        }
        guard let found else {
            // Nothing was charged under the key. A subscription still owing the charge has it sent again under the
            // same key (the attempt, and when it was first sent, kept); one that ended meanwhile owes nothing more.
            guard Self.isChargeable(subscription) else {
                logger.info("subscription charge attempt found nothing charged: ended meanwhile", metadata: fields)
                var next = subscription
                next.unresolvedCharge = nil
                _ = try? await store.updateSubscription(next, expectedVersion: subscription.version, charge: nil)
                return nil
            }
            logger.info("subscription charge attempt found nothing charged: sent again under its key", metadata: fields)
            return await send(subscription, key: attempt.idempotencyKey, at: attempt.since, resending: true)
        }
        switch found.outcome {
        case .processing(let reference):
            await note(reference, of: subscription)
            return nil
        case .approved(let reference):
            return await record(
                decided(subscription, key: attempt.idempotencyKey, approvedAs: reference, at: attempt.since),
                charging: subscription)
        case .declined(let reason):
            return await record(
                decided(subscription, key: attempt.idempotencyKey, declinedFor: reason, at: attempt.since),
                charging: subscription)
        }
    }

    /// Records a decided charge, whatever happened to the subscription while it was in flight: an approval is never
    /// dropped. Over the version read, the outcome moves the subscription on. If another writer changed it meanwhile,
    /// the subscription is read again: still on the same attempt and still chargeable (a card update, say), the
    /// outcome moves it on from there; cancelled or unlinked meanwhile, the charge is recorded without reviving it
    /// and an approved one is given back (``giveBack(_:of:)``). Nothing is recorded twice: the charge row is UNIQUE
    /// by its key, so when another instance recorded the same attempt this one stops.
    func record(_ decided: SubscriptionCharge, charging read: Subscription) async -> SubscriptionCharge? {
        var current = read
        var charge = decided
        for _ in 0..<8 {
            let (next, givesBack) = SubscriptionBilling.afterDecided(current, charge)
            charge.refundOwed = givesBack
            let stored: Subscription?
            do {
                stored = try await store.updateSubscription(next, expectedVersion: current.version, charge: charge)
            } catch  where error.code == .conflict {
                // The charge row exists: another instance recorded this attempt.
                return nil
            } catch {
                logger.error(
                    "subscription charge decided but not recorded",
                    metadata: [
                        "subscriptionId": "\(read.id)", "idempotencyKey": "\(charge.idempotencyKey)",
                        "code": "\(error.code.rawValue)",
                    ])
                return nil
            }
            if let stored {
                logger.info(
                    "subscription charged",
                    metadata: [
                        "subscriptionId": "\(read.id)", "cycle": "\(charge.cycle)", "attempt": "\(charge.attempt)",
                        "status": "\(charge.status)", "next": "\(stored.status.rawValue)",
                    ])
                if givesBack {
                    logger.warning(
                        "subscription ended while its charge was in flight: giving the charge back",
                        metadata: ["subscriptionId": "\(read.id)", "status": "\(stored.status.rawValue)"])
                    await giveBack(charge, of: stored)
                } else if stored.status == .cancelled,
                    stored.statusReason == "unpaid" || read.status == .cancelled, stored.nextChargeAt == nil
                {
                    // Nothing more to charge: unpaid after the last retry, or the charge a late cancellation owed.
                    await unlinkAtGateway(stored)
                }
                return charge
            }
            do {
                guard let fresh = try await store.subscription(id: read.id) else { return nil }
                current = fresh
            } catch {
                logger.error(
                    "subscription charge decided but not recorded",
                    metadata: [
                        "subscriptionId": "\(read.id)", "idempotencyKey": "\(charge.idempotencyKey)",
                        "code": "\(error.code.rawValue)",
                    ])
                return nil
            }
        }
        logger.error(
            "subscription charge decided but not recorded (too many concurrent changes)",
            metadata: ["subscriptionId": "\(read.id)", "idempotencyKey": "\(charge.idempotencyKey)"])
        return nil
    }

    /// Gives back an approved charge of a subscription that ended while it was in flight: voided, or refunded in
    /// full when the processor cannot void it, and recorded with an event (`subscriptionChargeRefunded`). Answers
    /// whether it is given back; a processor that does not decide leaves it owed (``SubscriptionCharge/refundOwed``),
    /// for the next scheduler pass (``giveBackOwedCharges()``).
    @discardableResult
    func giveBack(_ charge: SubscriptionCharge, of subscription: Subscription) async -> Bool {
        guard let reference = charge.processorReference else { return false }
        let processor = self.processor
        let currency = Currency(code: charge.currencyCode) ?? .usDollar
        var given: String?
        var refunded: SubscriptionChargeRefund?
        let voided = await PaymentProcessing.withTimeLimit(timeout) {
            () async throws(ProcessorError) -> ProcessorCharge in
            try await processor.void(reference: reference)
        }
        switch voided {
        case .success(let answer) where answer.status == .voided: given = "void:" + answer.reference
        default:
            let key = charge.idempotencyKey + ":refund"
            let refund = await PaymentProcessing.withTimeLimit(timeout) {
                () async throws(ProcessorError) -> ProcessorRefund in
                try await processor.refund(
                    reference: reference, amount: Money(minorUnits: charge.amount, currency: currency),
                    idempotencyKey: key)
            }
            if case .success(let answer) = refund {
                given = "refund:" + answer.reference
                // Taken and decided later (Adyen `received`, Checkout.com `202`, Stripe `pending`): pending until its
                // webhook says whether the money went back.
                refunded = SubscriptionChargeRefund(
                    chargeKey: charge.idempotencyKey, refundKey: key, reference: answer.reference,
                    amount: answer.amount.minorUnits, status: answer.isPending ? .pending : .succeeded,
                    createdAt: clock())
            }
        }
        guard let given else {
            logger.error(
                "an approved charge of an ended subscription could not be given back yet",
                metadata: ["subscriptionId": "\(subscription.id)", "idempotencyKey": "\(charge.idempotencyKey)"])
            return false
        }
        do {
            _ = try await store.recordChargeRefund(
                charge, of: subscription, reference: given, refund: refunded, at: clock())
            logger.info(
                "subscription charge given back",
                metadata: [
                    "subscriptionId": "\(subscription.id)", "idempotencyKey": "\(charge.idempotencyKey)",
                    "reference": "\(given)",
                ])
            return true
        } catch {
            logger.error(
                "subscription charge given back but not recorded",
                metadata: [
                    "subscriptionId": "\(subscription.id)", "idempotencyKey": "\(charge.idempotencyKey)",
                    "reference": "\(given)",
                ])
            return false
        }
    }

    /// Tries again to give back the approved charges still owing a refund (the processor did not decide before).
    func giveBackOwedCharges() async {
        let owed: [SubscriptionCharge]
        do {
            owed = try await store.chargesOwingRefund(limit: 100)
        } catch {
            logger.error("cannot list charges owing a refund", metadata: ["code": "\(error.code.rawValue)"])
            return
        }
        for charge in owed {
            guard let subscription = try? await store.subscription(id: charge.subscriptionID) else { continue }
            await giveBack(charge, of: subscription)
        }
    }
}

import ApplePay
import Foundation
import Foundations

/// Subscriptions from checkout to their last charge: starts them after the checkout's payment, charges what is due
/// (the scheduler), cancels (unlinking the merchant token at Apple), takes balance reports of automatic-reload
/// plans, and applies Apple's merchant-token events.
///
/// Exactly once per billing cycle, across restarts and instances: each attempt is charged under the idempotency
/// key `sub_…:c<cycle>:a<attempt>` (the processor answers a repeated key with its first outcome, charging nothing
/// twice), and the outcome is written with ``SubscriptionStore/updateSubscription(_:expectedVersion:charge:)``,
/// which only one writer wins. An unknown outcome (time limit, 5xx) changes nothing: the next pass asks again
/// with the same key.
public struct SubscriptionService: Sendable {
    public let store: any SubscriptionStore
    public let processor: any PaymentProcessor
    /// Apple's merchant-token API; `nil` leaves cancellations local and events unpulled.
    public let gateway: (any MerchantTokenGateway)?
    public let timeout: Duration
    public let logger: RequestLogger
    public let clock: @Sendable () -> Date

    public init(
        store: any SubscriptionStore, processor: any PaymentProcessor, gateway: (any MerchantTokenGateway)? = nil,
        timeout: Duration = .seconds(10), logger: RequestLogger = .standardError,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.processor = processor
        self.gateway = gateway
        self.timeout = timeout
        self.logger = logger
        self.clock = clock
    }

    // MARK: Starting

    /// The subscription a paid plan checkout starts (idempotent per checkout).
    /// - Parameters:
    ///   - checkout: the plan checkout.
    ///   - product: its product and plan.
    ///   - orderID: the order of the payment at checkout (`nil` for a deferred plan).
    ///   - method: the token's merchant token and card details (``PlanPaymentMethod``: nothing secret).
    ///   - paymentMethodReference: the processor's kept method.
    public func start(
        checkout: Checkout, product: Product, plan: BillingPlan, orderID: String?, method: PlanPaymentMethod,
        paymentMethodReference: String, configuration: StoreConfiguration
    ) async throws(OrderStoreError) -> Subscription {
        let now = clock()
        let currency = configuration.currency
        let amount = Money(rounding: product.price, currency: currency)?.minorUnits ?? 0
        var anchor = now
        switch plan {
        case .recurring(let recurring):
            if let trial = recurring.trial {
                anchor = BillingCalendar.date(
                    checkout.createdAt, plus: 1, trial.intervalUnit, every: trial.intervalCount)
            } else {
                anchor = BillingCalendar.date(
                    checkout.createdAt, plus: 1, recurring.intervalUnit, every: recurring.intervalCount)
            }
        case .deferred(let deferred): anchor = deferred.billingDate
        case .automaticReload: anchor = now
        }
        // Whole seconds: the due dates then read back exactly from their ISO 8601 form (an operator can pass
        // `nextChargeAt` as the sandbox's `now`), and a cycle is due at most a second earlier.
        anchor = Date(timeIntervalSince1970: anchor.timeIntervalSince1970.rounded(.down))
        var subscription = Subscription(
            id: "sub_" + randomHex(bytes: 12), secret: randomHex(bytes: 16), checkoutID: checkout.id, orderID: orderID,
            sku: product.sku, productName: product.name, plan: plan, amount: amount, currencyCode: currency.code,
            merchantTokenIdentifier: method.merchantTokenIdentifier, paymentMethodReference: paymentMethodReference,
            network: method.network, cardSuffix: method.cardSuffix, cardExpiration: method.cardExpiration,
            cardArtURL: method.cardArtURL,
            anchor: anchor, nextChargeAt: nil, createdAt: now, updatedAt: now)
        if case .automaticReload = plan {
            subscription.nextChargeAt = nil
        } else {
            subscription.nextChargeAt = SubscriptionBilling.dueDate(of: subscription, cycle: 1)
        }
        let stored = try await store.insertSubscription(subscription)
        logger.log(
            "info", "subscription started",
            ["subscriptionId": stored.id, "checkoutId": checkout.id, "plan": plan.kind])
        return stored
    }

    // MARK: The scheduler

    /// Charges every subscription due at `now`, repeating until none is (a subscription several cycles behind,
    /// after a restart, catches up one cycle per pass). Answers the charges recorded by this call.
    ///
    /// Due are the live subscriptions (`active`, `pastDue`) and the cancelled ones that still owe a charge: a
    /// deferred plan cancelled after its free-cancellation date (``SubscriptionBilling/cancellationOwesCharge(_:at:)``)
    /// keeps its billing date as ``Subscription/nextChargeAt``; every other cancellation clears it.
    public func chargeDue(now: Date? = nil) async -> [SubscriptionCharge] {
        let now = now ?? clock()
        var recorded: [SubscriptionCharge] = []
        for _ in 0..<1000 {
            let due: [Subscription]
            do {
                due =
                    try await store.subscriptions(
                        SubscriptionFilter(statuses: [.active, .pastDue], dueBy: now, limit: 100))
                    + store.subscriptions(SubscriptionFilter(statuses: [.cancelled], dueBy: now, limit: 100))
            } catch {
                logger.log("error", "cannot list due subscriptions", ["code": error.code.rawValue])
                return recorded
            }
            var progressed = false
            for subscription in due {
                if let charge = await chargeCycle(of: subscription, now: now) {
                    recorded.append(charge)
                    progressed = true
                }
            }
            if !progressed { break }
        }
        return recorded
    }

    /// The scheduler's loop: ``chargeDue(now:)`` at once and then every `interval`, until cancelled.
    public func run(every interval: Duration) async {
        while !Task.isCancelled {
            _ = await chargeDue()
            try? await Task.sleep(for: interval)
        }
    }

    /// Charges the current cycle (attempt) of one subscription and records the outcome; `nil` when nothing was
    /// recorded (outcome unknown, or another instance recorded it first).
    func chargeCycle(of subscription: Subscription, now: Date) async -> SubscriptionCharge? {
        let key = SubscriptionBilling.idempotencyKey(subscription)
        let currency = Currency(code: subscription.currencyCode) ?? .usDollar
        let request = StoredMethodChargeRequest(
            paymentMethodReference: subscription.paymentMethodReference,
            amount: Money(minorUnits: subscription.amount, currency: currency), idempotencyKey: key)
        let processor = self.processor
        let result = await PaymentProcessing.withTimeLimit(timeout) {
            () async throws(ProcessorError) -> ChargeOutcome in
            try await processor.charge(storedMethod: request)
        }
        let outcome: ChargeOutcome
        switch result {
        case .success(let answer): outcome = answer
        case .failure(let error):
            logger.log(
                "warn", "subscription charge not decided",
                ["subscriptionId": subscription.id, "idempotencyKey": key, "code": error.code.rawValue])
            if error.code == .paymentMethodNotFound {
                var next = subscription
                next.status = .cancelled
                next.statusReason = "paymentMethodNotFound"
                next.nextChargeAt = nil
                _ = try? await store.updateSubscription(next, expectedVersion: subscription.version, charge: nil)
            }
            return nil
        }
        let dueAt = SubscriptionBilling.currentDueDate(of: subscription)
        var charge = SubscriptionCharge(
            subscriptionID: subscription.id, cycle: subscription.cycle, attempt: subscription.attempt,
            idempotencyKey: key, amount: subscription.amount, currencyCode: subscription.currencyCode,
            status: "approved", processorReference: nil, declineCode: nil, dueAt: dueAt, chargedAt: now)
        let next: Subscription
        switch outcome {
        case .approved(let reference):
            charge.processorReference = reference
            next = SubscriptionBilling.afterApproval(subscription)
        case .declined(let reason):
            charge.status = "declined"
            charge.declineCode = reason.code
            next = SubscriptionBilling.afterDecline(subscription, dueAt: dueAt)
        }
        do {
            guard
                let stored = try await store.updateSubscription(
                    next, expectedVersion: subscription.version, charge: charge)
            else { return nil }
            logger.log(
                "info", "subscription charged",
                [
                    "subscriptionId": subscription.id, "cycle": String(charge.cycle), "attempt": String(charge.attempt),
                    "status": charge.status, "next": stored.status.rawValue,
                ])
            if stored.status == .cancelled, stored.statusReason == "unpaid" || subscription.status == .cancelled,
                stored.nextChargeAt == nil
            {
                // Nothing more to charge: unpaid after the last retry, or the charge a late cancellation owed.
                await unlinkAtGateway(stored)
            }
            return charge
        } catch {
            logger.log(
                "error", "subscription charge decided but not recorded",
                ["subscriptionId": subscription.id, "idempotencyKey": key, "code": error.code.rawValue])
            return nil
        }
    }

    // MARK: Cancelling, reloads

    /// Why a request about a subscription cannot be honoured.
    public enum Refusal: Error, Sendable, Equatable {
        case notFound
        /// The subscription is already cancelled or unlinked.
        case notLive(SubscriptionStatus)
        /// Not an automatic-reload subscription.
        case notAutomaticReload
        /// Another writer changed it meanwhile; try again.
        case conflict
    }

    /// Cancels a live subscription (`by`: `customer` or `merchant`) and unlinks its merchant token at Apple: no
    /// more charges.
    ///
    /// A deferred plan's terms are what its payment request showed the customer: free cancellation until
    /// `freeCancellationDate`. Cancelled at or before that instant (or, without one, before the billing date),
    /// nothing is charged. Cancelled after it, the subscription is `cancelled` but the amount is still charged on
    /// the billing date (``Subscription/nextChargeAt`` stays set), and the token is unlinked only after that
    /// charge.
    public func cancel(id: String, by actor: String) async throws -> Subscription {
        for _ in 0..<3 {
            guard let current = try await store.subscription(id: id) else { throw Refusal.notFound }
            guard current.isLive else { throw Refusal.notLive(current.status) }
            let owes = SubscriptionBilling.cancellationOwesCharge(current, at: clock())
            var next = current
            next.status = .cancelled
            next.statusReason = actor
            if !owes { next.nextChargeAt = nil }
            if let stored = try await store.updateSubscription(next, expectedVersion: current.version, charge: nil) {
                logger.log(
                    "info", "subscription cancelled",
                    ["subscriptionId": stored.id, "by": actor, "chargeOwed": owes ? "true" : "false"])
                if !owes { await unlinkAtGateway(stored) }
                return stored
            }
        }
        throw Refusal.conflict
    }

    /// The merchant reports an automatic-reload subscription's balance: below the threshold, a reload is due now.
    public func reportBalance(id: String, balance: Decimal) async throws -> Subscription {
        for _ in 0..<3 {
            guard let current = try await store.subscription(id: id) else { throw Refusal.notFound }
            guard case .automaticReload(let plan) = current.plan else { throw Refusal.notAutomaticReload }
            guard current.isLive else { throw Refusal.notLive(current.status) }
            guard balance < plan.thresholdAmount, current.nextChargeAt == nil else { return current }
            var next = current
            next.nextChargeAt = clock()
            if let stored = try await store.updateSubscription(next, expectedVersion: current.version, charge: nil) {
                return stored
            }
        }
        throw Refusal.conflict
    }

    private func unlinkAtGateway(_ subscription: Subscription) async {
        guard let gateway, let token = subscription.merchantTokenIdentifier else { return }
        do {
            try await gateway.unlink(merchantTokenIdentifier: token)
            logger.log("info", "merchant token unlinked at Apple", ["subscriptionId": subscription.id])
        } catch {
            logger.log(
                "warn", "cannot unlink the merchant token at Apple",
                ["subscriptionId": subscription.id, "error": String(describing: error)])
        }
    }

    // MARK: Apple's merchant-token events

    /// What applying an event did.
    public enum EventResult: String, Sendable {
        case applied, alreadyApplied, unknownEvent, noGateway, gatewayFailed
    }

    /// Pulls event `eventID` from the gateway and applies it once: `UNLINK` stops every subscription on the token;
    /// `UPDATED_METADATA` updates the card's suffix and expiry; `UPDATED_CARD_ART` records the art's URL. The
    /// event id is recorded first, in its own transaction, so a repeated notification changes nothing.
    public func applyTokenEvent(eventID: String) async -> EventResult {
        guard let gateway else { return .noGateway }
        let event: MerchantTokenEvent?
        do {
            event = try await gateway.event(id: eventID)
        } catch {
            logger.log("warn", "cannot pull the merchant token event", ["error": String(describing: error)])
            return .gatewayFailed
        }
        guard let event else { return .unknownEvent }
        do {
            let seen = try await store.subscriptions(
                SubscriptionFilter(merchantTokenIdentifier: event.merchantTokenIdentifier, limit: 100))
            if try await store.recordTokenEvent(
                eventID: eventID, eventType: event.eventType,
                merchantTokenIdentifier: event.merchantTokenIdentifier) == false
            {
                return .alreadyApplied
            }
            for subscription in seen {
                var next = subscription
                switch event.eventType {
                case "UNLINK":
                    guard subscription.status != .unlinked else { continue }
                    next.status = .unlinked
                    next.statusReason = event.reason
                    next.nextChargeAt = nil
                case "UPDATED_METADATA":
                    if let card = event.merchantTokenMetadata?.cardMetadata {
                        next.cardSuffix = card.suffix ?? next.cardSuffix
                        next.cardExpiration = card.expirationDate ?? next.cardExpiration
                    }
                    if let art = event.merchantTokenMetadata?.cardArt?.first?.url { next.cardArtURL = art }
                case "UPDATED_CARD_ART":
                    if let art = event.merchantTokenMetadata?.cardArt?.first?.url { next.cardArtURL = art }
                default:
                    continue
                }
                guard next != subscription else { continue }
                _ = try await store.updateSubscription(next, expectedVersion: subscription.version, charge: nil)
            }
            logger.log(
                "info", "merchant token event applied",
                ["eventId": eventID, "eventType": event.eventType, "subscriptions": String(seen.count)])
            return .applied
        } catch {
            logger.log("error", "cannot apply the merchant token event", ["eventId": eventID])
            return .gatewayFailed
        }
    }
}

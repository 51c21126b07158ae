import ApplePay
import Foundation
import Foundations
import Logging
import Synchronization

/// Subscriptions from checkout to their last charge: starts them after the checkout's payment, charges what is due
/// (the scheduler), cancels (unlinking the merchant token at Apple), takes balance reports of automatic-reload
/// plans, and applies Apple's merchant-token events.
///
/// Exactly once per billing cycle, across restarts and instances: each attempt is charged under the idempotency
/// key `sub_…:c<cycle>:a<attempt>` (the processor answers a repeated key with its first outcome, charging nothing
/// twice), and the outcome is written with ``SubscriptionStore/updateSubscription(_:expectedVersion:charge:)``,
/// which only one writer wins. Each attempt is written on the subscription before it is sent
/// (``Subscription/unresolvedCharge``); an outcome that is unknown (time limit, 5xx) or decided later (`processing`)
/// leaves it there, and every later pass looks it up by its key before anything else happens to the cycle, even
/// once the subscription is cancelled or unlinked.
public struct SubscriptionService: Sendable {
    public let store: any SubscriptionStore
    public let processor: any PaymentProcessor
    /// Apple's merchant-token API; `nil` leaves cancellations local and events unpulled.
    public let gateway: (any MerchantTokenGateway)?
    public let timeout: Duration
    public let logger: Logger
    public let clock: @Sendable () -> Date
    /// Apple's notifications in flight (``handleTokenNotification(eventID:timeLimit:)``).
    public let notifications: TokenNotifications

    public init(
        store: any SubscriptionStore, processor: any PaymentProcessor, gateway: (any MerchantTokenGateway)? = nil,
        timeout: Duration = .seconds(10), logger: Logger = Logger(label: "applepay.subscriptions"),
        clock: @escaping @Sendable () -> Date = { Date() }, notifications: TokenNotifications = TokenNotifications()
    ) {
        self.notifications = notifications
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
    ///   - customerReference: the processor's customer the method is attached to, when it keeps one (Stripe).
    public func start(
        checkout: Checkout, product: Product, plan: BillingPlan, orderID: String?, method: PlanPaymentMethod,
        paymentMethodReference: String, customerReference: String? = nil, configuration: StoreConfiguration
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
            id: "sub_" + timeOrderedHex(milliseconds: now.unixMilliseconds),
            secret: checkout.subscriptionSecret ?? randomHex(bytes: 16),
            checkoutID: checkout.id, orderID: orderID,
            sku: product.sku, productName: product.name, plan: plan, amount: amount, currencyCode: currency.code,
            merchantTokenIdentifier: method.merchantTokenIdentifier, paymentMethodReference: paymentMethodReference,
            network: method.network, cardSuffix: method.cardSuffix, cardExpiration: method.cardExpiration,
            cardArtURL: method.cardArtURL, anchor: anchor, nextChargeAt: nil, createdAt: now, updatedAt: now,
            cardCountry: method.cardCountry, cardDescription: method.cardDescription,
            cardLongDescription: method.cardLongDescription, customerReference: customerReference)
        if case .automaticReload = plan {
            subscription.nextChargeAt = nil
        } else {
            subscription.nextChargeAt = SubscriptionBilling.dueDate(of: subscription, cycle: 1)
        }
        let stored = try await store.insertSubscription(subscription)
        logger.info(
            "subscription started",
            metadata: ["subscriptionId": "\(stored.id)", "checkoutId": "\(checkout.id)", "plan": "\(plan.kind)"])
        return stored
    }

    // MARK: The scheduler

    /// Charges every subscription due at `now`, repeating until none is (a subscription several cycles behind,
    /// after a restart, catches up one cycle per pass). Answers the charges recorded by this call.
    ///
    /// First it resolves the attempts whose outcome is not recorded (``resolveUnresolvedCharges(now:)``), whatever
    /// the subscription's status: a subscription with one is neither charged again nor caught up until it is
    /// resolved. Due are the live subscriptions (`active`, `pastDue`) and the cancelled ones that still owe a
    /// charge: a deferred plan cancelled after its free-cancellation date
    /// (``SubscriptionBilling/cancellationOwesCharge(_:at:)``) keeps its billing date as
    /// ``Subscription/nextChargeAt``; every other cancellation clears it.
    public func chargeDue(now: Date? = nil) async -> [SubscriptionCharge] {
        let now = now ?? clock()
        await giveBackOwedCharges()
        var recorded = await resolveUnresolvedCharges(now: now)
        for _ in 0..<1000 {
            let due: [Subscription]
            do {
                due =
                    try await store.subscriptions(
                        SubscriptionFilter(statuses: [.active, .pastDue], dueBy: now, unresolved: false, limit: 100))
                    + store.subscriptions(
                        SubscriptionFilter(statuses: [.cancelled], dueBy: now, unresolved: false, limit: 100))
            } catch {
                logger.error("cannot list due subscriptions", metadata: ["code": "\(error.code.rawValue)"])
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
    /// recorded (outcome unknown or decided later, or another instance took the attempt first). A subscription more
    /// than one cycle behind (after an outage) first passes over the cycles it missed
    /// (``SubscriptionBilling/catchUp(_:now:)``), recorded as skipped, and is charged for the latest one only.
    ///
    /// The attempt is written on the subscription (``Subscription/unresolvedCharge``) over the version read before
    /// the charge is sent, so only one instance sends it; an answer that does not decide leaves it there for
    /// ``resolveUnresolvedCharges(now:)``.
    func chargeCycle(of read: Subscription, now: Date) async -> SubscriptionCharge? {
        // An attempt not resolved yet: nothing moves on (no catch-up, no next attempt) until it is.
        guard read.unresolvedCharge == nil else { return nil }
        var attempting = read
        var event: SubscriptionEvent?
        if let caughtUp = SubscriptionBilling.catchUp(read, now: now) {
            attempting = caughtUp
            event = SubscriptionEvent(
                kind: "subscriptionCyclesSkipped",
                detail: [
                    "fromCycle": String(read.cycle), "toCycle": String(caughtUp.cycle - 1),
                    "skipped": String(caughtUp.skippedCycles - read.skippedCycles),
                ])
        }
        let key = SubscriptionBilling.idempotencyKey(attempting)
        attempting.unresolvedCharge = SubscriptionChargeAttempt(idempotencyKey: key, since: now)
        let subscription: Subscription
        do {
            // Another instance that read the same version sends nothing: only one key per cycle goes out.
            guard
                let stored = try await store.updateSubscription(
                    attempting, expectedVersion: read.version, charge: nil, event: event)
            else { return nil }
            subscription = stored
        } catch {
            logger.error(
                "cannot record the subscription charge attempt: not sent",
                metadata: ["subscriptionId": "\(read.id)", "code": "\(error.code.rawValue)"])
            return nil
        }
        if event != nil {
            logger.warning(
                "missed subscription cycles skipped",
                metadata: [
                    "subscriptionId": "\(read.id)", "skipped": "\(subscription.skippedCycles - read.skippedCycles)",
                    "cycle": "\(subscription.cycle)",
                ])
        }
        return await send(subscription, key: key, at: now, resending: false)
    }

    /// Sends the stored-method charge of `subscription`'s unresolved attempt under `key` and records a decided
    /// outcome (at `now`: when it was charged). An unknown or `processing` answer leaves the attempt unresolved.
    /// A first send refused outright (nothing charged) ends the attempt, so the next pass sends the same key again;
    /// a resend (`resending`: the key went out before, and the provider replays its first answer within its key
    /// lifetime) that fails leaves it as it is.
    func send(_ subscription: Subscription, key: String, at now: Date, resending: Bool) async
        -> SubscriptionCharge?
    {
        let currency = Currency(code: subscription.currencyCode) ?? .usDollar
        let request = StoredMethodChargeRequest(
            paymentMethodReference: subscription.paymentMethodReference,
            amount: Money(minorUnits: subscription.amount, currency: currency), idempotencyKey: key,
            customerReference: subscription.customerReference)
        let processor = self.processor
        let result = await PaymentProcessing.withTimeLimit(timeout) {
            () async throws(ProcessorError) -> ChargeOutcome in
            try await processor.charge(storedMethod: request)
        }
        let outcome: ChargeOutcome
        switch result {
        case .success(let answer): outcome = answer
        case .failure(let error):
            logger.warning(
                "subscription charge not decided",
                metadata: [
                    "subscriptionId": "\(subscription.id)", "idempotencyKey": "\(key)",
                    "code": "\(error.code.rawValue)", "resent": .string(resending ? "true" : "false"),
                ])
            if error.outcomeIsUnknown || resending {
                // The attempt stays unresolved: the next pass looks it up by its key.
                if let reference = error.processorReference { await note(reference, of: subscription) }
                return nil
            }
            // Refused before anything was charged: the attempt ends; the next pass sends the same key again.
            var next = subscription
            next.unresolvedCharge = nil
            if error.code == .paymentMethodNotFound {
                next.status = .cancelled
                next.statusReason = "paymentMethodNotFound"
                next.nextChargeAt = nil
            }
            _ = try? await store.updateSubscription(next, expectedVersion: subscription.version, charge: nil)
            return nil
        }
        switch outcome {
        case .approved(let reference):
            return await record(decided(subscription, key: key, approvedAs: reference, at: now), charging: subscription)
        case .declined(let reason):
            return await record(decided(subscription, key: key, declinedFor: reason, at: now), charging: subscription)
        case .processing(let reference):
            // Decided later: the attempt stays unresolved with the provider's reference, settled by its webhook or a
            // look-up, never by a new key.
            logger.info(
                "subscription charge processing at the provider",
                metadata: [
                    "subscriptionId": "\(subscription.id)", "idempotencyKey": "\(key)",
                    "processorReference": "\(reference)",
                ])
            await note(reference, of: subscription)
            return nil
        }
    }

    /// The charge row of `subscription`'s current attempt, decided.
    func decided(
        _ subscription: Subscription, key: String, approvedAs reference: String? = nil,
        declinedFor reason: DeclineReason? = nil, at chargedAt: Date
    ) -> SubscriptionCharge {
        SubscriptionCharge(
            subscriptionID: subscription.id, cycle: subscription.cycle, attempt: subscription.attempt,
            idempotencyKey: key, amount: subscription.amount, currencyCode: subscription.currencyCode,
            status: reason == nil ? "approved" : "declined", processorReference: reason == nil ? reference : nil,
            declineCode: reason?.code, dueAt: SubscriptionBilling.currentDueDate(of: subscription),
            chargedAt: chargedAt)
    }

    /// Keeps the provider's reference on the unresolved attempt (so a webhook naming only that reference finds it);
    /// a concurrent writer is read again, and an attempt resolved meanwhile is left alone.
    func note(_ reference: String, of read: Subscription) async {
        var current = read
        for _ in 0..<3 {
            guard var attempt = current.unresolvedCharge, attempt.processorReference != reference else { return }
            attempt.processorReference = reference
            var next = current
            next.unresolvedCharge = attempt
            do {
                if try await store.updateSubscription(next, expectedVersion: current.version, charge: nil) != nil {
                    return
                }
                guard let fresh = try await store.subscription(id: read.id) else { return }
                current = fresh
            } catch {
                return
            }
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
        /// Paid with a device token, or no merchant-token gateway configured: nothing to tell Apple.
        case noMerchantToken
        /// Apple's merchant-token gateway refused or did not answer.
        case gatewayFailed
    }

    /// Apple's "Update Merchant Metadata": Apple sends the notifications of the subscription's merchant token to
    /// `tokenNotificationURL` from now on (the public URL moved, say). Answers the subscription, unchanged.
    public func updateTokenNotificationURL(id: String, to tokenNotificationURL: String) async throws -> Subscription {
        guard let subscription = try await store.subscription(id: id) else { throw Refusal.notFound }
        guard let gateway, let token = subscription.merchantTokenIdentifier else { throw Refusal.noMerchantToken }
        do {
            try await gateway.updateMerchantMetadata(
                merchantTokenIdentifier: token, tokenNotificationURL: tokenNotificationURL)
        } catch {
            logger.warning(
                "cannot update the merchant token's notification URL at Apple",
                metadata: ["subscriptionId": "\(id)", "error": "\(error)"])
            throw Refusal.gatewayFailed
        }
        logger.info("merchant token notification URL updated at Apple", metadata: ["subscriptionId": "\(id)"])
        return subscription
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
                logger.info(
                    "subscription cancelled",
                    metadata: [
                        "subscriptionId": "\(stored.id)", "by": "\(actor)",
                        "chargeOwed": .string(owes ? "true" : "false"),
                    ])
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

    func unlinkAtGateway(_ subscription: Subscription) async {
        guard let gateway, let token = subscription.merchantTokenIdentifier else { return }
        do {
            try await gateway.unlink(merchantTokenIdentifier: token)
            logger.info("merchant token unlinked at Apple", metadata: ["subscriptionId": "\(subscription.id)"])
        } catch {
            logger.warning(
                "cannot unlink the merchant token at Apple",
                metadata: ["subscriptionId": "\(subscription.id)", "error": "\(error)"])
        }
    }
}

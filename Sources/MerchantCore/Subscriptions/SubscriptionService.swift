import ApplePay
import Foundation
import Foundations
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
    public let logger: RequestLogger
    public let clock: @Sendable () -> Date
    /// Apple's notifications in flight (``handleTokenNotification(eventID:timeLimit:)``).
    public let notifications: TokenNotifications

    public init(
        store: any SubscriptionStore, processor: any PaymentProcessor, gateway: (any MerchantTokenGateway)? = nil,
        timeout: Duration = .seconds(10), logger: RequestLogger = .standardError,
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
            id: "sub_" + randomHex(bytes: 12), secret: checkout.subscriptionSecret ?? randomHex(bytes: 16),
            checkoutID: checkout.id, orderID: orderID,
            sku: product.sku, productName: product.name, plan: plan, amount: amount, currencyCode: currency.code,
            merchantTokenIdentifier: method.merchantTokenIdentifier, paymentMethodReference: paymentMethodReference,
            network: method.network, cardSuffix: method.cardSuffix, cardExpiration: method.cardExpiration,
            cardArtURL: method.cardArtURL, anchor: anchor, nextChargeAt: nil, createdAt: now, updatedAt: now,
            cardCountry: method.cardCountry, cardDescription: method.cardDescription,
            cardLongDescription: method.cardLongDescription)
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
            logger.log(
                "error", "cannot record the subscription charge attempt: not sent",
                ["subscriptionId": read.id, "code": error.code.rawValue])
            return nil
        }
        if event != nil {
            logger.log(
                "warn", "missed subscription cycles skipped",
                [
                    "subscriptionId": read.id, "skipped": String(subscription.skippedCycles - read.skippedCycles),
                    "cycle": String(subscription.cycle),
                ])
        }
        return await send(subscription, key: key, at: now, resending: false)
    }

    /// Sends the stored-method charge of `subscription`'s unresolved attempt under `key` and records a decided
    /// outcome (at `now`: when it was charged). An unknown or `processing` answer leaves the attempt unresolved.
    /// A first send refused outright (nothing charged) ends the attempt, so the next pass sends the same key again;
    /// a resend (`resending`: the key went out before, and the provider replays its first answer within its key
    /// lifetime) that fails leaves it as it is.
    private func send(_ subscription: Subscription, key: String, at now: Date, resending: Bool) async
        -> SubscriptionCharge?
    {
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
                [
                    "subscriptionId": subscription.id, "idempotencyKey": key, "code": error.code.rawValue,
                    "resent": resending ? "true" : "false",
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
            logger.log(
                "info", "subscription charge processing at the provider",
                ["subscriptionId": subscription.id, "idempotencyKey": key, "processorReference": reference])
            await note(reference, of: subscription)
            return nil
        }
    }

    /// The charge row of `subscription`'s current attempt, decided.
    private func decided(
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
    private func note(_ reference: String, of read: Subscription) async {
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
            logger.log("error", "cannot list unresolved subscription charges", ["code": error.code.rawValue])
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

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Looks one unresolved attempt up and records it when the provider decided (see
    /// ``resolveUnresolvedCharges(now:)``).
    func resolve(_ subscription: Subscription, now: Date) async -> SubscriptionCharge? {
        guard let attempt = subscription.unresolvedCharge else { return nil }
        // Sent less than a time limit ago: an instance may still be waiting for its answer.
        guard attempt.since.addingTimeInterval(Self.seconds(timeout)) <= now else { return nil }
        let resolution = processor.unknownOutcomes
        let fields = ["subscriptionId": subscription.id, "idempotencyKey": attempt.idempotencyKey]
        if Self.isPastKeyLifetime(attempt, resolution, now: now) {
            logger.log("warn", "subscription charge unresolved past the provider's key lifetime: for a person", fields)
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
            waiting["code"] = error.code.rawValue
            guard Self.isChargeable(subscription) else {
                logger.log("info", "subscription charge still unresolved: the look-up cannot tell", waiting)
                return nil
            }
            logger.log("info", "subscription charge sent again under its key: the look-up cannot tell", waiting)
            return await send(subscription, key: attempt.idempotencyKey, at: attempt.since, resending: true)
        case .failure(let error):
            var waiting = fields
            waiting["code"] = error.code.rawValue
            logger.log("info", "subscription charge still unresolved", waiting)
            return nil
        }
        guard let found else {
            // Nothing was charged under the key. A subscription still owing the charge has it sent again under the
            // same key (the attempt, and when it was first sent, kept); one that ended meanwhile owes nothing more.
            guard Self.isChargeable(subscription) else {
                logger.log("info", "subscription charge attempt found nothing charged: ended meanwhile", fields)
                var next = subscription
                next.unresolvedCharge = nil
                _ = try? await store.updateSubscription(next, expectedVersion: subscription.version, charge: nil)
                return nil
            }
            logger.log("info", "subscription charge attempt found nothing charged: sent again under its key", fields)
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
    private func record(_ decided: SubscriptionCharge, charging read: Subscription) async -> SubscriptionCharge? {
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
                logger.log(
                    "error", "subscription charge decided but not recorded",
                    ["subscriptionId": read.id, "idempotencyKey": charge.idempotencyKey, "code": error.code.rawValue])
                return nil
            }
            if let stored {
                logger.log(
                    "info", "subscription charged",
                    [
                        "subscriptionId": read.id, "cycle": String(charge.cycle), "attempt": String(charge.attempt),
                        "status": charge.status, "next": stored.status.rawValue,
                    ])
                if givesBack {
                    logger.log(
                        "warn", "subscription ended while its charge was in flight: giving the charge back",
                        ["subscriptionId": read.id, "status": stored.status.rawValue])
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
                logger.log(
                    "error", "subscription charge decided but not recorded",
                    ["subscriptionId": read.id, "idempotencyKey": charge.idempotencyKey, "code": error.code.rawValue])
                return nil
            }
        }
        logger.log(
            "error", "subscription charge decided but not recorded (too many concurrent changes)",
            ["subscriptionId": read.id, "idempotencyKey": charge.idempotencyKey])
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
        let voided = await PaymentProcessing.withTimeLimit(timeout) {
            () async throws(ProcessorError) -> ProcessorCharge in
            try await processor.void(reference: reference)
        }
        switch voided {
        case .success(let answer) where answer.status == .voided: given = "void:" + answer.reference
        default:
            let refund = await PaymentProcessing.withTimeLimit(timeout) {
                () async throws(ProcessorError) -> ProcessorRefund in
                try await processor.refund(
                    reference: reference, amount: Money(minorUnits: charge.amount, currency: currency),
                    idempotencyKey: charge.idempotencyKey + ":refund")
            }
            if case .success(let answer) = refund { given = "refund:" + answer.reference }
        }
        guard let given else {
            logger.log(
                "error", "an approved charge of an ended subscription could not be given back yet",
                ["subscriptionId": subscription.id, "idempotencyKey": charge.idempotencyKey])
            return false
        }
        do {
            _ = try await store.recordChargeRefund(charge, of: subscription, reference: given, at: clock())
            logger.log(
                "info", "subscription charge given back",
                ["subscriptionId": subscription.id, "idempotencyKey": charge.idempotencyKey, "reference": given])
            return true
        } catch {
            logger.log(
                "error", "subscription charge given back but not recorded",
                ["subscriptionId": subscription.id, "idempotencyKey": charge.idempotencyKey, "reference": given])
            return false
        }
    }

    /// Tries again to give back the approved charges still owing a refund (the processor did not decide before).
    func giveBackOwedCharges() async {
        let owed: [SubscriptionCharge]
        do {
            owed = try await store.chargesOwingRefund(limit: 100)
        } catch {
            logger.log("error", "cannot list charges owing a refund", ["code": error.code.rawValue])
            return
        }
        for charge in owed {
            guard let subscription = try? await store.subscription(id: charge.subscriptionID) else { continue }
            await giveBack(charge, of: subscription)
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
            logger.log(
                "warn", "cannot update the merchant token's notification URL at Apple",
                ["subscriptionId": id, "error": String(describing: error)])
            throw Refusal.gatewayFailed
        }
        logger.log("info", "merchant token notification URL updated at Apple", ["subscriptionId": id])
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
        /// Applied now, applied before, or unknown to Apple's gateway: Apple is answered 200.
        case applied, alreadyApplied, unknownEvent
        /// Not applied (Apple is answered non-200 and retries): no gateway configured, the gateway failed or did
        /// not answer, the store failed, too many pulls at once, or not done within the notification's time limit.
        case noGateway, gatewayFailed, storeFailed, busy, timedOut

        /// Whether Apple may consider the notification handled (`200`).
        public var isHandled: Bool { self == .applied || self == .alreadyApplied || self == .unknownEvent }
    }

    /// Pulls event `eventID` from the gateway and applies it once, in one store transaction that records the event
    /// id together with the subscriptions' change (``SubscriptionStore/applyTokenEvent(eventID:eventType:merchantTokenIdentifier:change:)``),
    /// tried again when a concurrent writer conflicts, so an `UNLINK` is never recorded without its effect:
    /// `UNLINK` stops every subscription on the token; `UPDATED_METADATA` updates the card (``CardMetadata``);
    /// `UPDATED_CARD_ART` records the art's URL; `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` is recorded and otherwise
    /// ignored on purpose (this server sends no usage-information notifications, the only use of that key).
    public func applyTokenEvent(eventID: String) async -> EventResult {
        guard let gateway else { return .noGateway }
        let event: MerchantTokenEvent?
        do {
            event = try await gateway.event(id: eventID)
        } catch {
            logger.log(
                "warn", "cannot pull the merchant token event",
                ["eventId": String(eventID.prefix(64)), "error": String(describing: error)])
            return .gatewayFailed
        }
        guard let event else { return .unknownEvent }
        switch event.eventType {
        case "UNLINK", "UPDATED_METADATA", "UPDATED_CARD_ART": break
        case "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY":
            logger.log(
                "info",
                "merchant token public key updated: ignored on purpose (no usage-information notifications are sent)",
                ["eventId": eventID])
        default:
            logger.log("warn", "unknown merchant token event type: recorded, nothing changed", ["eventId": eventID])
        }
        let change = Self.change(for: event)
        for _ in 0..<5 {
            do {
                guard
                    let changed = try await store.applyTokenEvent(
                        eventID: eventID, eventType: event.eventType,
                        merchantTokenIdentifier: event.merchantTokenIdentifier, change: change)
                else { return .alreadyApplied }
                logger.log(
                    "info", "merchant token event applied",
                    ["eventId": eventID, "eventType": event.eventType, "subscriptions": String(changed)])
                return .applied
            } catch  where error.code == .conflict {
                continue  // a concurrent writer: the whole event again, over what it wrote
            } catch {
                logger.log(
                    "error", "cannot apply the merchant token event", ["eventId": eventID, "code": error.code.rawValue])
                return .storeFailed
            }
        }
        logger.log("error", "cannot apply the merchant token event: it kept conflicting", ["eventId": eventID])
        return .storeFailed
    }

    /// What `event` does to one subscription on its token (`nil`: nothing).
    static func change(for event: MerchantTokenEvent) -> @Sendable (Subscription) -> Subscription? {
        { subscription in
            var next = subscription
            switch event.eventType {
            case "UNLINK":
                guard subscription.status != .unlinked else { return nil }
                next.status = .unlinked
                next.statusReason = event.reason
                next.nextChargeAt = nil
            case "UPDATED_METADATA":
                if let card = event.merchantTokenMetadata?.cardMetadata {
                    next.cardSuffix = card.fpanSuffix ?? next.cardSuffix
                    next.cardExpiration = card.expirationDate ?? next.cardExpiration
                    next.cardCountry = card.cardCountry ?? next.cardCountry
                    next.cardDescription = card.shortDescription ?? next.cardDescription
                    next.cardLongDescription = card.longDescription ?? next.cardLongDescription
                }
                if let art = event.merchantTokenMetadata?.cardArt?.first?.url { next.cardArtURL = art }
            case "UPDATED_CARD_ART":
                if let art = event.merchantTokenMetadata?.cardArt?.first?.url { next.cardArtURL = art }
            default:
                return nil
            }
            return next == subscription ? nil : next
        }
    }

    /// Apple's notification `GET {tokenNotificationURL}/notification/merchantToken/{eventId}`, answered only once
    /// its event is pulled and applied (``applyTokenEvent(eventID:)``) or known to be, within `timeLimit`: a
    /// second notification of an event being pulled joins that pull (``TokenNotifications``), and pulls beyond the
    /// notification share wait briefly, then answer ``EventResult/busy`` (Apple retries a non-200). A pull outlives a
    /// time limit that ran out: it still completes and is found applied when Apple retries.
    public func handleTokenNotification(eventID: String, timeLimit: Duration) async -> EventResult {
        guard gateway != nil else { return .noGateway }
        guard let pull = await notifications.pull(eventID, start: { await self.applyTokenEvent(eventID: eventID) })
        else { return .busy }
        // The time limit abandons the wait, not the pull (awaiting a task's value does not cancel it).
        let waited = await PaymentProcessing.withTimeLimit(timeLimit) {
            () async throws(ProcessorError) -> EventResult in
            await pull.value
        }
        if case .success(let result) = waited { return result }
        return .timedOut
    }
}

/// The notification pulls in flight: one per event id (a repeated notification joins it), at most the share's
/// places at once (and its queue waiting briefly), so a burst of notifications neither floods Apple's gateway nor
/// piles up work.
public final class TokenNotifications: Sendable {
    /// Four pulls at once, eight waiting up to half a second: Apple retries at once on a non-200.
    public static let defaultShare = Bulkhead.Limits(
        maximumInFlight: 4, maximumQueued: 8, maximumWait: .milliseconds(500))

    public let share: Bulkhead
    private let inFlight = Mutex<[String: Task<SubscriptionService.EventResult, Never>]>([:])

    public init(share: Bulkhead.Limits = TokenNotifications.defaultShare) {
        self.share = Bulkhead(name: "tokenNotifications", limits: share)
    }

    /// The pull of `eventID` in flight, or a new one started in a place of the share; `nil` when the share is full.
    func pull(
        _ eventID: String, start: @escaping @Sendable () async -> SubscriptionService.EventResult
    ) async -> Task<SubscriptionService.EventResult, Never>? {
        if let running = inFlight.withLock({ $0[eventID] }) { return running }
        guard await share.acquire() else { return nil }
        return inFlight.withLock { pulls in
            if let running = pulls[eventID] {
                share.release()
                return running
            }
            let task = Task { [share, weak self] in
                let result = await start()
                self?.inFlight.withLock { _ = $0.removeValue(forKey: eventID) }
                share.release()
                return result
            }
            pulls[eventID] = task
            return task
        }
    }

    /// How many event pulls are in flight.
    public var count: Int { inFlight.withLock { $0.count } }
}

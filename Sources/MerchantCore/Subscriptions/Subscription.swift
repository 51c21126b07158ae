import ApplePay
import Foundation
import Foundations

/// Where a subscription stands.
public enum SubscriptionStatus: String, Codable, Sendable, CaseIterable {
    /// Charged when due.
    case active
    /// The last charge was declined; retried on ``SubscriptionBilling/retryDays``.
    case pastDue
    /// Ended: by the customer or the merchant, after the last retry failed, or at the plan's end. Nothing more is
    /// charged, except what a deferred plan cancelled after its free-cancellation date still owes.
    case cancelled
    /// The customer or the issuer unlinked the merchant token (Apple's `UNLINK`): nothing more can be charged.
    case unlinked
}

/// A plan bought at checkout and paid with a merchant token: what the scheduler charges.
///
/// It holds the processor's reference to the kept payment method, never the MPAN. ``version`` increases with
/// every change; ``SubscriptionStore/updateSubscription(_:expectedVersion:charge:)`` writes only over the version
/// it read, so two schedulers cannot both advance a cycle.
public struct Subscription: Sendable, Equatable {
    /// `sub_` followed by 24 hexadecimal digits.
    public var id: String
    /// The management page's secret (`?secret=`): returned with the payment answer, never logged.
    public var secret: String
    public var checkoutID: String
    /// The order of the payment at checkout (`nil` for a deferred plan: nothing was charged then).
    public var orderID: String?
    public var sku: String
    public var productName: String
    public var plan: BillingPlan
    /// What each billing cycle charges, in minor units of ``currencyCode``.
    public var amount: Int64
    public var currencyCode: String
    /// Apple's `merchantTokenIdentifier` (`nil` when the network fell back to a device token).
    public var merchantTokenIdentifier: String?
    /// The processor's kept payment method.
    public var paymentMethodReference: String
    /// The processor's customer the kept method belongs to (Stripe's Customer), when the processor reuses a method
    /// only through one: every charge of the method names it.
    public var customerReference: String?
    public var network: String?
    /// The card's last four digits as the customer knows them: Apple's `fpanSuffix` (``PlanPaymentMethod``).
    public var cardSuffix: String?
    /// The expiry from the token's metadata (`MM/YY` in the sandbox).
    public var cardExpiration: String?
    public var cardArtURL: String?
    /// Apple's `cardCountry`, `shortDescription` and `longDescription` (kept up to date by `UPDATED_METADATA`).
    public var cardCountry: String?
    public var cardDescription: String?
    public var cardLongDescription: String?
    /// Billing cycles passed over without a charge by the catch-up rule (``SubscriptionBilling/catchUp(_:now:)``).
    public var skippedCycles: Int
    public var status: SubscriptionStatus
    /// Why it is in its status when that needs saying (`customer`, `merchant`, `unpaid`, `ended`, `charged`,
    /// `user`, `issuer`).
    public var statusReason: String?
    /// The next billing cycle to charge, from 1.
    public var cycle: Int
    /// Declined attempts in the current cycle.
    public var attempt: Int
    /// When cycle 1 is due; cycle n of a recurring plan is due `n - 1` intervals later.
    public var anchor: Date
    /// When the scheduler charges next; `nil` when nothing is due (an automatic reload above its threshold, an
    /// ended subscription). A `cancelled` subscription has one only while a charge is still owed: a deferred plan
    /// cancelled after its free-cancellation date (``SubscriptionBilling/cancellationOwesCharge(_:at:)``).
    public var nextChargeAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    public var version: Int
    /// The attempt sent to the processor whose outcome is not recorded yet (unknown, or decided later): recorded
    /// before the charge is sent, it is resolved before anything else happens to the cycle (no catch-up, no next
    /// attempt), whatever the subscription's status (``SubscriptionService/chargeDue(now:)``).
    public var unresolvedCharge: SubscriptionChargeAttempt?

    public init(
        id: String, secret: String, checkoutID: String, orderID: String?, sku: String, productName: String,
        plan: BillingPlan, amount: Int64, currencyCode: String, merchantTokenIdentifier: String?,
        paymentMethodReference: String, network: String?, cardSuffix: String?, cardExpiration: String?,
        cardArtURL: String? = nil, status: SubscriptionStatus = .active, statusReason: String? = nil, cycle: Int = 1,
        attempt: Int = 0, anchor: Date, nextChargeAt: Date?, createdAt: Date, updatedAt: Date, version: Int = 1,
        cardCountry: String? = nil, cardDescription: String? = nil, cardLongDescription: String? = nil,
        skippedCycles: Int = 0, unresolvedCharge: SubscriptionChargeAttempt? = nil, customerReference: String? = nil
    ) {
        self.customerReference = customerReference
        self.unresolvedCharge = unresolvedCharge
        self.cardCountry = cardCountry
        self.cardDescription = cardDescription
        self.cardLongDescription = cardLongDescription
        self.skippedCycles = skippedCycles
        self.id = id
        self.secret = secret
        self.checkoutID = checkoutID
        self.orderID = orderID
        self.sku = sku
        self.productName = productName
        self.plan = plan
        self.amount = amount
        self.currencyCode = currencyCode
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.paymentMethodReference = paymentMethodReference
        self.network = network
        self.cardSuffix = cardSuffix
        self.cardExpiration = cardExpiration
        self.cardArtURL = cardArtURL
        self.status = status
        self.statusReason = statusReason
        self.cycle = cycle
        self.attempt = attempt
        self.anchor = anchor
        self.nextChargeAt = nextChargeAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }

    /// Whether the scheduler may still charge it.
    public var isLive: Bool { status == .active || status == .pastDue }
}

extension Subscription: Encodable {
    private enum CodingKeys: String, CodingKey {
        case id, checkoutId, orderId, sku, productName, plan, amount, currencyCode, merchantTokenIdentifier, network
        case cardSuffix, cardExpiration, cardArtURL, status, statusReason, cycle, attempt, nextChargeAt, createdAt
        case updatedAt, cardCountry, cardDescription, cardLongDescription, skippedCycles
    }

    /// The admin and management view: amounts as decimal strings, dates ISO 8601; no secret, no processor
    /// reference.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let currency = Currency(code: currencyCode) ?? .usDollar
        let iso = ISO8601DateFormatter()
        try c.encode(id, forKey: .id)
        try c.encode(checkoutID, forKey: .checkoutId)
        try c.encodeIfPresent(orderID, forKey: .orderId)
        try c.encode(sku, forKey: .sku)
        try c.encode(productName, forKey: .productName)
        try c.encode(plan, forKey: .plan)
        try c.encode(Money(minorUnits: amount, currency: currency).amountString, forKey: .amount)
        try c.encode(currencyCode, forKey: .currencyCode)
        try c.encodeIfPresent(merchantTokenIdentifier, forKey: .merchantTokenIdentifier)
        try c.encodeIfPresent(network, forKey: .network)
        try c.encodeIfPresent(cardSuffix, forKey: .cardSuffix)
        try c.encodeIfPresent(cardExpiration, forKey: .cardExpiration)
        try c.encodeIfPresent(cardArtURL, forKey: .cardArtURL)
        try c.encodeIfPresent(cardCountry, forKey: .cardCountry)
        try c.encodeIfPresent(cardDescription, forKey: .cardDescription)
        try c.encodeIfPresent(cardLongDescription, forKey: .cardLongDescription)
        if skippedCycles > 0 { try c.encode(skippedCycles, forKey: .skippedCycles) }
        try c.encode(status.rawValue, forKey: .status)
        try c.encodeIfPresent(statusReason, forKey: .statusReason)
        try c.encode(cycle, forKey: .cycle)
        try c.encode(attempt, forKey: .attempt)
        try c.encodeIfPresent(nextChargeAt.map { iso.string(from: $0) }, forKey: .nextChargeAt)
        try c.encode(iso.string(from: createdAt), forKey: .createdAt)
        try c.encode(iso.string(from: updatedAt), forKey: .updatedAt)
    }
}

/// A charge of a billing cycle sent to the processor (or about to be) whose outcome is not recorded yet.
///
/// Written on the subscription, over the version read, before the charge is sent: two instances never send two
/// different keys for one cycle, and an answer that is lost (or decided later) leaves the attempt to be looked up by
/// its key, never abandoned.
public struct SubscriptionChargeAttempt: Sendable, Equatable {
    /// `sub_…:c<cycle>:a<attempt>`.
    public var idempotencyKey: String
    /// When it was first sent (the scheduler's clock): the provider's key lifetime counts from here.
    public var since: Date
    /// The provider's id for the charge, once known (a charge the provider decides later).
    public var processorReference: String?

    public init(idempotencyKey: String, since: Date, processorReference: String? = nil) {
        self.idempotencyKey = idempotencyKey
        self.since = since
        self.processorReference = processorReference
    }
}

/// One attempt to charge a billing cycle (approved or declined), as the management page and the admin API list it.
public struct SubscriptionCharge: Sendable, Equatable, Encodable {
    public var subscriptionID: String
    public var cycle: Int
    public var attempt: Int
    /// `sub_…:c<cycle>:a<attempt>`: the processor's idempotency key.
    public var idempotencyKey: String
    public var amount: Int64
    public var currencyCode: String
    /// `approved` or `declined`.
    public var status: String
    public var processorReference: String?
    public var declineCode: String?
    /// When the cycle was due.
    public var dueAt: Date
    /// When it was charged (the scheduler's clock).
    public var chargedAt: Date
    /// The first give-back of an approved charge (ours when its subscription ended while it was in flight, or one
    /// made at the provider): `void:<reference>` or `refund:<reference>`.
    public var refundReference: String?
    /// When money was last given back (`nil` while nothing is: a refund still pending, or every one failed).
    public var refundedAt: Date?
    /// Approved after its subscription ended and not given back yet: the scheduler tries again.
    public var refundOwed: Bool
    /// What was given back, in minor units of ``currencyCode``: the refunds the provider confirmed (a void gives back
    /// the whole amount).
    public var refunded: Int64
    /// The refunds of the charge, oldest first: ours and those made at the provider, pending, succeeded or failed.
    public var refunds: [SubscriptionChargeRefund]

    public init(
        subscriptionID: String, cycle: Int, attempt: Int, idempotencyKey: String, amount: Int64, currencyCode: String,
        status: String, processorReference: String?, declineCode: String?, dueAt: Date, chargedAt: Date,
        refundReference: String? = nil, refundedAt: Date? = nil, refundOwed: Bool = false, refunded: Int64 = 0,
        refunds: [SubscriptionChargeRefund] = []
    ) {
        self.refunded = refunded
        self.refunds = refunds
        self.refundOwed = refundOwed
        self.refundReference = refundReference
        self.refundedAt = refundedAt
        self.subscriptionID = subscriptionID
        self.cycle = cycle
        self.attempt = attempt
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.currencyCode = currencyCode
        self.status = status
        self.processorReference = processorReference
        self.declineCode = declineCode
        self.dueAt = dueAt
        self.chargedAt = chargedAt
    }

    private enum CodingKeys: String, CodingKey {
        case cycle, attempt, amount, currencyCode, status, declineCode, dueAt, chargedAt, refundedAt, refunded, refunds
    }

    /// The admin view: amounts as decimal strings, dates ISO 8601; refunds without our keys.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let iso = ISO8601DateFormatter()
        let currency = Currency(code: currencyCode) ?? .usDollar
        try c.encode(cycle, forKey: .cycle)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(Money(minorUnits: amount, currency: currency).amountString, forKey: .amount)
        try c.encode(currencyCode, forKey: .currencyCode)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(declineCode, forKey: .declineCode)
        try c.encode(iso.string(from: dueAt), forKey: .dueAt)
        try c.encode(iso.string(from: chargedAt), forKey: .chargedAt)
        try c.encodeIfPresent(refundedAt.map { iso.string(from: $0) }, forKey: .refundedAt)
        if refunded > 0 {
            try c.encode(Money(minorUnits: refunded, currency: currency).amountString, forKey: .refunded)
        }
        if !refunds.isEmpty {
            try c.encode(
                refunds.map { refund in
                    var entry = [
                        "amount": Money(minorUnits: refund.amount, currency: currency).amountString,
                        "status": refund.status.rawValue, "createdAt": iso.string(from: refund.createdAt),
                    ]
                    entry["failureCode"] = refund.failureCode
                    return entry
                }, forKey: .refunds)
        }
    }
}

/// One refund of a subscription charge: our give-back of a charge whose subscription ended while it was in flight
/// (under our key), or a refund made at the provider (its dashboard). Matched to a webhook by the provider's
/// reference or our key, never by its amount; `pending` until the provider confirms it.
public struct SubscriptionChargeRefund: Sendable, Equatable {
    /// The charge's idempotency key.
    public var chargeKey: String
    /// Our key (a give-back: `<charge key>:refund`, sent to the provider with the refund); `nil` for one made at the
    /// provider.
    public var refundKey: String?
    /// The provider's id for the refund.
    public var reference: String?
    /// In minor units of the charge's currency.
    public var amount: Int64
    public var status: RefundRecord.Status
    /// Why the provider failed it.
    public var failureCode: String?
    public var createdAt: Date

    public init(
        chargeKey: String, refundKey: String?, reference: String?, amount: Int64, status: RefundRecord.Status,
        failureCode: String? = nil, createdAt: Date
    ) {
        self.chargeKey = chargeKey
        self.refundKey = refundKey
        self.reference = reference
        self.amount = amount
        self.status = status
        self.failureCode = failureCode
        self.createdAt = createdAt
    }
}

/// Which subscriptions to list.
public struct SubscriptionFilter: Sendable, Equatable {
    public var statuses: [SubscriptionStatus]?
    public var merchantTokenIdentifier: String?
    public var checkoutID: String?
    /// Only those with ``Subscription/nextChargeAt`` at or before this instant.
    public var dueBy: Date?
    /// Only those with (`true`) or without (`false`) an ``Subscription/unresolvedCharge``.
    public var unresolved: Bool?
    public var limit: Int

    public init(
        statuses: [SubscriptionStatus]? = nil, merchantTokenIdentifier: String? = nil, checkoutID: String? = nil,
        dueBy: Date? = nil, unresolved: Bool? = nil, limit: Int = 100
    ) {
        self.unresolved = unresolved
        self.statuses = statuses
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.checkoutID = checkoutID
        self.dueBy = dueBy
        self.limit = limit
    }
}

/// An entry for the store's event log written with a subscription change (``SubscriptionStore``).
public struct SubscriptionEvent: Sendable, Equatable {
    /// `subscriptionCyclesSkipped`, `subscriptionChargeRefunded`, ...
    public var kind: String
    public var detail: [String: String]
}

/// Where subscriptions live: the SQL store implements it once for SQLite and PostgreSQL (`SubscriptionStoreSQL`).
public protocol SubscriptionStore: Sendable {
    /// Stores a new subscription; a second one for the same checkout answers the first (idempotent).
    func insertSubscription(_ subscription: Subscription) async throws(OrderStoreError) -> Subscription
    func subscription(id: String) async throws(OrderStoreError) -> Subscription?
    /// Oldest first.
    func subscriptions(_ filter: SubscriptionFilter) async throws(OrderStoreError) -> [Subscription]
    /// Writes `updated` (with its version increased) only if the stored version is still `expectedVersion`, and
    /// records `charge` (UNIQUE by idempotency key) and `event` in the same transaction. Answers the stored
    /// subscription, or `nil` when another writer got there first.
    func updateSubscription(
        _ updated: Subscription, expectedVersion: Int, charge: SubscriptionCharge?, event: SubscriptionEvent?
    ) async throws(OrderStoreError) -> Subscription?
    /// Every charge attempt of a subscription, oldest first.
    func subscriptionCharges(subscriptionID: String) async throws(OrderStoreError) -> [SubscriptionCharge]
    /// Applies Apple's event `eventID` in one transaction: records its id and writes `change` of every subscription
    /// on the token (`nil`: left as it is), the rows locked while they change, so a concurrent writer waits or
    /// makes the whole transaction roll back (`conflict`; nothing is recorded, the caller tries again). Answers
    /// how many subscriptions changed, or `nil` when the event had been applied before (nothing changes).
    func applyTokenEvent(
        eventID: String, eventType: String, merchantTokenIdentifier: String,
        change: @escaping @Sendable (Subscription) -> Subscription?
    ) async throws(OrderStoreError) -> Int?
    /// Records the give-back of the approved charge (``SubscriptionCharge/refundReference`` `reference`), with an
    /// event, and that it owes nothing more; false when it was recorded before. `refund` `nil`: a void, the whole
    /// amount given back at once; else the provider's refund, given back (`succeeded`) or `pending` until its webhook.
    func recordChargeRefund(
        _ charge: SubscriptionCharge, of subscription: Subscription, reference: String,
        refund: SubscriptionChargeRefund?, at: Date
    ) async throws(OrderStoreError) -> Bool
    /// Approved charges recorded as owing a refund (``SubscriptionCharge/refundOwed``), oldest first.
    func chargesOwingRefund(limit: Int) async throws(OrderStoreError) -> [SubscriptionCharge]
    /// Charges whose give-back refund (ours, sent with our key) the provider failed and that nothing else has
    /// refunded in full since, oldest first: money a person must return (nothing sends that refund again).
    func chargesWithFailedGiveBacks(limit: Int) async throws(OrderStoreError) -> [SubscriptionCharge]
}

extension SubscriptionStore {
    /// ``recordChargeRefund(_:of:reference:refund:at:)`` of a void: the whole amount given back.
    public func recordChargeRefund(
        _ charge: SubscriptionCharge, of subscription: Subscription, reference: String, at: Date
    ) async throws(OrderStoreError) -> Bool {
        try await recordChargeRefund(charge, of: subscription, reference: reference, refund: nil, at: at)
    }

    /// ``updateSubscription(_:expectedVersion:charge:event:)`` without an event.
    public func updateSubscription(_ updated: Subscription, expectedVersion: Int, charge: SubscriptionCharge?)
        async throws(OrderStoreError) -> Subscription?
    {
        try await updateSubscription(updated, expectedVersion: expectedVersion, charge: charge, event: nil)
    }
}

import Foundation
import Foundations
import Logging

/// What a payment provider's signed webhook says happened, read into one small shape whatever the provider
/// (Stripe, Adyen, Checkout.com): a payment succeeded or failed, a refund succeeded or failed, a dispute
/// (chargeback) was opened. It carries references and minor units only: never card data.
public struct ProviderEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable, CaseIterable {
        case paymentSucceeded, paymentFailed, refundSucceeded, refundFailed, disputeOpened
        /// The provider voided (reversed) the payment: the answer to a void it took and decided later (Adyen).
        case paymentVoided
    }

    /// `stripe`, `adyen` or `checkout`.
    public var provider: String
    /// The provider's id of this event: the same id twice is the same event (applied once).
    public var id: String
    public var kind: Kind
    /// Our reference for the payment as the provider echoes it (the order id or the payment's idempotency key, the
    /// token's `transactionId`), when it does.
    public var merchantReference: String?
    /// The provider's id of the payment (`pi_…`, an Adyen `pspReference`, `pay_…`).
    public var paymentReference: String?
    /// The provider's id of the refund or dispute the event is about; `nil` for payment events.
    public var reference: String?
    /// Our key of the refund the event is about, as the provider echoes it (Stripe `metadata[refund_key]`, Adyen's
    /// refund `merchantReference`, Checkout.com's refund `reference`): a refund is matched by it or by
    /// ``reference``, never by its amount.
    public var refundKey: String?
    /// Minor units, when the event says.
    public var amount: Int64?
    /// ISO 4217, upper case, when the event says.
    public var currencyCode: String?
    /// The provider's short reason (a decline or dispute reason code), never card data.
    public var reason: String?

    public init(
        provider: String, id: String, kind: Kind, merchantReference: String? = nil, paymentReference: String? = nil,
        reference: String? = nil, refundKey: String? = nil, amount: Int64? = nil, currencyCode: String? = nil,
        reason: String? = nil
    ) {
        self.refundKey = refundKey
        self.provider = provider
        self.id = id
        self.kind = kind
        self.merchantReference = merchantReference
        self.paymentReference = paymentReference
        self.reference = reference
        self.amount = amount
        self.currencyCode = currencyCode
        self.reason = reason
    }
}

/// What applying a ``ProviderEvent`` did.
public struct ProviderEventResult: Sendable, Equatable {
    /// The kinds of result (stable strings: they label `/metrics` and log lines).
    public enum Outcome: String, Sendable, CaseIterable {
        /// The order (or subscription charge) changed: a payment settled, a refund or a dispute recorded.
        case applied
        /// This event (provider and id) was applied before: nothing changed.
        case duplicate
        /// The order already says so (settled, refund recorded, dispute known): nothing changed.
        case noChange
        /// No order and no subscription charge has this reference: nothing changed.
        case orderNotFound
        /// The event contradicts the order (another amount or currency, a refund above what is left): nothing
        /// changed; a person should look.
        case mismatch
        /// The provider decided otherwise than the order said: the discrepancy is recorded (and listed in
        /// `GET /admin/v1/attention`), the order corrected to the provider's state where it can be.
        case discrepancy
    }

    public var outcome: Outcome
    /// The order the event is about, when one was found.
    public var orderID: String?
    /// The subscription whose charge (by our key `sub_…:c<cycle>:a<attempt>`, or the charge's provider reference)
    /// the event is about, when it is about a subscription charge rather than an order.
    public var subscriptionID: String?

    public init(_ outcome: Outcome, orderID: String? = nil, subscriptionID: String? = nil) {
        self.outcome = outcome
        self.orderID = orderID
        self.subscriptionID = subscriptionID
    }
}

/// A dispute (chargeback) a provider opened against an order, or against one of a subscription's charges (recorded
/// under the subscription's order at checkout, with ``subscriptionChargeKey``).
public struct DisputeRecord: Sendable, Equatable {
    public var id: String
    public var orderID: String
    /// The disputed subscription charge's key, when the dispute is about a later charge of the subscription rather
    /// than the order's own payment.
    public var subscriptionChargeKey: String?
    public var provider: String
    /// The provider's id of the dispute.
    public var reference: String
    /// Minor units disputed, when the provider said.
    public var amount: Int64?
    public var currencyCode: String?
    public var reason: String?
    public var openedAt: Date

    package init(
        id: String, orderID: String, provider: String, reference: String, amount: Int64?, currencyCode: String?,
        reason: String?, openedAt: Date, subscriptionChargeKey: String? = nil
    ) {
        self.subscriptionChargeKey = subscriptionChargeKey
        self.id = id
        self.orderID = orderID
        self.provider = provider
        self.reference = reference
        self.amount = amount
        self.currencyCode = currencyCode
        self.reason = reason
        self.openedAt = openedAt
    }
}

/// Where provider events are applied: the order store (``OrderStore``) of a server that takes webhooks.
///
/// ``apply(_:)`` runs in one transaction: it records the event's provider and id (a second delivery finds it and
/// changes nothing), finds the order by our reference (the order id or the payment's transaction id) or by the
/// provider's payment reference, and applies the event:
/// - a payment event is an observation merged by ``PaymentStateMachine``, also while our charge call is in flight
///   (the call's answer is merged into it when it ends, so nothing the webhook said is lost);
/// - a refund is matched to ours by the provider's refund reference or our refund key, never by its amount; a
///   succeeded refund completes ours, or is added when the provider made it (its dashboard); a failed one marks ours
///   failed, and gives back what a succeeded one had counted;
/// - a dispute is recorded once per provider reference.
///
/// An event that names no order but a subscription charge (our key `sub_…:c<cycle>:a<attempt>` as its merchant
/// reference, or the charge's provider reference) is applied to it in the same transaction: a payment event settles
/// the charge attempt still unresolved (unknown, or decided later: Adyen's `Received`) by the rule of every answer
/// (``SubscriptionBilling/afterDecided(_:_:)``; an approval of a subscription that ended meanwhile is owed back and
/// given back by the next scheduler pass); a succeeded refund marks the recorded charge refunded with its
/// reference; a dispute is recorded under the subscription's order with the charge's key.
public protocol ProviderEventStore: Sendable {
    /// Applies `event` (see the protocol's documentation).
    func apply(_ event: ProviderEvent) async throws(OrderStoreError) -> ProviderEventResult
    /// The disputes recorded against an order, oldest first.
    func disputes(orderID: String) async throws(OrderStoreError) -> [DisputeRecord]
}

/// The use case behind the webhook endpoints: applies a provider event whose signature was verified, and logs what
/// it did (references and outcome only). A plan checkout's payment it settles as paid starts its subscription, as
/// the reconciler's settlement does.
public struct ProviderEvents: Sendable {
    public let store: any ProviderEventStore
    public let logger: Logger
    /// Starts the subscription of a plan checkout whose payment an event settles as paid; `nil`: no plans.
    public let plans: PlanSubscriptions?

    public init(
        store: any ProviderEventStore, logger: Logger = Logger(label: "applepay.webhooks"),
        plans: PlanSubscriptions? = nil
    ) {
        self.store = store
        self.logger = logger
        self.plans = plans
    }

    /// Applies one verified event.
    /// - Throws: ``OrderStoreError`` when the store fails: nothing was written, and the provider's retry is safe.
    public func apply(_ event: ProviderEvent) async throws(OrderStoreError) -> ProviderEventResult {
        let result = try await store.apply(event)
        var fields: Logger.Metadata = [
            "provider": "\(event.provider)", "eventId": "\(event.id)", "kind": "\(event.kind.rawValue)",
            "outcome": "\(result.outcome.rawValue)",
        ]
        fields["orderId"] = result.orderID.map { "\($0)" }
        fields["subscriptionId"] = result.subscriptionID.map { "\($0)" }
        fields["paymentReference"] = event.paymentReference.map { "\($0)" }
        fields["reference"] = event.reference.map { "\($0)" }
        let level: Logger.Level = result.outcome == .mismatch || result.outcome == .discrepancy ? .warning : .info
        logger.log(level: level, "provider event", metadata: fields)
        if event.kind == .paymentSucceeded, result.outcome == .applied || result.outcome == .discrepancy,
            let orderID = result.orderID, let plans
        {
            await startSubscription(orderID: orderID, plans)
        }
        return result
    }

    /// The subscription of a plan payment just settled; a failure is logged (the payment stays settled).
    private func startSubscription(orderID: String, _ plans: PlanSubscriptions) async {
        do {
            guard let order = try await plans.store.order(id: orderID),
                let subscription = try await plans.startIfPlan(order: order)
            else { return }
            logger.info(
                "subscription of a settled payment",
                metadata: ["orderId": "\(orderID)", "subscriptionId": "\(subscription.id)"])
        } catch {
            logger.error(
                "settled a plan payment but could not start its subscription",
                metadata: ["orderId": "\(orderID)", "code": "\(error.code.rawValue)"])
        }
    }
}

import Foundation
import Foundations

/// What a payment provider's signed webhook says happened, read into one small shape whatever the provider
/// (Stripe, Adyen, Checkout.com): a payment succeeded or failed, a refund succeeded or failed, a dispute
/// (chargeback) was opened. It carries references and minor units only: never card data.
public struct ProviderEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable, CaseIterable {
        case paymentSucceeded, paymentFailed, refundSucceeded, refundFailed, disputeOpened
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
    /// Minor units, when the event says.
    public var amount: Int64?
    /// ISO 4217, upper case, when the event says.
    public var currencyCode: String?
    /// The provider's short reason (a decline or dispute reason code), never card data.
    public var reason: String?

    public init(
        provider: String, id: String, kind: Kind, merchantReference: String? = nil, paymentReference: String? = nil,
        reference: String? = nil, amount: Int64? = nil, currencyCode: String? = nil, reason: String? = nil
    ) {
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
        /// The order changed: a payment settled, a refund or a dispute recorded.
        case applied
        /// This event (provider and id) was applied before: nothing changed.
        case duplicate
        /// The order already says so (settled, refund recorded, dispute known): nothing changed.
        case noChange
        /// No order has this reference: nothing changed.
        case orderNotFound
        /// The event contradicts the order (another amount or currency, a refund above what is left): nothing
        /// changed; a person should look.
        case mismatch
    }

    public var outcome: Outcome
    /// The order the event is about, when one was found.
    public var orderID: String?

    public init(_ outcome: Outcome, orderID: String? = nil) {
        self.outcome = outcome
        self.orderID = orderID
    }
}

/// A dispute (chargeback) a provider opened against an order.
public struct DisputeRecord: Sendable, Equatable {
    public var id: String
    public var orderID: String
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
        reason: String?, openedAt: Date
    ) {
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
/// ``apply(_:settlingPendingBefore:)`` runs in one transaction: it records the event's provider and id (a second
/// delivery finds it and changes nothing), finds the order by our reference (the order id or the payment's
/// transaction id) or by the provider's payment reference, and applies the event only from the states it expects:
/// a payment settles only while `unknown`, or `pending` and older than the cutoff (no charge in flight any more); a
/// refund is recorded once per provider reference (completing our pending refund of that reference or amount, else
/// added); a dispute is recorded once per provider reference.
public protocol ProviderEventStore: Sendable {
    /// Applies `event` (see the protocol's documentation).
    /// - Parameter cutoff: a `pending` payment last touched before this is settled too (its charge is not in flight).
    func apply(_ event: ProviderEvent, settlingPendingBefore cutoff: Date) async throws(OrderStoreError)
        -> ProviderEventResult
    /// The disputes recorded against an order, oldest first.
    func disputes(orderID: String) async throws(OrderStoreError) -> [DisputeRecord]
}

/// The use case behind the webhook endpoints: applies a provider event whose signature was verified, and logs what
/// it did (references and outcome only). A plan checkout's payment it settles as paid starts its subscription, as
/// the reconciler's settlement does.
public struct ProviderEvents: Sendable {
    public let store: any ProviderEventStore
    /// How long a payment may stay `pending` while its charge is in flight (the processor time limit and a margin):
    /// an event settles a pending payment only once it is older than this.
    public let inFlightLimit: Duration
    public let logger: RequestLogger
    public let clock: @Sendable () -> Date
    /// Starts the subscription of a plan checkout whose payment an event settles as paid; `nil`: no plans.
    public let plans: PlanSubscriptions?

    public init(
        store: any ProviderEventStore, inFlightLimit: Duration, logger: RequestLogger = .standardError,
        clock: @escaping @Sendable () -> Date = { Date() }, plans: PlanSubscriptions? = nil
    ) {
        self.store = store
        self.inFlightLimit = inFlightLimit
        self.logger = logger
        self.clock = clock
        self.plans = plans
    }

    /// Applies one verified event.
    /// - Throws: ``OrderStoreError`` when the store fails: nothing was written, and the provider's retry is safe.
    public func apply(_ event: ProviderEvent) async throws(OrderStoreError) -> ProviderEventResult {
        let seconds = Double(inFlightLimit.components.seconds) + Double(inFlightLimit.components.attoseconds) / 1e18
        let result = try await store.apply(event, settlingPendingBefore: clock().addingTimeInterval(-seconds))
        var fields: [String: any Sendable] = [
            "provider": event.provider, "eventId": event.id, "kind": event.kind.rawValue,
            "outcome": result.outcome.rawValue,
        ]
        fields["orderId"] = result.orderID
        fields["paymentReference"] = event.paymentReference
        fields["reference"] = event.reference
        let level = result.outcome == .mismatch ? "warn" : "info"
        logger.log(level, "provider event", fields)
        if event.kind == .paymentSucceeded, result.outcome == .applied, let orderID = result.orderID, let plans {
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
            logger.log(
                "info", "subscription of a settled payment", ["orderId": orderID, "subscriptionId": subscription.id])
        } catch {
            logger.log(
                "error", "settled a plan payment but could not start its subscription",
                ["orderId": orderID, "code": error.code.rawValue])
        }
    }
}

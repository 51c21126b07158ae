import ApplePay
import Foundation
import Foundations
import Logging

/// What a subscription keeps of the token that paid its checkout: the merchant token's identifier and the card as
/// the customer sees it. Never the PAN, the MPAN, a cryptogram or any key.
///
/// It is written into the checkout (``Checkout/planPaymentMethods``, keyed by the token's `transactionId`) before a
/// plan is charged, so that a payment whose processor answer was lost, and which the reconciler later finds
/// charged, starts its subscription with the same details as a payment answered at once.
public struct PlanPaymentMethod: Codable, Sendable, Equatable {
    /// Apple's `merchantTokenIdentifier` (`nil` when the network fell back to a device token).
    public var merchantTokenIdentifier: String?
    public var network: String?
    /// The card's last four digits as the customer knows them: Apple's `fpanSuffix` for a merchant token (the
    /// MPAN's own digits are not the card's), the PAN's last four digits for a device token.
    public var cardSuffix: String?
    /// The expiry from the token's metadata (`MM/YY` in the sandbox).
    public var cardExpiration: String?
    public var cardArtURL: String?
    /// Apple's `cardCountry`, `shortDescription` and `longDescription`.
    public var cardCountry: String?
    public var cardDescription: String?
    public var cardLongDescription: String?

    /// The details of a decrypted token (nothing secret is copied). A merchant token without an `fpanSuffix` shows
    /// no digits rather than the MPAN's.
    public init(token: NetworkToken) {
        let info = token.merchantToken
        merchantTokenIdentifier = info?.identifier
        network = token.network
        cardSuffix = info == nil ? token.lastFour : info?.card.fpanSuffix
        cardExpiration = info?.card.expirationDate
        cardArtURL = info?.cardArtURL
        cardCountry = info?.card.cardCountry
        cardDescription = info?.card.shortDescription
        cardLongDescription = info?.card.longDescription
    }
}

/// Starts the subscription of a plan checkout once its payment is known to be charged, whichever path learnt it:
/// the payment answered at once (``CheckoutPayments``), or a lost answer settled later by the ``Reconciler``. Both
/// go through ``startIfPlan(order:method:charge:)``, so a subscription starts the same
/// way (same anchor, counted from the checkout's creation; same card details) and once per checkout.
public struct PlanSubscriptions: Sendable {
    public let service: SubscriptionService
    public let pricing: CheckoutPricing
    public let configuration: StoreConfiguration
    public let store: any OrderStore

    public init(
        service: SubscriptionService, pricing: CheckoutPricing, configuration: StoreConfiguration,
        store: any OrderStore
    ) {
        self.service = service
        self.pricing = pricing
        self.configuration = configuration
        self.store = store
    }

    /// Records the card details of the token about to pay a plan checkout (before it is charged).
    public func remember(_ method: PlanPaymentMethod, transactionID: String, checkoutID: String)
        async throws(OrderStoreError)
    {
        guard var checkout = try await store.checkout(id: checkoutID) else {
            throw OrderStoreError(.notFound, "no checkout \(checkoutID)")
        }
        guard checkout.planPaymentMethods?[transactionID] != method else { return }
        checkout.planPaymentMethods = (checkout.planPaymentMethods ?? [:]).merging([transactionID: method]) { $1 }
        try await store.updateCheckout(checkout)
    }

    /// The subscription of a paid order's plan checkout: the existing one, or a new one started now. `nil` when
    /// the order is not paid, its checkout sells no plan, or nothing says which payment method to charge later.
    /// - Parameters:
    ///   - order: the checkout's order (`paid`).
    ///   - method: the token's details; `nil` reads those the checkout recorded for the order's transaction id.
    ///   - charge: the processor's charge of the order, which carries the kept method (and the customer it is
    ///     attached to, for Stripe); `nil`, or one without a kept method, looks the charge up by its key.
    public func startIfPlan(
        order: Order, method: PlanPaymentMethod? = nil, charge: ProcessorCharge? = nil
    ) async throws(OrderStoreError) -> Subscription? {
        guard order.status == .paid, let checkout = try await store.checkout(id: order.checkoutID),
            let (product, plan) = pricing.planProduct(of: checkout)
        else { return nil }
        if let existing = try await service.store.subscriptions(
            SubscriptionFilter(checkoutID: checkout.id, limit: 1)
        ).first {
            return existing
        }
        let key = order.payment.transactionID
        guard let method = method ?? checkout.planPaymentMethods?[key] else {
            service.logger.error(
                "plan paid but its card details were not recorded", metadata: ["orderId": "\(order.id)"])
            return nil
        }
        var kept = charge
        if kept?.paymentMethodReference == nil {
            // The kept method's reference comes with the charge (looked up by its key, as the reconciler does).
            let processor = service.processor
            let looked = await PaymentProcessing.withTimeLimit(service.timeout) {
                () async throws(ProcessorError) -> ProcessorCharge? in
                try await processor.charge(idempotencyKey: key)
            }
            if case .success(let charge) = looked { kept = charge }
        }
        guard let reference = kept?.paymentMethodReference else {
            service.logger.error(
                "plan paid but the processor kept no payment method", metadata: ["orderId": "\(order.id)"])
            return nil
        }
        return try await service.start(
            checkout: checkout, product: product, plan: plan, orderID: order.id, method: method,
            paymentMethodReference: reference, customerReference: kept?.customerReference,
            configuration: configuration)
    }
}

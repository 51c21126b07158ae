import ApplePay
import Foundation
import Foundations
import Logging
import PaymentToken

/// Pays a checkout with an authorized Apple Pay payment: the whole decision behind
/// `POST /v1/checkouts/{id}/payment`, with no HTTP in it.
///
/// 1. Load the checkout (for the holder of its client secret only: a wrong one is `checkoutNotFound`).
/// 2. Verify the token once (signature, chain, merchant key, the checkout's application data): a retry of a
///    payment already recorded for this checkout is answered with its order here, even when the token is too old
///    to charge, and nothing is decrypted.
/// 3. Otherwise price the checkout with the authorized shipping address (the sheet only saw a redacted one) and
///    open the token: freshness, decryption, and the checkout's amount and currency as ``PaymentTokenExpectations``.
/// 4. Charge once per token `transactionId` and record the order (``PaymentService``).
public struct CheckoutPayments: Sendable {
    /// How a payment attempt ended.
    public enum Result: Sendable {
        /// Refused before anything was written or charged.
        case refused(PaymentRefusal)
        /// The store holds an order for this attempt: see its status and the disposition (and, for a paid plan
        /// checkout, the subscription it started).
        case processed(PaymentService.Result)
        /// A deferred plan: the payment method was kept, nothing charged; the subscription charges it later.
        case subscribed(Subscription)
    }

    public let configuration: StoreConfiguration
    public let pricing: CheckoutPricing
    public let store: any OrderStore
    public let tokenOpener: any PaymentTokenOpening
    public let service: PaymentService
    /// Starts the subscriptions of plan checkouts; `nil` refuses plan checkouts.
    public let subscriptions: SubscriptionService?
    /// How long after its creation a checkout can be paid (`nil`: forever). A retry of a payment charged in time
    /// still gets its first answer after the lifetime; a new payment is refused with `checkoutExpired`.
    public let checkoutLifetime: Duration?
    /// Starts a paid plan's subscription (the same code the reconciler runs for a payment it settles).
    let plans: PlanSubscriptions?

    public init(
        configuration: StoreConfiguration, pricing: CheckoutPricing, store: any OrderStore,
        tokenOpener: any PaymentTokenOpening, service: PaymentService, subscriptions: SubscriptionService? = nil,
        checkoutLifetime: Duration? = nil
    ) {
        self.subscriptions = subscriptions
        self.checkoutLifetime = checkoutLifetime
        self.configuration = configuration
        self.pricing = pricing
        self.store = store
        self.tokenOpener = tokenOpener
        self.service = service
        self.plans = subscriptions.map {
            PlanSubscriptions(service: $0, pricing: pricing, configuration: configuration, store: store)
        }
    }

    /// Pays the checkout `checkoutID` with a token given as its JSON bytes (as the request carried it) and the
    /// payment's contacts.
    /// - Parameters:
    ///   - clientSecret: the checkout's ``Checkout/clientSecret`` as the client sent it; a missing or wrong one is
    ///     refused as `checkoutNotFound`, exactly as an unknown checkout, before anything else is looked at.
    /// - Throws: ``OrderStoreError`` when the store fails (nothing was charged unless the error says otherwise:
    ///   see ``PaymentService/pay(_:token:rootFingerprint:)``).
    public func pay(
        checkoutID: String, clientSecret: String?, tokenJSON: Data, billingContact: Contact?, shippingContact: Contact?
    ) async throws(OrderStoreError) -> Result {
        // Each step in a function of its own: an async function's frame keeps room for everything it may hold, for
        // as long as it runs, and this one runs until the processor answers.
        let step = try await prepare(
            checkoutID: checkoutID, clientSecret: clientSecret, tokenJSON: tokenJSON, billingContact: billingContact,
            shippingContact: shippingContact)
        switch step {
        case .answered(let result): return result
        case .ready(let checkedOut): return try await charge(checkedOut, sealedTokenJSON: tokenJSON)
        }
    }

    /// Loads the checkout, verifies the token, answers a retry of a recorded payment, then checks the payment out.
    @inline(never)
    private func prepare(
        checkoutID: String, clientSecret: String?, tokenJSON: Data, billingContact: Contact?, shippingContact: Contact?
    ) async throws(OrderStoreError) -> CheckOutStep {
        guard let checkout = try await store.checkout(id: checkoutID), checkout.acceptsClientSecret(clientSecret)
        else {
            return .answered(.refused(.checkoutNotFound(checkoutID)))
        }
        // Verified once, decrypted only if it is not a retry: a retry of a payment already recorded gets its first
        // answer before the checkout is priced again (a total that moved since must not hide a charge).
        let verification: Swift.Result<VerifiedToken?, PaymentTokenError>
        do throws(PaymentTokenError) {
            verification = .success(
                try tokenOpener.verify(tokenJSON, applicationData: .anyOfBytes(checkout.applicationDataCandidates)))
        } catch {
            verification = .failure(error)
        }
        var earlier: Order? = nil
        if case .success(let verified?) = verification,
            let recorded = try await store.order(transactionID: verified.transactionID),
            recorded.checkoutID == checkout.id
        {
            // A pending order is another attempt in flight, which the service waits for; a plan checkout's retry
            // goes on to start the subscription its first attempt may not have started.
            if recorded.status != .pending, pricing.planProduct(of: checkout) == nil {
                return .answered(.processed(PaymentService.Result(order: recorded, disposition: .replayed)))
            }
            earlier = recorded
        }
        return checkOut(
            checkout, verification: verification, earlier: earlier, tokenJSON: tokenJSON,
            billingContact: billingContact, shippingContact: shippingContact)
    }

    /// Charges a checked-out payment, within the checkout's lifetime and the processor's share.
    @inline(never)
    private func charge(_ checkedOut: CheckedOut, sealedTokenJSON tokenJSON: Data) async throws(OrderStoreError)
        -> Result
    {
        // Read from the checked-out payment where used: a local copy would take room in this frame, which stays
        // while the processor is asked.
        if let lifetime = checkoutLifetime,
            checkedOut.checkout.createdAt.addingTimeInterval(Double(lifetime.components.seconds)) < pricing.clock()
        {
            // Expired, and about to be pruned: only a retry of a payment recorded in time gets an answer.
            return try await replay(checkedOut.opened.transactionID)
                ?? .refused(.checkoutExpired(checkedOut.checkout.id))
        }

        // The processor's share: past it a new payment is refused before anything is written or charged. A retry
        // of a payment already recorded needs no processor, so it is answered from the store as always.
        let admitted = await service.share.acquire()
        defer { if admitted { service.share.release() } }
        if !admitted, try await !isRecorded(checkedOut.opened.transactionID) { return .refused(.processorBusy) }

        // Verified and decrypted above: only now may the sealed token go to a processor that decrypts it itself.
        if pricing.planProduct(of: checkedOut.checkout) != nil {
            return try await payPlan(checkedOut, sealed: tokenJSON)
        }
        return .processed(
            try await service.pay(
                checkedOut.order, token: checkedOut.opened.networkToken,
                rootFingerprint: checkedOut.opened.rootFingerprint, sealedTokenJSON: tokenJSON))
    }

    /// The first answer to the payment recorded for this token, if there is one. Apart from its callers: an
    /// order read in an async function takes room in its frame, which the payment keeps while it waits on its
    /// processor.
    @inline(never)
    private func replay(_ transactionID: String) async throws(OrderStoreError) -> Result? {
        guard let earlier = try await store.order(transactionID: transactionID) else { return nil }
        return .processed(PaymentService.Result(order: earlier, disposition: .replayed))
    }

    /// Whether the store holds a payment for this token (its retry is answered by the service, which waits for a
    /// first attempt still in flight). Apart from its caller for the same reason as ``replay(_:)``.
    @inline(never)
    private func isRecorded(_ transactionID: String) async throws(OrderStoreError) -> Bool {
        try await store.order(transactionID: transactionID) != nil
    }

    /// What the synchronous part of a payment decided: an answer already, or the order to charge.
    private enum CheckOutStep {
        case answered(Result)
        case ready(CheckedOut)
    }

    /// A checkout priced with the authorized address, its token opened, and the order to record.
    private final class CheckedOut: Sendable {
        let checkout: Checkout
        let opened: OpenedPaymentToken
        let order: NewOrder

        init(checkout: Checkout, opened: OpenedPaymentToken, order: NewOrder) {
            self.checkout = checkout
            self.opened = opened
            self.order = order
        }
    }

    /// Prices the checkout with the authorized shipping address and opens the verified token against it. Kept
    /// apart and synchronous, so that its values live on the thread's stack: the payment's own async frame stays
    /// for as long as it waits on its processor, with room for everything an inlined step keeps.
    @inline(never)
    private func checkOut(
        _ checkout: Checkout, verification: Swift.Result<VerifiedToken?, PaymentTokenError>, earlier: Order?,
        tokenJSON: Data, billingContact: Contact?, shippingContact: Contact?
    ) -> CheckOutStep {
        var checkout = checkout
        if let contact = shippingContact, contact.countryCode != nil || contact.postalCode != nil {
            checkout = checkout.selectingShippingContact(
                ShippingAddress(redacting: contact), configuration: configuration)
        }
        let breakdown: PriceBreakdown
        do {
            breakdown = try pricing.price(checkout)
        } catch {
            return .answered(.refused(.pricingFailed(error)))
        }
        guard breakdown.isPayable else { return .answered(.refused(.notPayable(breakdown.errors))) }

        let opened: OpenedPaymentToken
        do throws(PaymentTokenError) {
            switch verification {
            case .failure(let error): throw error
            case .success(let verified?):
                opened = try verified.open(
                    expecting: PaymentTokenExpectations(
                        amount: breakdown.total, currencyCode: breakdown.currency.code))
            case .success(nil):
                opened = try tokenOpener.open(
                    tokenJSON,
                    expecting: PaymentTokenExpectations(
                        applicationData: .anyOfBytes(checkout.applicationDataCandidates), amount: breakdown.total,
                        currencyCode: breakdown.currency.code))
            }
        } catch {
            // A late retry of a payment that was charged gets its first answer, not "refused": the client would
            // otherwise believe nothing was charged. A stale token is never charged.
            if error.code == .signingTimeOutOfRange, let earlier {
                return .answered(.processed(PaymentService.Result(order: earlier, disposition: .replayed)))
            }
            return .answered(
                .refused(
                    .tokenRefused(error, total: Money(minorUnits: breakdown.total, currency: breakdown.currency))))
        }

        return .ready(
            CheckedOut(
                checkout: checkout, opened: opened,
                order: NewOrder(
                    checkout: checkout, breakdown: breakdown, transactionID: opened.transactionID,
                    token: opened.networkToken, shippingContact: shippingContact,
                    billingContact: billingContact, configuration: configuration)))
    }

    /// The rest of a plan checkout's payment: kept out of ``pay(checkoutID:clientSecret:tokenJSON:billingContact:shippingContact:)``
    /// so that an ordinary payment's task does not carry the plan path's frame (an async function's frame holds
    /// what every path of it and of the calls inlined into it keep across a suspension, for as long as the
    /// payment waits on its processor).
    @inline(never)
    private func payPlan(_ checkedOut: CheckedOut, sealed: Data) async throws(OrderStoreError) -> Result {
        let checkout = checkedOut.checkout
        let order = checkedOut.order
        let opened = checkedOut.opened
        guard let (product, plan) = pricing.planProduct(of: checkout) else { return .refused(.plansUnavailable) }
        guard let subscriptions, let plans else { return .refused(.plansUnavailable) }
        let method = PlanPaymentMethod(token: opened.networkToken)
        if case .deferred = plan {
            // Nothing is charged now: the processor keeps the method, the subscription charges it on the date.
            let reference: String
            do {
                reference = try await service.processor.storePaymentMethod(
                    opened.networkToken, idempotencyKey: opened.transactionID,
                    rootFingerprint: opened.rootFingerprint)
            } catch {
                return .refused(.paymentMethodNotKept(error))
            }
            return .subscribed(
                try await subscriptions.start(
                    checkout: checkout, product: product, plan: plan, orderID: nil, method: method,
                    paymentMethodReference: reference, configuration: configuration))
        }
        // The card details go into the checkout before the charge: if the processor's answer is lost, the
        // reconciler that later finds the charge starts the subscription from them (nothing secret is kept).
        try await plans.remember(method, transactionID: opened.transactionID, checkoutID: checkout.id)
        var result = try await service.pay(
            order, token: opened.networkToken, rootFingerprint: opened.rootFingerprint, storePaymentMethod: true,
            sealedTokenJSON: sealed)
        // The token's details only for its own order (a checkout locked by another token's order has its own).
        let own = result.order.payment.transactionID == opened.transactionID
        if own, result.order.status.isUnsettled {
            // Left to the reconciler: make sure the details are still there. The checkout's state has no version,
            // so a simultaneous payment with another token (refused as checkoutLocked) may have written over them.
            // Not thrown: the customer must hear that the outcome is being confirmed, not that nothing happened.
            do {
                try await plans.remember(method, transactionID: opened.transactionID, checkoutID: checkout.id)
            } catch {
                service.logger.error(
                    "cannot record the plan's card details again",
                    metadata: ["orderId": "\(result.order.id)", "code": "\(error.code.rawValue)"])
            }
        }
        do {
            result.subscription = try await plans.startIfPlan(order: result.order, method: own ? method : nil)
        } catch {
            // The order stands as recorded (it may be paid): a store failure now must not be answered as
            // "nothing was changed". A retry with the same token starts the subscription (once per checkout).
            service.logger.error(
                "plan payment recorded but its subscription could not be started",
                metadata: ["orderId": "\(result.order.id)", "code": "\(error.code.rawValue)"])
        }
        return .processed(result)
    }
}

/// Why a payment was refused before anything was written or charged.
public enum PaymentRefusal: Sendable {
    /// No checkout has this id.
    case checkoutNotFound(String)
    /// The checkout is past its lifetime (and no payment was recorded for this token in time).
    case checkoutExpired(String)
    /// The checkout has errors the customer must fix first (an unserviceable address, an invalid coupon...).
    case notPayable([PaymentError])
    /// The checkout could not be priced.
    case pricingFailed(CheckoutError)
    /// The token was refused: not Apple's, not for this merchant, too old, or not for this checkout's total,
    /// currency or application data.
    case tokenRefused(PaymentTokenError, total: Money)
    /// A plan checkout on a server without subscriptions.
    case plansUnavailable
    /// The processor did not keep the payment method of a deferred plan.
    case paymentMethodNotKept(ProcessorError)
    /// The payment processor's share of the server is full (``PaymentService/share``): refused before anything
    /// was written or charged; the customer may try again at once.
    case processorBusy

    /// A stable code (`checkoutNotFound`, `checkoutNotPayable`, `amountMismatch`, `signatureInvalid`, ...).
    public var code: String {
        switch self {
        case .checkoutNotFound: "checkoutNotFound"
        case .checkoutExpired: "checkoutExpired"
        case .notPayable: "checkoutNotPayable"
        case .pricingFailed(let error): error.code.rawValue
        case .tokenRefused(let error, _): error.code.rawValue
        case .plansUnavailable: "plansUnavailable"
        case .paymentMethodNotKept(let error): error.code.rawValue
        case .processorBusy: "serviceBusy"
        }
    }

    /// For the client: never token material.
    public var message: String {
        switch self {
        case .checkoutNotFound(let id): "There is no checkout with id \(id)."
        case .checkoutExpired(let id): "Checkout \(id) has expired; create a new one."
        case .notPayable: "The checkout has errors to resolve before paying."
        case .pricingFailed(let error): error.message
        case .plansUnavailable: "This server does not sell billing plans."
        case .paymentMethodNotKept: "The card could not be kept for the later payment; nothing was charged."
        case .processorBusy: "Too many payments are in progress; nothing was charged. Try again."
        case .tokenRefused(let error, let total):
            switch error.code {
            case .amountMismatch: "The token's amount is not the checkout's current total \(total)."
            case .applicationDataMismatch:
                "The token was not made for this checkout (its applicationData does not match)."
            default: error.message
            }
        }
    }
}

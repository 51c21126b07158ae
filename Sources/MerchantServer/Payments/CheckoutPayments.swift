import ApplePay
import Foundation
import PaymentToken

/// Pays a checkout with an authorized Apple Pay payment: the whole decision behind
/// `POST /v1/checkouts/{id}/payment`, with no HTTP in it.
///
/// 1. Load the checkout and price it with the authorized shipping address (the sheet only saw a redacted one).
/// 2. Open the token once: signature, chain, freshness, merchant key, decryption, and the checkout's amount,
///    currency and application data as ``PaymentTokenExpectations``.
/// 3. Charge once per token `transactionId` and record the order (``PaymentService``).
public struct CheckoutPayments: Sendable {
    /// How a payment attempt ended.
    public enum Result: Sendable {
        /// Refused before anything was written or charged.
        case refused(PaymentRefusal)
        /// The store holds an order for this attempt: see its status and the disposition.
        case processed(PaymentService.Result)
    }

    public let configuration: StoreConfiguration
    public let pricing: CheckoutPricing
    public let store: any OrderStore
    public let tokenOpener: any PaymentTokenOpening
    public let service: PaymentService

    public init(
        configuration: StoreConfiguration, pricing: CheckoutPricing, store: any OrderStore,
        tokenOpener: any PaymentTokenOpening, service: PaymentService
    ) {
        self.configuration = configuration
        self.pricing = pricing
        self.store = store
        self.tokenOpener = tokenOpener
        self.service = service
    }

    /// Pays the checkout `checkoutID` with `payment`.
    /// - Throws: ``OrderStoreError`` when the store fails (nothing was charged unless the error says otherwise:
    ///   see ``PaymentService/pay(_:token:rootFingerprint:)``).
    public func pay(checkoutID: String, payment: Payment) async throws(OrderStoreError) -> Result {
        guard var checkout = try await store.checkout(id: checkoutID) else {
            return .refused(.checkoutNotFound(checkoutID))
        }
        if let contact = payment.shippingContact, contact.countryCode != nil || contact.postalCode != nil {
            checkout = checkout.selectingShippingContact(
                ShippingAddress(redacting: contact), configuration: configuration)
        }
        let breakdown: PriceBreakdown
        do {
            breakdown = try pricing.price(checkout)
        } catch {
            return .refused(.pricingFailed(error))
        }
        guard breakdown.isPayable else { return .refused(.notPayable(breakdown.errors)) }

        let opened: OpenedPaymentToken
        do {
            let expectations = PaymentTokenExpectations(
                applicationData: .anyOfBytes(checkout.applicationDataCandidates), amount: breakdown.total,
                currencyCode: breakdown.currency.code)
            opened = try tokenOpener.open(try JSONEncoder().encode(payment.token), expecting: expectations)
        } catch let error as PaymentTokenError {
            return .refused(
                .tokenRefused(error, total: Money(minorUnits: breakdown.total, currency: breakdown.currency)))
        } catch {
            return .refused(
                .tokenRefused(
                    PaymentTokenError(.malformedToken, "the token is not a JSON object"),
                    total: Money(minorUnits: breakdown.total, currency: breakdown.currency)))
        }

        let order = NewOrder(
            checkout: checkout, breakdown: breakdown, transactionID: opened.transactionID,
            token: opened.networkToken, shippingContact: payment.shippingContact,
            billingContact: payment.billingContact, configuration: configuration)
        return .processed(
            try await service.pay(order, token: opened.networkToken, rootFingerprint: opened.rootFingerprint))
    }
}

/// Why a payment was refused before anything was written or charged.
public enum PaymentRefusal: Sendable {
    /// No checkout has this id.
    case checkoutNotFound(String)
    /// The checkout has errors the customer must fix first (an unserviceable address, an invalid coupon...).
    case notPayable([PaymentError])
    /// The checkout could not be priced.
    case pricingFailed(CheckoutError)
    /// The token was refused: not Apple's, not for this merchant, too old, or not for this checkout's total,
    /// currency or application data.
    case tokenRefused(PaymentTokenError, total: Money)

    /// A stable code (`checkoutNotFound`, `checkoutNotPayable`, `amountMismatch`, `signatureInvalid`, ...).
    public var code: String {
        switch self {
        case .checkoutNotFound: "checkoutNotFound"
        case .notPayable: "checkoutNotPayable"
        case .pricingFailed(let error): error.code.rawValue
        case .tokenRefused(let error, _): error.code.rawValue
        }
    }

    /// For the client: never token material.
    public var message: String {
        switch self {
        case .checkoutNotFound(let id): "There is no checkout with id \(id)."
        case .notPayable: "The checkout has errors to resolve before paying."
        case .pricingFailed(let error): error.message
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

import ApplePay
import Foundation

/// The merchant's side of the conversation: one async method per question the sheet asks, returning the
/// Apple Pay JS update dictionaries. An in-process Swift object or a client of a merchant server's HTTP API
/// (`HTTPMerchantDelegate`) both fit.
///
/// The sheet asks one question at a time and waits at most its timeout (30 seconds) for each answer. A method
/// that throws fails the session. `didFinish(_:)` is called exactly once, last, on every path.
public protocol PaymentSheetDelegate: Sendable {
    /// `onvalidatemerchant` (Apple Pay on the web only): the opaque merchant session from Apple's server.
    func validateMerchant(_ event: MerchantValidationEvent) async throws -> MerchantSession
    /// `onpaymentmethodselected`: the card chosen, without its number.
    func didSelectPaymentMethod(_ paymentMethod: PaymentMethod) async throws -> PaymentMethodUpdate
    /// `onshippingcontactselected`: the redacted shipping contact.
    func didSelectShippingContact(_ contact: Contact) async throws -> ShippingContactUpdate
    /// `onshippingmethodselected`.
    func didSelectShippingMethod(_ method: ShippingMethod) async throws -> ShippingMethodUpdate
    /// `oncouponcodechanged`.
    func didChangeCouponCode(_ couponCode: String) async throws -> CouponCodeUpdate
    /// `onpaymentauthorized`: the token and the full contacts (only the requested fields).
    func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult
    /// `onpaymentauthorized` as the sheet asks it: the result plus the merchant's reference for the order, when
    /// it has one. The default calls `didAuthorizePayment(_:)` and carries no order id.
    func authorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationAnswer
    /// `didFinish` / `oncancel`: the sheet is gone. Always last, always once.
    func didFinish(_ outcome: SessionOutcome) async
}

extension PaymentSheetDelegate {
    /// A merchant that needs no validation answers with an empty session.
    public func validateMerchant(_ event: MerchantValidationEvent) async throws -> MerchantSession {
        MerchantSession(.object([:]))
    }
    /// Not implementing an event means accepting the selection without changes, as on a device.
    public func didSelectPaymentMethod(_ paymentMethod: PaymentMethod) async throws -> PaymentMethodUpdate {
        PaymentMethodUpdate()
    }
    public func didSelectShippingContact(_ contact: Contact) async throws -> ShippingContactUpdate {
        ShippingContactUpdate()
    }
    public func didSelectShippingMethod(_ method: ShippingMethod) async throws -> ShippingMethodUpdate {
        ShippingMethodUpdate()
    }
    public func didChangeCouponCode(_ couponCode: String) async throws -> CouponCodeUpdate { CouponCodeUpdate() }
    public func authorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationAnswer {
        PaymentAuthorizationAnswer(result: try await didAuthorizePayment(payment))
    }
    public func didFinish(_ outcome: SessionOutcome) async {}
}

/// `ApplePayValidateMerchantEvent`: where the merchant should ask Apple for a session.
public struct MerchantValidationEvent: Sendable, Hashable, Codable {
    public var validationURL: String

    public init(validationURL: String = "https://apple-pay-gateway-cert.apple.com/paymentservices/paymentSession") {
        self.validationURL = validationURL
    }
}

/// The opaque merchant session a merchant passes to `completeMerchantValidation`, kept as JSON.
public struct MerchantSession: Sendable, Hashable, Codable {
    public var value: JSONValue
    public init(_ value: JSONValue) { self.value = value }

    public init(from decoder: any Decoder) throws { value = try JSONValue(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// The merchant's answer to `onpaymentauthorized`: Apple Pay JS's result and, when the merchant made an order,
/// its id (for example the merchant server's `orderId`), so a transcript can say where the payment went.
public struct PaymentAuthorizationAnswer: Sendable, Hashable {
    public var result: PaymentAuthorizationResult
    /// The merchant's order id; never a card number, cryptogram or token.
    public var orderID: String?

    public init(result: PaymentAuthorizationResult, orderID: String? = nil) {
        self.result = result
        self.orderID = orderID
    }
}

/// How a session ended.
public struct SessionOutcome: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// The merchant answered the authorization with success.
        case success
        /// The merchant refused the payment, failed, or broke Apple's rules.
        case failure
        /// The user dismissed the sheet.
        case cancelled
        /// The merchant did not answer within the timeout.
        case timedOut
    }

    public var kind: Kind
    /// A stable word for why, for example `authorized`, `merchantRefused`, `invalidUpdate`, `userCancelled`.
    public var reason: String
    /// A sentence for people.
    public var message: String?
    /// The order the merchant's last answer to `paymentauthorized` named, if any (a success's order, or the
    /// failed order of a refused payment).
    public var orderID: String?

    public init(_ kind: Kind, reason: String, message: String? = nil, orderID: String? = nil) {
        self.kind = kind
        self.reason = reason
        self.message = message
        self.orderID = orderID
    }
}

/// The initiative the sheet simulates: Apple Pay on the web asks for merchant validation first, an app does not.
public enum SessionInitiative: String, Sendable, Hashable, Codable {
    case web
    case inApp
}

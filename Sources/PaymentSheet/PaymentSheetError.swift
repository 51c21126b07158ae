import Foundations

/// A stable, machine-readable reason a ``PaymentSheetError`` gives.
public struct PaymentSheetErrorCode: ErrorCode {
    public typealias Owner = PaymentSheetError
    /// The code as a string, e.g. `"eventInProgress"`.
    public let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// The payment request breaks Apple's rules; the sheet would not open.
    public static let invalidRequest = Self("invalidRequest")
    /// The device cannot make payments, or no card in the wallet can pay for the request.
    public static let cannotMakePayments = Self("cannotMakePayments")
    /// A card's number, expiry or country is malformed.
    public static let invalidCard = Self("invalidCard")
    /// The action names a card the wallet does not hold, or one that cannot pay for the request.
    public static let unknownCard = Self("unknownCard")
    /// The action names a shipping method the sheet does not offer.
    public static let unknownShippingMethod = Self("unknownShippingMethod")
    /// The action needs something the request does not ask for (a coupon without `supportsCouponCode`).
    public static let notOffered = Self("notOffered")
    /// The sheet is still waiting for the merchant's answer to the previous event.
    public static let eventInProgress = Self("eventInProgress")
    /// The session has not begun yet.
    public static let notBegun = Self("notBegun")
    /// The session already finished.
    public static let finished = Self("finished")
    /// Authorization is blocked: merchant errors to resolve or required contact fields missing.
    public static let authorizationBlocked = Self("authorizationBlocked")
    /// The token could not be made.
    public static let tokenFailed = Self("tokenFailed")
    /// The merchant's delegate failed (threw, or an HTTP merchant answered with an error).
    public static let merchantFailed = Self("merchantFailed")
    /// The merchant server has no checkout with the id given to pay.
    public static let unknownCheckout = Self("unknownCheckout")
    /// The scenario document is invalid.
    public static let invalidScenario = Self("invalidScenario")
}

/// Why the sheet refused something. Equality is on the code only; `message` says what to do; `field` is the bad
/// field, when there is one: for scenario errors its path (`wallet.cards[0].devicePAN`), for a `WalletCard`'s
/// `invalidCard` the parameter (`devicePAN`, `expirationDate`, `issuingCountry`).
public typealias PaymentSheetError = FieldFailure<PaymentSheetErrorCode>

import Foundations

/// The stable codes of ``PaymentSheetError``.
extension ErrorCode<PaymentSheetError> {
    /// The payment request breaks Apple's rules; the sheet would not open.
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// The device cannot make payments, or no card in the wallet can pay for the request.
    public static var cannotMakePayments: Self { Self("cannotMakePayments") }
    /// A card's number, expiry or country is malformed.
    public static var invalidCard: Self { Self("invalidCard") }
    /// The action names a card the wallet does not hold, or one that cannot pay for the request.
    public static var unknownCard: Self { Self("unknownCard") }
    /// The action names a shipping method the sheet does not offer.
    public static var unknownShippingMethod: Self { Self("unknownShippingMethod") }
    /// The action needs something the request does not ask for (a coupon without `supportsCouponCode`).
    public static var notOffered: Self { Self("notOffered") }
    /// The sheet is still waiting for the merchant's answer to the previous event.
    public static var eventInProgress: Self { Self("eventInProgress") }
    /// The session has not begun yet.
    public static var notBegun: Self { Self("notBegun") }
    /// The session already finished.
    public static var finished: Self { Self("finished") }
    /// Authorization is blocked: merchant errors to resolve or required contact fields missing.
    public static var authorizationBlocked: Self { Self("authorizationBlocked") }
    /// The token could not be made.
    public static var tokenFailed: Self { Self("tokenFailed") }
    /// The merchant's delegate failed (threw, or an HTTP merchant answered with an error).
    public static var merchantFailed: Self { Self("merchantFailed") }
    /// The merchant server has no checkout with the id given to pay.
    public static var unknownCheckout: Self { Self("unknownCheckout") }
    /// The scenario document is invalid.
    public static var invalidScenario: Self { Self("invalidScenario") }
}

/// The domain of ``PaymentSheetError``: its codes are ``ErrorCode`` of it.
public enum PaymentSheetErrorDomain {}

/// Why the sheet refused something. Equality is on the code only; `message` says what to do; `field` is the bad
/// field, when there is one: for scenario errors its path (`wallet.cards[0].devicePAN`), for a `WalletCard`'s
/// `invalidCard` the parameter (`devicePAN`, `expirationDate`, `issuingCountry`).
public typealias PaymentSheetError = FieldFailure<PaymentSheetErrorDomain>

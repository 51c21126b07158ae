import Foundations

/// Why the sheet refused something. Equality is on the code only; `message` says what to do.
public struct PaymentSheetError: CodedError {
    /// A stable, machine-readable reason.
    public struct Code: ErrorCode {
        public typealias Owner = PaymentSheetError
        /// The code as a string, e.g. `"eventInProgress"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The payment request breaks Apple's rules; the sheet would not open.
        public static let invalidRequest = Code("invalidRequest")
        /// The device cannot make payments, or no card in the wallet can pay for the request.
        public static let cannotMakePayments = Code("cannotMakePayments")
        /// A card's number, expiry or country is malformed.
        public static let invalidCard = Code("invalidCard")
        /// The action names a card the wallet does not hold, or one that cannot pay for the request.
        public static let unknownCard = Code("unknownCard")
        /// The action names a shipping method the sheet does not offer.
        public static let unknownShippingMethod = Code("unknownShippingMethod")
        /// The action needs something the request does not ask for (a coupon without `supportsCouponCode`).
        public static let notOffered = Code("notOffered")
        /// The sheet is still waiting for the merchant's answer to the previous event.
        public static let eventInProgress = Code("eventInProgress")
        /// The session has not begun yet.
        public static let notBegun = Code("notBegun")
        /// The session already finished.
        public static let finished = Code("finished")
        /// Authorization is blocked: merchant errors to resolve or required contact fields missing.
        public static let authorizationBlocked = Code("authorizationBlocked")
        /// The token could not be made.
        public static let tokenFailed = Code("tokenFailed")
        /// The merchant's delegate failed (threw, or an HTTP merchant answered with an error).
        public static let merchantFailed = Code("merchantFailed")
        /// The merchant server has no checkout with the id given to pay.
        public static let unknownCheckout = Code("unknownCheckout")
        /// The scenario document is invalid.
        public static let invalidScenario = Code("invalidScenario")
    }

    public let code: Code
    public let message: String
    /// The bad field, when there is one: for scenario errors its path (`wallet.cards[0].devicePAN`), for a
    /// `WalletCard`'s `invalidCard` the parameter (`devicePAN`, `expirationDate`, `issuingCountry`).
    public let field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String {
        field.map { "\(code) at \($0): \(message)" } ?? "\(code): \(message)"
    }

}

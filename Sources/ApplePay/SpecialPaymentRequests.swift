/// A subscription: Apple Pay JS `ApplePayRecurringPaymentRequest` (v14). Returns a merchant token where the
/// network supports one.
public struct RecurringPaymentRequest: Sendable, Hashable, Codable {
    /// What the subscription is, shown on the sheet.
    public var paymentDescription: String
    /// The regular payment: a line item with `paymentTiming` `recurring`.
    public var regularBilling: PaymentSummaryItem
    /// An optional trial period before the regular billing.
    public var trialBilling: PaymentSummaryItem?
    /// The terms the customer agrees to; at most 500 characters.
    public var billingAgreement: String?
    /// Where the customer manages the subscription.
    public var managementURL: String
    /// Where Apple sends merchant-token life-cycle notifications.
    public var tokenNotificationURL: String?

    public init(
        paymentDescription: String, regularBilling: PaymentSummaryItem, trialBilling: PaymentSummaryItem? = nil,
        billingAgreement: String? = nil, managementURL: String, tokenNotificationURL: String? = nil
    ) {
        self.paymentDescription = paymentDescription
        self.regularBilling = regularBilling
        self.trialBilling = trialBilling
        self.billingAgreement = billingAgreement
        self.managementURL = managementURL
        self.tokenNotificationURL = tokenNotificationURL
    }
}

/// A stored-value top-up below a threshold: Apple Pay JS `ApplePayAutomaticReloadPaymentRequest` (v14).
public struct AutomaticReloadPaymentRequest: Sendable, Hashable, Codable {
    public var paymentDescription: String
    /// A line item with `paymentTiming` `automaticReload`: `amount` is the reload amount,
    /// `automaticReloadPaymentThresholdAmount` the balance that triggers it.
    public var automaticReloadBilling: PaymentSummaryItem
    /// At most 500 characters.
    public var billingAgreement: String?
    public var managementURL: String
    public var tokenNotificationURL: String?

    public init(
        paymentDescription: String, automaticReloadBilling: PaymentSummaryItem, billingAgreement: String? = nil,
        managementURL: String, tokenNotificationURL: String? = nil
    ) {
        self.paymentDescription = paymentDescription
        self.automaticReloadBilling = automaticReloadBilling
        self.billingAgreement = billingAgreement
        self.managementURL = managementURL
        self.tokenNotificationURL = tokenNotificationURL
    }
}

/// A payment taken later (a hotel booking, a pre-order): Apple Pay JS `ApplePayDeferredPaymentRequest`.
public struct DeferredPaymentRequest: Sendable, Hashable, Codable {
    public var paymentDescription: String
    /// A line item with `paymentTiming` `deferred` and a `deferredPaymentDate`.
    public var deferredBilling: PaymentSummaryItem
    /// At most 500 characters.
    public var billingAgreement: String?
    public var managementURL: String
    public var tokenNotificationURL: String?
    /// Until when the customer may cancel for free (ISO 8601); set together with the time zone or not at all.
    public var freeCancellationDate: String?
    /// The IANA time zone of `freeCancellationDate`, for example `America/Los_Angeles`.
    public var freeCancellationDateTimeZone: String?

    public init(
        paymentDescription: String, deferredBilling: PaymentSummaryItem, billingAgreement: String? = nil,
        managementURL: String, tokenNotificationURL: String? = nil, freeCancellationDate: String? = nil,
        freeCancellationDateTimeZone: String? = nil
    ) {
        self.paymentDescription = paymentDescription
        self.deferredBilling = deferredBilling
        self.billingAgreement = billingAgreement
        self.managementURL = managementURL
        self.tokenNotificationURL = tokenNotificationURL
        self.freeCancellationDate = freeCancellationDate
        self.freeCancellationDateTimeZone = freeCancellationDateTimeZone
    }
}

/// One merchant's share of a multi-merchant payment: Apple Pay JS `ApplePayPaymentTokenContext` (v14).
public struct PaymentTokenContext: Sendable, Hashable, Codable {
    /// The merchant identifier the token for this share is encrypted for.
    public var merchantIdentifier: String
    /// The merchant's own reference for this share.
    public var externalIdentifier: String
    public var merchantName: String
    public var merchantDomain: String?
    /// This share's amount as a decimal string; the shares sum to at most the total.
    public var amount: String

    public init(
        merchantIdentifier: String, externalIdentifier: String, merchantName: String, merchantDomain: String? = nil,
        amount: String
    ) {
        self.merchantIdentifier = merchantIdentifier
        self.externalIdentifier = externalIdentifier
        self.merchantName = merchantName
        self.merchantDomain = merchantDomain
        self.amount = amount
    }
}

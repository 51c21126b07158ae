/// The machine reason of a `PaymentError`: Apple Pay JS `ApplePayErrorCode`.
public struct PaymentErrorCode: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let shippingContactInvalid: PaymentErrorCode = "shippingContactInvalid"
    public static let billingContactInvalid: PaymentErrorCode = "billingContactInvalid"
    public static let addressUnserviceable: PaymentErrorCode = "addressUnserviceable"
    public static let couponCodeInvalid: PaymentErrorCode = "couponCodeInvalid"
    public static let couponCodeExpired: PaymentErrorCode = "couponCodeExpired"
    public static let unknown: PaymentErrorCode = "unknown"

    public static let known: [PaymentErrorCode] = [
        .shippingContactInvalid, .billingContactInvalid, .addressUnserviceable, .couponCodeInvalid,
        .couponCodeExpired, .unknown,
    ]
}

/// The contact field a `PaymentError` points at: Apple Pay JS `ApplePayErrorContactField`.
public struct PaymentErrorContactField: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let phoneNumber: PaymentErrorContactField = "phoneNumber"
    public static let emailAddress: PaymentErrorContactField = "emailAddress"
    public static let name: PaymentErrorContactField = "name"
    public static let phoneticName: PaymentErrorContactField = "phoneticName"
    public static let postalAddress: PaymentErrorContactField = "postalAddress"
    public static let addressLines: PaymentErrorContactField = "addressLines"
    public static let locality: PaymentErrorContactField = "locality"
    public static let subLocality: PaymentErrorContactField = "subLocality"
    public static let postalCode: PaymentErrorContactField = "postalCode"
    public static let administrativeArea: PaymentErrorContactField = "administrativeArea"
    public static let subAdministrativeArea: PaymentErrorContactField = "subAdministrativeArea"
    public static let country: PaymentErrorContactField = "country"
    public static let countryCode: PaymentErrorContactField = "countryCode"

    public static let known: [PaymentErrorContactField] = [
        .phoneNumber, .emailAddress, .name, .phoneticName, .postalAddress, .addressLines, .locality, .subLocality,
        .postalCode, .administrativeArea, .subAdministrativeArea, .country, .countryCode,
    ]
}

/// A problem the merchant shows on the sheet: Apple Pay JS `ApplePayError`, as `{code, contactField, message}`.
/// The customer must resolve it before authorizing; list the most severe first.
public struct PaymentError: Sendable, Hashable, Codable {
    public var code: PaymentErrorCode
    /// The field at fault, for the contact errors.
    public var contactField: PaymentErrorContactField?
    /// A sentence for the customer.
    public var message: String?

    public init(code: PaymentErrorCode, contactField: PaymentErrorContactField? = nil, message: String? = nil) {
        self.code = code
        self.contactField = contactField
        self.message = message
    }
}

/// What every merchant answer to a sheet event may change: the new total, line items and (v14) the special
/// payment requests. `PaymentRequest.applying(_:)` folds one into a request.
public protocol PaymentRequestUpdate: Sendable {
    var newTotal: PaymentSummaryItem? { get }
    var newLineItems: [PaymentSummaryItem]? { get }
    /// New shipping methods, for the updates that carry them (nil otherwise).
    var newShippingMethods: [ShippingMethod]? { get }
    var newRecurringPaymentRequest: RecurringPaymentRequest? { get }
    var newAutomaticReloadPaymentRequest: AutomaticReloadPaymentRequest? { get }
    var newDeferredPaymentRequest: DeferredPaymentRequest? { get }
    var newMultiTokenContexts: [PaymentTokenContext]? { get }
    /// The errors to show, for the updates that carry them (empty otherwise).
    var errors: [PaymentError]? { get }
}

extension PaymentRequestUpdate {
    public var newShippingMethods: [ShippingMethod]? { nil }
    public var errors: [PaymentError]? { nil }
}

/// The answer to `onshippingcontactselected`: Apple Pay JS `ApplePayShippingContactUpdate`; also the answer to
/// `oncouponcodechanged` (``CouponCodeUpdate``), which has the same members.
public struct ShippingContactUpdate: PaymentRequestUpdate, Hashable, Codable {
    public var newTotal: PaymentSummaryItem?
    public var newLineItems: [PaymentSummaryItem]?
    public var newShippingMethods: [ShippingMethod]?
    public var errors: [PaymentError]?
    public var newRecurringPaymentRequest: RecurringPaymentRequest?
    public var newAutomaticReloadPaymentRequest: AutomaticReloadPaymentRequest?
    public var newDeferredPaymentRequest: DeferredPaymentRequest?
    public var newMultiTokenContexts: [PaymentTokenContext]?

    public init(
        newTotal: PaymentSummaryItem? = nil, newLineItems: [PaymentSummaryItem]? = nil,
        newShippingMethods: [ShippingMethod]? = nil, errors: [PaymentError]? = nil
    ) {
        self.newTotal = newTotal
        self.newLineItems = newLineItems
        self.newShippingMethods = newShippingMethods
        self.errors = errors
    }
}

/// The answer to `onshippingmethodselected`: Apple Pay JS `ApplePayShippingMethodUpdate` (no errors).
public struct ShippingMethodUpdate: PaymentRequestUpdate, Hashable, Codable {
    public var newTotal: PaymentSummaryItem?
    public var newLineItems: [PaymentSummaryItem]?
    public var newRecurringPaymentRequest: RecurringPaymentRequest?
    public var newAutomaticReloadPaymentRequest: AutomaticReloadPaymentRequest?
    public var newDeferredPaymentRequest: DeferredPaymentRequest?
    public var newMultiTokenContexts: [PaymentTokenContext]?

    public init(newTotal: PaymentSummaryItem? = nil, newLineItems: [PaymentSummaryItem]? = nil) {
        self.newTotal = newTotal
        self.newLineItems = newLineItems
    }
}

/// The answer to `onpaymentmethodselected`: Apple Pay JS `ApplePayPaymentMethodUpdate`.
public struct PaymentMethodUpdate: PaymentRequestUpdate, Hashable, Codable {
    public var newTotal: PaymentSummaryItem?
    public var newLineItems: [PaymentSummaryItem]?
    public var errors: [PaymentError]?
    public var newRecurringPaymentRequest: RecurringPaymentRequest?
    public var newAutomaticReloadPaymentRequest: AutomaticReloadPaymentRequest?
    public var newDeferredPaymentRequest: DeferredPaymentRequest?
    public var newMultiTokenContexts: [PaymentTokenContext]?

    public init(
        newTotal: PaymentSummaryItem? = nil, newLineItems: [PaymentSummaryItem]? = nil, errors: [PaymentError]? = nil
    ) {
        self.newTotal = newTotal
        self.newLineItems = newLineItems
        self.errors = errors
    }
}

/// The answer to `oncouponcodechanged`: Apple Pay JS `ApplePayCouponCodeUpdate`, whose members are those of
/// `ApplePayShippingContactUpdate` (new total, line items, shipping methods, errors and special requests).
public typealias CouponCodeUpdate = ShippingContactUpdate

extension PaymentRequest {
    /// The request as the sheet shows it after a merchant update: every `new*` field that is present replaces
    /// the request's own. Validate the result to know whether the update broke Apple's rules.
    public func applying(_ update: some PaymentRequestUpdate) -> PaymentRequest {
        var request = self
        if let total = update.newTotal { request.total = total }
        if let items = update.newLineItems { request.lineItems = items }
        if let methods = update.newShippingMethods { request.shippingMethods = methods }
        if let recurring = update.newRecurringPaymentRequest { request.recurringPaymentRequest = recurring }
        if let reload = update.newAutomaticReloadPaymentRequest { request.automaticReloadPaymentRequest = reload }
        if let deferred = update.newDeferredPaymentRequest { request.deferredPaymentRequest = deferred }
        if let contexts = update.newMultiTokenContexts { request.multiTokenContexts = contexts }
        return request
    }
}

/// `ApplePaySession.STATUS_*`: the outcome of an authorization, encoded as Apple Pay JS's number.
/// Decodes the number or the name (`"success"`, `"failure"`, ...).
public enum PaymentAuthorizationStatus: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case success = 0
    case failure = 1
    /// Deprecated by Apple: use `failure` with errors.
    case invalidBillingPostalAddress = 2
    /// Deprecated by Apple: use `failure` with errors.
    case invalidShippingPostalAddress = 3
    /// Deprecated by Apple: use `failure` with errors.
    case invalidShippingContact = 4
    case pinRequired = 5
    case pinIncorrect = 6
    case pinLockout = 7

    public var description: String {
        switch self {
        case .success: "success"
        case .failure: "failure"
        case .invalidBillingPostalAddress: "invalidBillingPostalAddress"
        case .invalidShippingPostalAddress: "invalidShippingPostalAddress"
        case .invalidShippingContact: "invalidShippingContact"
        case .pinRequired: "pinRequired"
        case .pinIncorrect: "pinIncorrect"
        case .pinLockout: "pinLockout"
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            guard let status = PaymentAuthorizationStatus(rawValue: number) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\(number) is not an Apple Pay status (0 to 7)")
            }
            self = status
        } else {
            let name = try container.decode(String.self)
            guard let status = Self.allCases.first(where: { $0.description == name }) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(name)' is not an Apple Pay status")
            }
            self = status
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A Wallet order to show after a successful payment: Apple Pay JS `ApplePayPaymentOrderDetails` (v14).
public struct PaymentOrderDetails: Sendable, Hashable, Codable {
    public var orderTypeIdentifier: String
    public var orderIdentifier: String
    public var webServiceURL: String
    public var authenticationToken: String

    public init(
        orderTypeIdentifier: String, orderIdentifier: String, webServiceURL: String, authenticationToken: String
    ) {
        self.orderTypeIdentifier = orderTypeIdentifier
        self.orderIdentifier = orderIdentifier
        self.webServiceURL = webServiceURL
        self.authenticationToken = authenticationToken
    }
}

/// The answer to `onpaymentauthorized`: Apple Pay JS `ApplePayPaymentAuthorizationResult`.
public struct PaymentAuthorizationResult: Sendable, Hashable, Codable {
    public var status: PaymentAuthorizationStatus
    public var errors: [PaymentError]?
    public var orderDetails: PaymentOrderDetails?

    public init(
        status: PaymentAuthorizationStatus, errors: [PaymentError]? = nil, orderDetails: PaymentOrderDetails? = nil
    ) {
        self.status = status
        self.errors = errors
        self.orderDetails = orderDetails
    }
}

/// The kind of card: Apple Pay JS `ApplePayPaymentMethodType`.
public struct PaymentMethodType: OpenStringEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let debit: PaymentMethodType = "debit"
    public static let credit: PaymentMethodType = "credit"
    public static let prepaid: PaymentMethodType = "prepaid"
    public static let store: PaymentMethodType = "store"
    public static let eMoney: PaymentMethodType = "eMoney"

    public static let known: [PaymentMethodType] = [.debit, .credit, .prepaid, .store, .eMoney]
}

/// The card the customer chose: Apple Pay JS `ApplePayPaymentMethod`. Before authorization it carries no
/// card details beyond a display name such as "Visa 1234" and the network.
public struct PaymentMethod: Sendable, Hashable, Codable {
    public var displayName: String?
    public var network: PaymentNetwork?
    public var type: PaymentMethodType?
    /// Present only when the request asked for billing contact fields.
    public var billingContact: Contact?

    public init(
        displayName: String? = nil, network: PaymentNetwork? = nil, type: PaymentMethodType? = nil,
        billingContact: Contact? = nil
    ) {
        self.displayName = displayName
        self.network = network
        self.type = type
        self.billingContact = billingContact
    }
}

/// An authorized payment: Apple Pay JS `ApplePayPayment`. The token is kept as the raw JSON it came as
/// (`{paymentData, paymentMethod, transactionIdentifier}`) for the PaymentToken module to parse; its
/// `description`, `dump` and debuggers never print it.
public struct Payment: Sendable, Hashable, Codable, CustomStringConvertible, CustomReflectable {
    public var token: JSONValue
    public var billingContact: Contact?
    public var shippingContact: Contact?

    public init(token: JSONValue, billingContact: Contact? = nil, shippingContact: Contact? = nil) {
        self.token = token
        self.billingContact = billingContact
        self.shippingContact = shippingContact
    }

    public var description: String {
        "Payment(token: <redacted>, billingContact: \(billingContact == nil ? "none" : "present"), "
            + "shippingContact: \(shippingContact == nil ? "none" : "present"))"
    }

    /// What `dump` and debuggers see: the same as ``description``.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "token": "<redacted>", "billingContact": billingContact == nil ? "none" : "present",
                "shippingContact": shippingContact == nil ? "none" : "present",
            ])
    }
}

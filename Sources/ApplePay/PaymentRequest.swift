import Foundation

/// A payment request in exactly the JSON shape of Apple Pay JS's `ApplePayPaymentRequest`, so a server can hand
/// it to a web page as is and read back what a page sends.
///
/// Decoding is strict about shape (a missing `total` or a number where a string belongs fails with a
/// `DecodingError` naming the path) and tolerant about values: an amount that is not a decimal, an unknown
/// network or currency decode, and `validate()` reports them all at once. Members this model does not know are
/// kept in `otherFields` and written back unchanged.
public struct PaymentRequest: Sendable, Hashable, Codable {
    /// ISO 3166-1 alpha-2 code of the merchant's principal place of business.
    public var countryCode: String
    /// ISO 4217 alphabetic code shared by every amount in the request.
    public var currencyCode: String
    /// Accepted networks, in order of preference for co-badged cards.
    public var supportedNetworks: [PaymentNetwork]
    /// Must contain `supports3DS`.
    public var merchantCapabilities: MerchantCapabilities
    /// The total; its label is the business name.
    public var total: PaymentSummaryItem
    public var lineItems: [PaymentSummaryItem]?
    public var requiredBillingContactFields: [ContactField]?
    public var requiredShippingContactFields: [ContactField]?
    public var billingContact: Contact?
    public var shippingContact: Contact?
    public var shippingMethods: [ShippingMethod]?
    public var shippingType: ShippingType?
    public var shippingContactEditingMode: ShippingContactEditingMode?
    /// ISO 3166-1 alpha-2 codes of the card-issuing countries accepted.
    public var supportedCountries: [String]?
    /// Opaque merchant data as a base64 string; its SHA-256 appears in the token header.
    public var applicationData: String?
    public var supportsCouponCode: Bool?
    /// A coupon code to show on the sheet at the start; apply it to the initial totals yourself.
    public var couponCode: String?
    public var recurringPaymentRequest: RecurringPaymentRequest?
    public var automaticReloadPaymentRequest: AutomaticReloadPaymentRequest?
    public var deferredPaymentRequest: DeferredPaymentRequest?
    public var multiTokenContexts: [PaymentTokenContext]?
    /// ISO 18245 merchant category code, 1–9999.
    public var merchantCategoryCode: MerchantCategoryCode?
    /// Members the JSON had that this model does not know, kept to be written back as they came.
    public var otherFields: [String: JSONValue]

    public init(
        countryCode: String, currencyCode: String, supportedNetworks: [PaymentNetwork],
        merchantCapabilities: MerchantCapabilities = [.supports3DS], total: PaymentSummaryItem,
        lineItems: [PaymentSummaryItem]? = nil
    ) {
        self.countryCode = countryCode
        self.currencyCode = currencyCode
        self.supportedNetworks = supportedNetworks
        self.merchantCapabilities = merchantCapabilities
        self.total = total
        self.lineItems = lineItems
        otherFields = [:]
    }

    /// The request's currency, or nil when `currencyCode` is not an ISO 4217 code.
    public var currency: Currency? { Currency(code: currencyCode) }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case countryCode, currencyCode, supportedNetworks, merchantCapabilities, total, lineItems
        case requiredBillingContactFields, requiredShippingContactFields, billingContact, shippingContact
        case shippingMethods, shippingType, shippingContactEditingMode, supportedCountries, applicationData
        case supportsCouponCode, couponCode, recurringPaymentRequest, automaticReloadPaymentRequest
        case deferredPaymentRequest, multiTokenContexts, merchantCategoryCode
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        countryCode = try container.decode(String.self, forKey: .countryCode)
        currencyCode = try container.decode(String.self, forKey: .currencyCode)
        supportedNetworks = try container.decode([PaymentNetwork].self, forKey: .supportedNetworks)
        merchantCapabilities = try container.decode(MerchantCapabilities.self, forKey: .merchantCapabilities)
        total = try container.decode(PaymentSummaryItem.self, forKey: .total)
        lineItems = try container.decodeIfPresent([PaymentSummaryItem].self, forKey: .lineItems)
        requiredBillingContactFields = try container.decodeIfPresent(
            [ContactField].self, forKey: .requiredBillingContactFields)
        requiredShippingContactFields = try container.decodeIfPresent(
            [ContactField].self, forKey: .requiredShippingContactFields)
        billingContact = try container.decodeIfPresent(Contact.self, forKey: .billingContact)
        shippingContact = try container.decodeIfPresent(Contact.self, forKey: .shippingContact)
        shippingMethods = try container.decodeIfPresent([ShippingMethod].self, forKey: .shippingMethods)
        shippingType = try container.decodeIfPresent(ShippingType.self, forKey: .shippingType)
        shippingContactEditingMode = try container.decodeIfPresent(
            ShippingContactEditingMode.self, forKey: .shippingContactEditingMode)
        supportedCountries = try container.decodeIfPresent([String].self, forKey: .supportedCountries)
        applicationData = try container.decodeIfPresent(String.self, forKey: .applicationData)
        supportsCouponCode = try container.decodeIfPresent(Bool.self, forKey: .supportsCouponCode)
        couponCode = try container.decodeIfPresent(String.self, forKey: .couponCode)
        recurringPaymentRequest = try container.decodeIfPresent(
            RecurringPaymentRequest.self, forKey: .recurringPaymentRequest)
        automaticReloadPaymentRequest = try container.decodeIfPresent(
            AutomaticReloadPaymentRequest.self, forKey: .automaticReloadPaymentRequest)
        deferredPaymentRequest = try container.decodeIfPresent(
            DeferredPaymentRequest.self, forKey: .deferredPaymentRequest)
        multiTokenContexts = try container.decodeIfPresent([PaymentTokenContext].self, forKey: .multiTokenContexts)
        merchantCategoryCode = try container.decodeIfPresent(
            MerchantCategoryCode.self, forKey: .merchantCategoryCode)

        let known = Set(CodingKeys.allCases.map(\.stringValue))
        let all = try decoder.container(keyedBy: AnyKey.self)
        var others: [String: JSONValue] = [:]
        for key in all.allKeys where !known.contains(key.stringValue) {
            others[key.stringValue] = try all.decode(JSONValue.self, forKey: key)
        }
        otherFields = others
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(countryCode, forKey: .countryCode)
        try container.encode(currencyCode, forKey: .currencyCode)
        try container.encode(supportedNetworks, forKey: .supportedNetworks)
        try container.encode(merchantCapabilities, forKey: .merchantCapabilities)
        try container.encode(total, forKey: .total)
        try container.encodeIfPresent(lineItems, forKey: .lineItems)
        try container.encodeIfPresent(requiredBillingContactFields, forKey: .requiredBillingContactFields)
        try container.encodeIfPresent(requiredShippingContactFields, forKey: .requiredShippingContactFields)
        try container.encodeIfPresent(billingContact, forKey: .billingContact)
        try container.encodeIfPresent(shippingContact, forKey: .shippingContact)
        try container.encodeIfPresent(shippingMethods, forKey: .shippingMethods)
        try container.encodeIfPresent(shippingType, forKey: .shippingType)
        try container.encodeIfPresent(shippingContactEditingMode, forKey: .shippingContactEditingMode)
        try container.encodeIfPresent(supportedCountries, forKey: .supportedCountries)
        try container.encodeIfPresent(applicationData, forKey: .applicationData)
        try container.encodeIfPresent(supportsCouponCode, forKey: .supportsCouponCode)
        try container.encodeIfPresent(couponCode, forKey: .couponCode)
        try container.encodeIfPresent(recurringPaymentRequest, forKey: .recurringPaymentRequest)
        try container.encodeIfPresent(automaticReloadPaymentRequest, forKey: .automaticReloadPaymentRequest)
        try container.encodeIfPresent(deferredPaymentRequest, forKey: .deferredPaymentRequest)
        try container.encodeIfPresent(multiTokenContexts, forKey: .multiTokenContexts)
        try container.encodeIfPresent(merchantCategoryCode, forKey: .merchantCategoryCode)
        var others = encoder.container(keyedBy: AnyKey.self)
        for (key, value) in otherFields where CodingKeys(stringValue: key) == nil {
            try others.encode(value, forKey: AnyKey(stringValue: key))
        }
    }
}

/// An ISO 18245 merchant category code as the JSON wrote it: a number (`5812`) or a string (`"5812"`).
public struct MerchantCategoryCode: Sendable, Hashable, Codable, ExpressibleByIntegerLiteral {
    /// The code's text, for example `"5812"`.
    public var text: String
    /// Whether the JSON had a number rather than a string; encoding writes it back the same way.
    public var isNumber: Bool

    public init(integerLiteral value: Int) {
        text = String(value)
        isNumber = true
    }

    public init(text: String) {
        self.text = text
        isNumber = false
    }

    /// The code as an integer, or nil when the text is not a whole number.
    public var value: Int? {
        guard !text.isEmpty, text.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            self.init(text: string)
        } else {
            let number = try container.decode(Decimal.self)
            self.init(text: number.description)
            isNumber = true
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if isNumber, let value {
            try container.encode(value)
        } else if isNumber, let number = Decimal(string: text), number.description == text {
            // A number beyond Int (or with a fraction) as it was decoded: Decimal's own text reads back exactly.
            try container.encode(number)
        } else {
            try container.encode(text)
        }
    }
}

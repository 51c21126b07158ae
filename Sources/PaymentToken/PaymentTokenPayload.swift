import ApplePay
import Foundation
import Foundations
import JSONCoding

/// The decrypted contents of a payment token, typed.
///
/// `description` masks the PAN (last four digits) and never shows the cryptogram, EMV data or PIN data. Encoding
/// (`Encodable`) writes Apple's field names with the full values: use it only where the full PAN belongs (the
/// operator's own `applepay decrypt`, a processor request), never in logs.
public struct PaymentTokenPayload: Sendable, Hashable, Encodable, CustomStringConvertible {
    /// The payment credentials, by `paymentDataType`.
    public enum Credentials: Sendable, Hashable {
        /// `3DSecure`: an online payment cryptogram (base64) and, when present, the ECI indicator to pass on.
        case threeDSecure(onlinePaymentCryptogram: String, eciIndicator: String?)
        /// `EMV`: EMV data (base64) and encrypted PIN data (hex), when present.
        case emv(emvData: String, encryptedPINData: String?)

        /// Apple's `paymentDataType` string.
        public var paymentDataType: String {
            switch self {
            case .threeDSecure: "3DSecure"
            case .emv: "EMV"
            }
        }
    }

    /// The device (DPAN) or merchant (MPAN) account number.
    public var applicationPrimaryAccountNumber: String
    /// Expiry as YYMMDD.
    public var applicationExpirationDate: String
    /// Numeric ISO 4217 currency code, e.g. "840".
    public var currencyCode: String
    /// The amount in minor units of the currency.
    public var transactionAmount: Int64
    /// The cardholder's name, when the card carries one.
    public var cardholderName: String?
    /// Hex identifier of the device manufacturer.
    public var deviceManufacturerIdentifier: String
    /// The cryptogram (3DSecure) or EMV data.
    public var credentials: Credentials
    /// The merchant token (MPAN) identifier, for merchant tokens.
    public var merchantTokenIdentifier: String?
    /// Merchant token metadata (card art and the like), as sent.
    public var merchantTokenMetadata: JSONValue?
    /// For multi-token requests.
    public var authenticationResponses: JSONValue?

    /// Apple's `paymentDataType`.
    public var paymentDataType: String { credentials.paymentDataType }
    /// The currency, when the numeric code is a known ISO 4217 one.
    public var currency: Currency? { Currency(numericCode: currencyCode) }
    /// Two-digit year and month of expiry, e.g. (24, 9); nil when `applicationExpirationDate` is not YYMMDD.
    public var expiration: (year: Int, month: Int)? {
        let digits = Array(applicationExpirationDate.utf8).map { Int($0) - 48 }
        guard digits.count == 6, digits.allSatisfy({ (0...9).contains($0) }) else { return nil }
        return (digits[0] * 10 + digits[1], digits[2] * 10 + digits[3])
    }
    /// The last four digits of the account number.
    public var lastFour: String { String(applicationPrimaryAccountNumber.suffix(4)) }

    public var description: String {
        "PaymentTokenPayload(card …\(lastFour), expires \(applicationExpirationDate.prefix(4)), \(transactionAmount) minor units of \(currencyCode), \(paymentDataType))"
    }

    private init(
        applicationPrimaryAccountNumber: String, applicationExpirationDate: String, currencyCode: String,
        transactionAmount: Int64, cardholderName: String?, deviceManufacturerIdentifier: String,
        credentials: Credentials, merchantTokenIdentifier: String?, merchantTokenMetadata: JSONValue?,
        authenticationResponses: JSONValue?
    ) {
        self.applicationPrimaryAccountNumber = applicationPrimaryAccountNumber
        self.applicationExpirationDate = applicationExpirationDate
        self.currencyCode = currencyCode
        self.transactionAmount = transactionAmount
        self.cardholderName = cardholderName
        self.deviceManufacturerIdentifier = deviceManufacturerIdentifier
        self.credentials = credentials
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenMetadata
        self.authenticationResponses = authenticationResponses
    }

    /// Reads Apple's payload JSON.
    init(json: TokenJSON) throws(PaymentTokenError) {
        guard case .object(let fields) = json else {
            throw PaymentTokenPayload.malformed("the payload is not a JSON object")
        }
        func string(_ name: String) throws(PaymentTokenError) -> String {
            guard let value = fields[name]?.string else {
                throw PaymentTokenPayload.malformed("\(name) is missing or not a string")
            }
            return value
        }
        func optionalString(_ name: String) throws(PaymentTokenError) -> String? {
            guard let value = fields[name], !value.isNull else { return nil }
            guard let text = value.string else { throw PaymentTokenPayload.malformed("\(name) is not a string") }
            return text
        }
        let pan = try string("applicationPrimaryAccountNumber")
        guard Self.isAccountNumber(pan) else {
            throw PaymentTokenPayload.malformed("applicationPrimaryAccountNumber is not 12 to 19 digits")
        }
        let expiry = try string("applicationExpirationDate")
        guard Self.isExpirationDate(expiry) else {
            throw PaymentTokenPayload.malformed("applicationExpirationDate is not YYMMDD")
        }
        let currencyText: String
        switch fields["currencyCode"] {
        case .string(let text)?: currencyText = String(decoding: text, as: UTF8.self)
        case .number(let text)?: currencyText = text
        default: throw PaymentTokenPayload.malformed("currencyCode is missing")
        }
        guard let currency = Self.currencyCode(currencyText) else {
            throw PaymentTokenPayload.malformed("currencyCode is not a three-digit ISO 4217 code")
        }
        let amountText: String
        switch fields["transactionAmount"] {
        case .number(let text)?: amountText = text
        case .string(let text)?: amountText = String(decoding: text, as: UTF8.self)
        default: throw PaymentTokenPayload.malformed("transactionAmount is missing")
        }
        guard let amount = Int64(amountText), amount >= 0 else {
            throw PaymentTokenPayload.malformed("transactionAmount is not a whole, non-negative number of minor units")
        }
        let type = try string("paymentDataType")
        guard let credentialFields = fields["paymentData"]?.object else {
            throw PaymentTokenPayload.malformed("paymentData is missing or not an object")
        }
        func credential(_ name: String) -> String? { credentialFields[name]?.string }
        switch type {
        case "3DSecure":
            guard let cryptogram = credential("onlinePaymentCryptogram"), !cryptogram.isEmpty else {
                throw PaymentTokenPayload.malformed("3DSecure paymentData lacks onlinePaymentCryptogram")
            }
            let eci: String?
            switch credentialFields["eciIndicator"] {
            case .string(let text)?: eci = String(decoding: text, as: UTF8.self)
            case .number(let text)?: eci = text
            default: eci = nil
            }
            credentials = .threeDSecure(onlinePaymentCryptogram: cryptogram, eciIndicator: eci)
        case "EMV":
            guard let emv = credential("emvData"), !emv.isEmpty else {
                throw PaymentTokenPayload.malformed("EMV paymentData lacks emvData")
            }
            credentials = .emv(emvData: emv, encryptedPINData: credential("encryptedPINData"))
        default:
            throw PaymentTokenPayload.malformed("paymentDataType \"\(type.prefix(16))\" is neither 3DSecure nor EMV")
        }
        applicationPrimaryAccountNumber = pan
        applicationExpirationDate = expiry
        currencyCode = currency
        transactionAmount = amount
        cardholderName = try optionalString("cardholderName")
        deviceManufacturerIdentifier = try optionalString("deviceManufacturerIdentifier") ?? ""
        merchantTokenIdentifier = try optionalString("merchantTokenIdentifier")
        merchantTokenMetadata = fields["merchantTokenMetadata"].flatMap { $0.isNull ? nil : $0.jsonValue }
        authenticationResponses = fields["authenticationResponses"].flatMap { $0.isNull ? nil : $0.jsonValue }
    }

    /// 12 to 19 digits.
    static func isAccountNumber(_ pan: String) -> Bool {
        (12...19).contains(pan.utf8.count) && pan.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// YYMMDD with a month from 1 to 12.
    static func isExpirationDate(_ expiry: String) -> Bool {
        let digits = Array(expiry.utf8)
        return digits.count == 6 && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            && (1...12).contains((Int(digits[2]) - 48) * 10 + Int(digits[3]) - 48)
    }

    /// A numeric ISO 4217 code as three digits (`840`; `36` becomes `036`), nil when it is not one.
    static func currencyCode(_ text: String) -> String? {
        var currency = text
        if currency.utf8.count < 3, currency.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            currency = String(repeating: "0", count: 3 - currency.utf8.count) + currency
        }
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return currency
    }

    /// The payload read straight from its bytes when it has the shape Apple documents and every field passes the
    /// checks of ``init(json:)``; nil otherwise, and ``init(json:)`` (over a `TokenJSON` tree) reads it and says what
    /// is wrong. It accepts nothing the tree reader refuses: the same limits (no name twice anywhere, depth,
    /// members, number length), UTF-8 checked; merchant token metadata and authentication responses (kept as
    /// `JSONValue`) are left to the tree.
    static func reading(_ bytes: UnsafeRawBufferPointer) -> PaymentTokenPayload? {
        var limits = TokenJSON.limits
        limits.validatesUTF8 = true
        return JSONFieldReader.read(bytes, limits: limits) { json -> PaymentTokenPayload? in
            var pan: String?
            var expiry: String?
            var currency: String?
            var amount: String?
            var type: String?
            var credentials: Credentials?
            var cardholderName: String?
            var device: String?
            var merchantToken: String?
            var credentialsType: String?
            let keys: [StaticString] = [
                "applicationExpirationDate", "applicationPrimaryAccountNumber", "authenticationResponses",
                "cardholderName", "currencyCode", "deviceManufacturerIdentifier", "merchantTokenIdentifier",
                "merchantTokenMetadata", "paymentData", "paymentDataType", "transactionAmount",
            ]
            try json.object(keys: keys) { key, json in
                switch key {
                case 0: expiry = try json.string()
                case 1: pan = try json.string()
                case 2, 7: try json.null()
                case 3: cardholderName = try json.optionalString()
                case 4: currency = try json.scalarText()?.text
                case 5: device = try json.optionalString()
                case 6: merchantToken = try json.optionalString()
                case 8: (credentials, credentialsType) = try json.paymentCredentials()
                case 9: type = try json.string()
                default: amount = try json.scalarText()?.text
                }
            }
            guard let pan, isAccountNumber(pan), let expiry, isExpirationDate(expiry),
                let currency = currency.flatMap(currencyCode), let amount = amount.flatMap({ Int64($0) }), amount >= 0,
                let type, let credentials, type == credentialsType
            else { return nil }
            return PaymentTokenPayload(
                applicationPrimaryAccountNumber: pan, applicationExpirationDate: expiry, currencyCode: currency,
                transactionAmount: amount, cardholderName: cardholderName, deviceManufacturerIdentifier: device ?? "",
                credentials: credentials, merchantTokenIdentifier: merchantToken, merchantTokenMetadata: nil,
                authenticationResponses: nil)
        } ?? nil
    }

    static func malformed(_ what: String) -> PaymentTokenError {
        PaymentTokenError(.malformedPayload, "the decrypted payload is not what Apple documents: \(what)")
    }

    private enum CodingKeys: String, CodingKey {
        case applicationPrimaryAccountNumber, applicationExpirationDate, currencyCode, transactionAmount,
            cardholderName, deviceManufacturerIdentifier, paymentDataType, paymentData, merchantTokenIdentifier,
            merchantTokenMetadata, authenticationResponses
    }

    private enum CredentialKeys: String, CodingKey {
        case onlinePaymentCryptogram, eciIndicator, emvData, encryptedPINData
    }

    /// Apple's shape, full values.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(applicationPrimaryAccountNumber, forKey: .applicationPrimaryAccountNumber)
        try container.encode(applicationExpirationDate, forKey: .applicationExpirationDate)
        try container.encode(currencyCode, forKey: .currencyCode)
        try container.encode(transactionAmount, forKey: .transactionAmount)
        try container.encodeIfPresent(cardholderName, forKey: .cardholderName)
        try container.encode(deviceManufacturerIdentifier, forKey: .deviceManufacturerIdentifier)
        try container.encode(paymentDataType, forKey: .paymentDataType)
        var credentials = container.nestedContainer(keyedBy: CredentialKeys.self, forKey: .paymentData)
        switch self.credentials {
        case .threeDSecure(let cryptogram, let eci):
            try credentials.encode(cryptogram, forKey: .onlinePaymentCryptogram)
            try credentials.encodeIfPresent(eci, forKey: .eciIndicator)
        case .emv(let emv, let pin):
            try credentials.encode(emv, forKey: .emvData)
            try credentials.encodeIfPresent(pin, forKey: .encryptedPINData)
        }
        try container.encodeIfPresent(merchantTokenIdentifier, forKey: .merchantTokenIdentifier)
        try container.encodeIfPresent(merchantTokenMetadata, forKey: .merchantTokenMetadata)
        try container.encodeIfPresent(authenticationResponses, forKey: .authenticationResponses)
    }
}

extension JSONFieldReader {
    /// `paymentData` of a payload as ``PaymentTokenPayload/init(json:)`` reads it, with the `paymentDataType` it
    /// fits: a non-empty cryptogram (3DSecure) or EMV data (EMV), not both; nil for anything else.
    fileprivate mutating func paymentCredentials() throws -> (PaymentTokenPayload.Credentials?, String?) {
        var cryptogram: String?
        var eci: String?
        var emv: String?
        var pin: String?
        try object(keys: ["emvData", "eciIndicator", "encryptedPINData", "onlinePaymentCryptogram"]) { key, json in
            switch key {
            case 0: emv = try json.string()
            case 1: eci = try json.scalarText()?.text
            case 2: pin = try json.string()
            default: cryptogram = try json.string()
            }
        }
        switch (cryptogram, emv) {
        case (let cryptogram?, nil) where !cryptogram.isEmpty && pin == nil:
            return (.threeDSecure(onlinePaymentCryptogram: cryptogram, eciIndicator: eci), "3DSecure")
        case (nil, let emv?) where !emv.isEmpty && eci == nil:
            return (.emv(emvData: emv, encryptedPINData: pin), "EMV")
        default:
            return (nil, nil)
        }
    }
}

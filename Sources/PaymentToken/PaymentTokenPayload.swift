import ApplePay
import Foundation
import Foundations

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
        guard (12...19).contains(pan.utf8.count), pan.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw PaymentTokenPayload.malformed("applicationPrimaryAccountNumber is not 12 to 19 digits")
        }
        let expiry = try string("applicationExpirationDate")
        let expiryDigits = Array(expiry.utf8)
        guard expiryDigits.count == 6, expiryDigits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            (1...12).contains((Int(expiryDigits[2]) - 48) * 10 + Int(expiryDigits[3]) - 48)
        else {
            throw PaymentTokenPayload.malformed("applicationExpirationDate is not YYMMDD")
        }
        var currency: String
        switch fields["currencyCode"] {
        case .string(let text)?: currency = String(decoding: text, as: UTF8.self)
        case .number(let text)?: currency = text
        default: throw PaymentTokenPayload.malformed("currencyCode is missing")
        }
        if currency.utf8.count < 3, currency.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            currency = String(repeating: "0", count: 3 - currency.utf8.count) + currency
        }
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
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

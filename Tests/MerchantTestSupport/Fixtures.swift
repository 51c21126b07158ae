// Fixed values the merchant tests share: a fixed "now", test tokens and PANs, money, a silent logger.

import ApplePay
import Foundation
import Logging
import MerchantCore

/// 2030-01-30T12:00:00Z: a fixed "now" for coupon expiry and delivery dates.
public let fixedNow = Date(timeIntervalSince1970: 1_896_004_800)

/// A store configuration file: two teas in pounds, a London zone (the store configuration tests' sample).
public let sampleStoreConfiguration = """
    {
      "storeName": "Tiny Tea",
      "merchantIdentifier": "merchant.com.example.tea",
      "countryCode": "GB",
      "currencyCode": "GBP",
      "supportedNetworks": ["visa", "masterCard"],
      "products": [
        {"sku": "TEA-1", "name": "Earl Grey", "price": "4.20", "currencyCode": "GBP"},
        {"sku": "TEA-2", "name": "Assam", "price": 3.5, "currencyCode": "GBP"}
      ],
      "shippingZones": [
        {"identifier": "london", "countries": ["GB"], "postalCodePrefixes": ["SW", "EC"],
         "methods": [{"identifier": "courier", "label": "Courier", "amount": "6.00",
                      "deliveryEstimate": {"minimumDays": 0, "maximumDays": 1}}],
         "taxRate": "0.2"},
        {"identifier": "uk", "countries": ["GB"],
         "methods": [{"identifier": "post", "label": "Royal Mail", "detail": "2–3 days", "amount": "3"}],
         "taxRate": "0.2"}
      ],
      "coupons": [
        {"code": "TEA5", "kind": "fixed", "value": "5", "minimumTotal": "20", "expiresAt": "2031-01-01T00:00:00Z"}
      ],
      "paymentMethodFees": [{"type": "credit", "label": "Card fee", "percent": "2"}],
      "domainAssociation": "abc",
      "merchantValidation": {"gatewayBaseURL": "https://127.0.0.1:8443", "domain": "tea.example"},
      "processor": {"timeoutSeconds": 2.5}
    }
    """

/// A device token with this PAN (16 digits), a 3-D Secure cryptogram and ECI 07.
public func testToken(pan: String = "4817499999010019", network: String = "Visa") -> NetworkToken {
    NetworkToken(
        primaryAccountNumber: pan, expirationDate: "301231",
        authentication: .threeDSecure(cryptogram: Data("CRYPTOGRAM-SECRET-BYTES".utf8), eciIndicator: "07"),
        network: network)
}

/// `amount` minor units of US dollars.
public func usd(_ amount: Int64) -> Money { Money(minorUnits: amount, currency: .usDollar) }

/// A Luhn-valid Visa-like PAN ending in `suffix`, for the sandbox processor's test triggers.
public func testPAN(endingIn suffix: String) -> String {
    for digit in 0...9 {
        let pan = "476112001\(digit)00" + suffix
        let sum = pan.reversed().enumerated().reduce(0) { total, pair in
            let value = Int(String(pair.element)) ?? 0
            return total + (pair.offset % 2 == 1 ? (value * 2 > 9 ? value * 2 - 9 : value * 2) : value)
        }
        if sum % 10 == 0 { return pan }
    }
    return ""
}

extension Logger {
    /// Writes nothing.
    public static let silent = Logger(label: "applepay.silent") { _ in SwiftLogNoOpLogHandler() }
}

/// A test's own failure, with what went wrong.
public struct HarnessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Optional {
    public func orThrow(_ message: String) throws -> Wrapped {
        guard let self else { throw HarnessError(message) }
        return self
    }
}

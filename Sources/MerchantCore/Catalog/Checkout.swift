import ApplePay
import Foundation
import Foundations

/// One customer's checkout: what they buy and what they chose on the sheet so far.
///
/// A value type: the HTTP layer loads it from the ``OrderStore``, applies the sheet's event with one of the
/// `selecting…`/`applying…` methods, saves it, and prices it with ``CheckoutPricing``. It never holds the full
/// contact: only the redacted address the sheet sends before authorization.
public struct Checkout: Codable, Sendable, Equatable {
    /// `chk_` followed by 24 random hexadecimal digits.
    public var id: String
    /// Products and quantities, in the order the customer added them.
    public var items: [CheckoutItem]
    /// The store's currency at creation time (`currencyCode` in the stored JSON).
    public var currency: Currency
    /// ``currency``'s ISO 4217 alphabetic code.
    public var currencyCode: String { currency.code }
    /// The redacted shipping address from the last `shippingcontactselected` event, if any.
    public var shippingAddress: ShippingAddress?
    /// The shipping method the customer picked; `nil` means the zone's first method.
    public var shippingMethodIdentifier: String?
    /// The coupon code last entered (kept even when invalid, so that the error persists until fixed).
    public var couponCode: String?
    /// Payment method type from `paymentmethodselected` (`credit`, `debit`, `prepaid`, `store`).
    public var paymentMethodType: String?
    /// Network from `paymentmethodselected` (`Visa`, `MasterCard`, ...).
    public var paymentMethodNetwork: String?
    /// The base64 `applicationData` of this checkout's payment request; its SHA-256 comes back in the token
    /// header, which binds the token to this checkout. Decoded it reads `checkout:<id>:<nonce>`.
    public var applicationData: String
    /// When the checkout was created.
    public var createdAt: Date
    /// A plan checkout: the card details of each token sent to pay it, keyed by the token's `transactionId`,
    /// recorded before the charge (see ``PlanPaymentMethod``). Never shown to the client.
    public var planPaymentMethods: [String: PlanPaymentMethod]?
    /// A plan checkout: the secret of the subscription it starts, made with the checkout, so that the
    /// `managementURL` its payment request gives Apple (``PlanPricing/managementURL(for:)``) opens the subscription's
    /// page. Never shown to the client before the payment answer.
    public var subscriptionSecret: String?
    /// The checkout's client secret: the key to every route under `/v1/checkouts/{id}` (its `Checkout-Secret`
    /// header), given once, in the creation answer, and distinct from ``subscriptionSecret``. The id alone (it is in
    /// every log line) opens nothing. `nil` for a checkout stored before checkouts had one: it refuses every
    /// secret (``acceptsClientSecret(_:)``), as a secret it never had cannot be told apart from a guess.
    public var clientSecret: String?

    public init(
        id: String, items: [CheckoutItem], currency: Currency, shippingAddress: ShippingAddress? = nil,
        shippingMethodIdentifier: String? = nil, couponCode: String? = nil, paymentMethodType: String? = nil,
        paymentMethodNetwork: String? = nil, applicationData: String, createdAt: Date
    ) {
        self.id = id
        self.items = items
        self.currency = currency
        self.shippingAddress = shippingAddress
        self.shippingMethodIdentifier = shippingMethodIdentifier
        self.couponCode = couponCode
        self.paymentMethodType = paymentMethodType
        self.paymentMethodNetwork = paymentMethodNetwork
        self.applicationData = applicationData
        self.createdAt = createdAt
    }

    private enum CodingKeys: String, CodingKey {
        case id, items
        case currency = "currencyCode"
        case shippingAddress, shippingMethodIdentifier, couponCode, paymentMethodType, paymentMethodNetwork
        case applicationData, createdAt, planPaymentMethods, subscriptionSecret, clientSecret
    }

    /// Whether `secret` is this checkout's ``clientSecret``, compared in constant time. A checkout without one
    /// (stored before checkouts had secrets) accepts none, and no checkout accepts a missing or empty secret.
    public func acceptsClientSecret(_ secret: String?) -> Bool {
        guard let secret, let clientSecret else { return false }
        return constantTimeEqual(secret, clientSecret)
    }

    /// Starts a checkout for catalog items: checks every SKU and quantity, merges repeated SKUs, and makes a
    /// fresh id, ``clientSecret`` and `applicationData` nonce.
    /// - Parameters:
    ///   - items: what the customer buys; 1 to 100 lines, quantities 1 to 999.
    ///   - configuration: the store (catalog, currency).
    ///   - now: creation time.
    /// - Throws: ``CheckoutError`` `emptyCheckout`, `unknownProduct` or `invalidQuantity`.
    public static func create(
        items: [CheckoutItem], configuration: StoreConfiguration, now: Date = Date()
    ) throws(CheckoutError) -> Checkout {
        guard !items.isEmpty, items.count <= 100 else {
            throw CheckoutError(.emptyCheckout, "a checkout needs 1 to 100 items")
        }
        var merged: [CheckoutItem] = []
        for item in items {
            guard configuration.product(sku: item.sku) != nil else {
                throw CheckoutError(.unknownProduct, "no product with SKU \"\(item.sku)\"")
            }
            guard (1...999).contains(item.quantity) else {
                throw CheckoutError(.invalidQuantity, "quantity of \(item.sku) must be 1 to 999")
            }
            if let index = merged.firstIndex(where: { $0.sku == item.sku }) {
                merged[index].quantity += item.quantity
                guard merged[index].quantity <= 999 else {
                    throw CheckoutError(.invalidQuantity, "quantity of \(item.sku) must be 1 to 999")
                }
            } else {
                merged.append(item)
            }
        }
        if merged.contains(where: { configuration.product(sku: $0.sku)?.plan != nil }),
            merged.count != 1 || merged[0].quantity != 1
        {
            throw CheckoutError(
                .planNotAlone,
                "a product with a billing plan is bought alone, quantity 1: one plan per checkout, as Apple requires")
        }
        let id = "chk_" + timeOrderedHex(milliseconds: now.unixMilliseconds)
        let applicationData = Data("checkout:\(id):\(randomHex(bytes: 16))".utf8).base64EncodedString()
        var checkout = Checkout(
            id: id, items: merged, currency: configuration.currency, applicationData: applicationData,
            createdAt: now)
        checkout.clientSecret = randomHex(bytes: 16)
        if configuration.product(sku: merged[0].sku)?.plan != nil { checkout.subscriptionSecret = randomHex(bytes: 16) }
        return checkout
    }

    /// The checkout after a `shippingcontactselected` event: the address replaces the previous one; a shipping
    /// method the new address's zone does not offer is dropped (the zone's first method then applies).
    public func selectingShippingContact(_ address: ShippingAddress, configuration: StoreConfiguration) -> Checkout {
        var copy = self
        copy.shippingAddress = address
        if let method = shippingMethodIdentifier {
            let zone = configuration.shippingZones.first { $0.covers(address) }
            if zone?.methods.contains(where: { $0.identifier == method }) != true {
                copy.shippingMethodIdentifier = nil
            }
        }
        return copy
    }

    /// The checkout after a `shippingmethodselected` event.
    /// - Throws: ``CheckoutError`` `unknownShippingMethod` when the method is not offered for the current address
    ///   (or, before an address, in the store's home zone).
    public func selectingShippingMethod(
        _ identifier: String, configuration: StoreConfiguration
    ) throws(CheckoutError) -> Checkout {
        let pricing = CheckoutPricing(configuration: configuration)
        guard let zone = pricing.zone(for: self),
            zone.methods.contains(where: { $0.identifier == identifier })
        else {
            throw CheckoutError(
                .unknownShippingMethod, "shipping method \"\(identifier)\" is not offered for this address")
        }
        var copy = self
        copy.shippingMethodIdentifier = identifier
        return copy
    }

    /// The checkout after a `couponcodechanged` event; an empty code removes the coupon. Whether the code is
    /// valid is decided when pricing (the answer then carries `couponCodeInvalid` / `couponCodeExpired`).
    public func applyingCoupon(_ code: String?) -> Checkout {
        var copy = self
        let trimmed = code?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        copy.couponCode = trimmed.isEmpty ? nil : trimmed
        return copy
    }

    /// The checkout after a `paymentmethodselected` event (`type`: credit, debit, prepaid, store; `network`).
    public func selectingPaymentMethod(type: String?, network: String?) -> Checkout {
        var copy = self
        copy.paymentMethodType = type
        copy.paymentMethodNetwork = network
        return copy
    }

    /// The byte strings whose SHA-256 the token header may carry as `applicationData`: Apple does not say
    /// whether Apple Pay JS hashes the base64 text or the decoded bytes, so both are accepted.
    public var applicationDataCandidates: [Data] {
        var candidates = [Data(applicationData.utf8)]
        if let decoded = Data(base64Encoded: applicationData) { candidates.append(decoded) }
        return candidates
    }
}

extension Checkout: CustomStringConvertible, CustomReflectable {
    /// The id and what is bought: never ``clientSecret`` nor ``subscriptionSecret``.
    public var description: String {
        "Checkout(\(id), \(items.map { "\($0.quantity) × \($0.sku)" }.joined(separator: ", ")))"
    }

    /// `dump` and debuggers see every field but the two secrets, which show only whether they are set.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "items": items, "currencyCode": currencyCode, "shippingAddress": shippingAddress as Any,
                "shippingMethodIdentifier": shippingMethodIdentifier as Any, "couponCode": couponCode as Any,
                "paymentMethodType": paymentMethodType as Any, "paymentMethodNetwork": paymentMethodNetwork as Any,
                "applicationData": applicationData, "createdAt": createdAt,
                "planPaymentMethods": planPaymentMethods as Any, "hasClientSecret": clientSecret != nil,
                "hasSubscriptionSecret": subscriptionSecret != nil,
            ])
    }
}

/// A product and quantity in a checkout (`{"sku", "quantity"}` in the API).
public struct CheckoutItem: Codable, Sendable, Equatable {
    public var sku: String
    public var quantity: Int

    public init(sku: String, quantity: Int) {
        self.sku = sku
        self.quantity = quantity
    }
}

/// The redacted shipping address the sheet sends before authorization (Apple Pay JS `ApplePayPaymentContact`
/// subset: locality, administrative area, postal code, country). Unknown fields in the JSON are ignored, so a
/// full contact decodes too, but only these fields are kept.
public struct ShippingAddress: Codable, Sendable, Equatable {
    public var locality: String?
    public var subAdministrativeArea: String?
    public var administrativeArea: String?
    public var postalCode: String?
    public var country: String?
    /// ISO 3166-1 alpha-2, the field zones match on.
    public var countryCode: String?

    public init(
        locality: String? = nil, subAdministrativeArea: String? = nil, administrativeArea: String? = nil,
        postalCode: String? = nil, country: String? = nil, countryCode: String? = nil
    ) {
        self.locality = locality
        self.subAdministrativeArea = subAdministrativeArea
        self.administrativeArea = administrativeArea
        self.postalCode = postalCode
        self.country = country
        self.countryCode = countryCode
    }
}

extension ShippingAddress {
    /// Keeps only the redacted fields of an Apple Pay contact (street, names, phone and email are dropped).
    public init(redacting contact: Contact) {
        self.init(
            locality: contact.locality, subAdministrativeArea: contact.subAdministrativeArea,
            administrativeArea: contact.administrativeArea, postalCode: contact.postalCode, country: contact.country,
            countryCode: contact.countryCode)
    }
}

/// The domain of ``CheckoutError``: its codes are ``ErrorCode`` of it.
public enum CheckoutErrorDomain {}

/// A checkout request that cannot be honoured (HTTP 400 / 404 territory), with a stable code
/// (``CheckoutError.Code``).
public typealias CheckoutError = CodedFailure<CheckoutErrorDomain>

/// The stable codes of ``CheckoutError``.
extension ErrorCode<CheckoutError> {
    /// No items, or more than 100.
    public static var emptyCheckout: Self { Self("emptyCheckout") }
    /// A SKU the catalog does not have.
    public static var unknownProduct: Self { Self("unknownProduct") }
    /// A quantity outside 1...999.
    public static var invalidQuantity: Self { Self("invalidQuantity") }
    /// A shipping method the address's zone does not offer.
    public static var unknownShippingMethod: Self { Self("unknownShippingMethod") }
    /// A product with a billing plan together with other items, or more than one of it.
    public static var planNotAlone: Self { Self("planNotAlone") }
    /// An amount too large for 64-bit minor units.
    public static var amountOverflow: Self { Self("amountOverflow") }
}

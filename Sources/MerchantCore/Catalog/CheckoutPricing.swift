import ApplePay
import Foundation
import Foundations

/// Prices a ``Checkout`` against a ``StoreConfiguration``: line items, shipping methods for the address, discount,
/// tax, total, and the Apple Pay JS errors the sheet must show.
///
/// The rules, in order:
/// 1. Items subtotal = Σ unit price × quantity.
/// 2. Zone: the first zone covering the shipping address; before the sheet sends an address, the store's
///    *home zone* (the first zone covering the store's country with no state or postal-code restriction), and
///    the tax line is then labelled "Estimated tax". An address no zone covers gets `addressUnserviceable`
///    (contact field `postalAddress`), no shipping methods, no shipping and no tax.
/// 3. Shipping: the selected method, else the zone's first.
/// 4. Coupon (ignoring case): unknown → `couponCodeInvalid`; past `expiresAt` by the injected clock →
///    `couponCodeExpired`; subtotal below `minimumTotal` → `couponCodeInvalid`. A percent coupon takes
///    round(subtotal × percent / 100); a fixed one at most the subtotal. Shown as a negative line item.
/// 5. Tax = round(taxable × zone rate) with taxable = subtotal − discount + shipping.
/// 6. Payment method fee: when the sheet reported a type with a configured fee, round(taxable × percent / 100),
///    not taxed.
/// 7. Total = taxable + tax + fee, labelled with the store name.
///
/// Arithmetic is in `Int64` minor units of the store currency; "round" is **half-up** (half away from zero)
/// to the currency's minor unit (0, 2 or 3 decimals). Nothing uses `Double`.
public struct CheckoutPricing: Sendable {
    /// The store being priced.
    public let configuration: StoreConfiguration
    /// The clock for coupon expiry and delivery dates; injectable for tests.
    public let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - configuration: the store.
    ///   - clock: returns "now"; defaults to the system clock.
    public init(configuration: StoreConfiguration, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.clock = clock
    }

    /// The store's home zone: the first covering its own country with no state or postal restriction.
    public var homeZone: ShippingZone? {
        configuration.shippingZones.first {
            $0.administrativeAreas.isEmpty && $0.postalCodePrefixes.isEmpty
                && $0.countries.contains { $0.uppercased() == configuration.countryCode.uppercased() }
        }
    }

    /// The zone that applies: the address's zone, the home zone before an address is known, `nil` when the
    /// address is unserviceable.
    public func zone(for checkout: Checkout) -> ShippingZone? {
        guard let address = checkout.shippingAddress else { return homeZone }
        return configuration.shippingZones.first { $0.covers(address) }
    }

    /// Prices the checkout.
    /// - Throws: ``CheckoutError`` `unknownProduct` if the catalog lost one of its SKUs, `amountOverflow` if a
    ///   sum does not fit in 64-bit minor units.
    public func price(_ checkout: Checkout) throws(CheckoutError) -> PriceBreakdown {
        let currency = configuration.currency
        if let (product, plan) = planProduct(of: checkout) { return try price(plan: plan, product: product) }
        func minor(_ amount: Decimal) throws(CheckoutError) -> Int64 {
            guard let value = Money(rounding: amount, currency: currency)?.minorUnits else {
                throw CheckoutError(.amountOverflow, "an amount does not fit in 64-bit minor units")
            }
            return value
        }
        func add(_ a: Int64, _ b: Int64) throws(CheckoutError) -> Int64 {
            let (sum, overflow) = a.addingReportingOverflow(b)
            if overflow { throw CheckoutError(.amountOverflow, "the total does not fit in 64-bit minor units") }
            return sum
        }

        var lines: [PricedLine] = []
        var subtotal: Int64 = 0
        for item in checkout.items {
            guard let product = configuration.product(sku: item.sku) else {
                throw CheckoutError(.unknownProduct, "no product with SKU \"\(item.sku)\"")
            }
            let (amount, overflow) = try minor(product.price).multipliedReportingOverflow(by: Int64(item.quantity))
            if overflow { throw CheckoutError(.amountOverflow, "the amount of \(item.sku) does not fit") }
            let label = item.quantity == 1 ? product.name : "\(product.name) × \(item.quantity)"
            lines.append(PricedLine(kind: .item, label: label, amount: amount, sku: item.sku, quantity: item.quantity))
            subtotal = try add(subtotal, amount)
        }

        var errors: [PaymentError] = []
        let zone = zone(for: checkout)
        if checkout.shippingAddress != nil, zone == nil {
            errors.append(
                PaymentError(
                    code: .addressUnserviceable, contactField: "postalAddress",
                    message: "We do not ship to this address."))
        }

        var discount: Int64 = 0
        var appliedCoupon: Coupon?
        if let code = checkout.couponCode {
            let coupon = configuration.coupons.first { $0.code.uppercased() == code.uppercased() }
            if let coupon {
                let minimum = try coupon.minimumTotal.map { value throws(CheckoutError) in try minor(value) }
                if let expiry = coupon.expiresAt, clock() > expiry {
                    errors.append(
                        PaymentError(code: .couponCodeExpired, message: "The coupon \(coupon.code) has expired."))
                } else if let minimum, subtotal < minimum {
                    errors.append(
                        PaymentError(
                            code: .couponCodeInvalid,
                            message:
                                "The coupon \(coupon.code) needs an order of at least \(Money(minorUnits: minimum, currency: currency))."
                        ))
                } else {
                    switch coupon.discount {
                    case .percent(let percent):
                        guard
                            let value = Money(minorUnits: subtotal, currency: currency).multiplied(by: percent / 100)?
                                .minorUnits
                        else {
                            throw CheckoutError(.amountOverflow, "the discount does not fit")
                        }
                        discount = min(value, subtotal)
                    case .fixed(let amount):
                        discount = min(try minor(amount), subtotal)
                    }
                    appliedCoupon = coupon
                }
            } else {
                errors.append(PaymentError(code: .couponCodeInvalid, message: "The coupon \(code) is not valid."))
            }
        }
        if let appliedCoupon, discount > 0 {
            lines.append(PricedLine(kind: .discount, label: appliedCoupon.label, amount: -discount))
        }

        var methods: [ShippingRate] = []
        var selected: ShippingRate?
        var shipping: Int64 = 0
        if let zone {
            selected = zone.methods.first { $0.identifier == checkout.shippingMethodIdentifier } ?? zone.methods.first
            if let selected {
                methods = [selected] + zone.methods.filter { $0.identifier != selected.identifier }
                shipping = try minor(selected.amount)
                lines.append(PricedLine(kind: .shipping, label: "Shipping: \(selected.label)", amount: shipping))
            }
        }

        let taxable = try add(subtotal - discount, shipping)
        var tax: Int64 = 0
        if let zone, zone.taxRate > 0 {
            guard let value = Money(minorUnits: taxable, currency: currency).multiplied(by: zone.taxRate)?.minorUnits
            else {
                throw CheckoutError(.amountOverflow, "the tax does not fit")
            }
            tax = value
            lines.append(
                PricedLine(kind: .tax, label: checkout.shippingAddress == nil ? "Estimated tax" : "Tax", amount: tax))
        }
        var fee: Int64 = 0
        if let type = checkout.paymentMethodType,
            let rule = configuration.paymentMethodFees.first(where: { $0.type == type })
        {
            guard
                let value = Money(minorUnits: taxable, currency: currency).multiplied(by: rule.percent / 100)?
                    .minorUnits
            else {
                throw CheckoutError(.amountOverflow, "the fee does not fit")
            }
            fee = value
            if fee > 0 { lines.append(PricedLine(kind: .fee, label: rule.label, amount: fee)) }
        }
        let total = try add(try add(taxable, tax), fee)

        return PriceBreakdown(
            currency: currency, totalLabel: configuration.storeName, lines: lines, subtotal: subtotal,
            discount: discount, shipping: shipping, tax: tax, fee: fee, total: total, zone: zone,
            shippingMethods: methods,
            selectedShippingMethod: selected, appliedCoupon: appliedCoupon, errors: errors, pricedAt: clock())
    }

    /// The Apple Pay JS `ApplePayPaymentRequest` for the checkout (the `paymentRequest` of `POST /v1/checkouts`
    /// and `GET /v1/checkouts/{id}`).
    ///
    /// `merchantCapabilities` always contains `supports3DS`; `supportsCouponCode` is true when the store has
    /// coupons; a coupon already on the checkout is sent as `couponCode` and is already applied to the totals.
    /// `lineItems`, `shippingMethods` and both contact-field lists are always present, empty or not.
    /// - Throws: ``CheckoutError`` as ``price(_:)``.
    public func paymentRequest(for checkout: Checkout) throws(CheckoutError) -> PaymentRequest {
        let breakdown = try price(checkout)
        if let (product, plan) = planProduct(of: checkout) {
            return planPaymentRequest(for: checkout, product: product, plan: plan, breakdown: breakdown)
        }
        var capabilities = configuration.merchantCapabilities.map(MerchantCapability.init(rawValue:))
        if !capabilities.contains(.supports3DS) { capabilities.insert(.supports3DS, at: 0) }
        var request = PaymentRequest(
            countryCode: configuration.countryCode, currencyCode: configuration.currencyCode,
            supportedNetworks: configuration.supportedNetworks.map(PaymentNetwork.init(rawValue:)),
            merchantCapabilities: MerchantCapabilities(capabilities), total: breakdown.webTotal,
            lineItems: breakdown.webLineItems)
        request.shippingMethods = breakdown.webShippingMethods
        request.shippingType = .shipping
        request.requiredShippingContactFields = configuration.requiredShippingContactFields.map(
            ContactField.init(rawValue:))
        request.requiredBillingContactFields = configuration.requiredBillingContactFields.map(
            ContactField.init(rawValue:))
        request.applicationData = checkout.applicationData
        request.supportsCouponCode = configuration.coupons.isEmpty ? nil : true
        request.couponCode = checkout.couponCode
        return request
    }

    /// The Apple Pay JS update dictionary answering a sheet event for the (already updated) checkout.
    ///
    /// `shippingContact` and `couponCode` answers carry `newShippingMethods` and `errors`; `paymentMethod`
    /// answers carry `errors`; `shippingMethod` answers carry only the totals.
    /// - Throws: ``CheckoutError`` as ``price(_:)``.
    public func update(for checkout: Checkout, after event: SheetEvent) throws(CheckoutError) -> SheetUpdate {
        let breakdown = try price(checkout)
        let total = breakdown.webTotal
        let lines = breakdown.webLineItems
        switch event {
        case .shippingContact:
            return .shippingContact(
                ShippingContactUpdate(
                    newTotal: total, newLineItems: lines, newShippingMethods: breakdown.webShippingMethods,
                    errors: breakdown.errors))
        case .couponCode:
            return .couponCode(
                CouponCodeUpdate(
                    newTotal: total, newLineItems: lines, newShippingMethods: breakdown.webShippingMethods,
                    errors: breakdown.errors))
        case .paymentMethod:
            return .paymentMethod(PaymentMethodUpdate(newTotal: total, newLineItems: lines, errors: breakdown.errors))
        case .shippingMethod:
            return .shippingMethod(ShippingMethodUpdate(newTotal: total, newLineItems: lines))
        }
    }
}

/// The merchant's answer to one sheet event: ApplePay's update dictionary for that event, encoded as the
/// dictionary itself (the body of the four `/v1/checkouts/{id}/...` update endpoints).
public enum SheetUpdate: PaymentRequestUpdate, Hashable, Encodable {
    case shippingContact(ShippingContactUpdate)
    case shippingMethod(ShippingMethodUpdate)
    case paymentMethod(PaymentMethodUpdate)
    case couponCode(CouponCodeUpdate)

    /// The wrapped update dictionary.
    public var dictionary: any PaymentRequestUpdate & Encodable {
        switch self {
        case .shippingContact(let update): update
        case .shippingMethod(let update): update
        case .paymentMethod(let update): update
        case .couponCode(let update): update
        }
    }

    /// The event this answers.
    public var event: SheetEvent {
        switch self {
        case .shippingContact: .shippingContact
        case .shippingMethod: .shippingMethod
        case .paymentMethod: .paymentMethod
        case .couponCode: .couponCode
        }
    }

    public var newTotal: PaymentSummaryItem? { dictionary.newTotal }
    public var newLineItems: [PaymentSummaryItem]? { dictionary.newLineItems }
    public var newShippingMethods: [ShippingMethod]? { dictionary.newShippingMethods }
    public var newRecurringPaymentRequest: RecurringPaymentRequest? { dictionary.newRecurringPaymentRequest }
    public var newAutomaticReloadPaymentRequest: AutomaticReloadPaymentRequest? {
        dictionary.newAutomaticReloadPaymentRequest
    }
    public var newDeferredPaymentRequest: DeferredPaymentRequest? { dictionary.newDeferredPaymentRequest }
    public var newMultiTokenContexts: [PaymentTokenContext]? { dictionary.newMultiTokenContexts }
    public var errors: [PaymentError]? { dictionary.errors }

    public func encode(to encoder: any Encoder) throws { try dictionary.encode(to: encoder) }
}

/// The sheet events a checkout answers with an update dictionary.
public enum SheetEvent: String, Sendable, CaseIterable {
    case shippingContact, shippingMethod, paymentMethod, couponCode
}

/// One line of a priced checkout, in minor units.
public struct PricedLine: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case item, discount, shipping, tax, fee }
    public var kind: Kind
    public var label: String
    /// Minor units; negative for the discount.
    public var amount: Int64
    /// For items: the product and quantity.
    public var sku: String?
    public var quantity: Int?

    public init(kind: Kind, label: String, amount: Int64, sku: String? = nil, quantity: Int? = nil) {
        self.kind = kind
        self.label = label
        self.amount = amount
        self.sku = sku
        self.quantity = quantity
    }
}

/// The result of pricing a checkout. All amounts are minor units of ``currency``.
public struct PriceBreakdown: Sendable, Equatable {
    public var currency: Currency
    /// ``currency``'s ISO 4217 alphabetic code.
    public var currencyCode: String { currency.code }
    /// The store name: label of the total.
    public var totalLabel: String
    /// Items, then the discount, shipping, tax and fee lines (Apple Pay JS `lineItems` order).
    public var lines: [PricedLine]
    public var subtotal: Int64
    /// Positive amount taken off (shown as a negative line).
    public var discount: Int64
    public var shipping: Int64
    public var tax: Int64
    /// Payment method surcharge (0 when none applies).
    public var fee: Int64
    public var total: Int64
    /// The zone applied; `nil` when unserviceable (or the store has no home zone and no address yet).
    public var zone: ShippingZone?
    /// Methods offered, the selected one first (Apple Pay JS treats the first as the default).
    public var shippingMethods: [ShippingRate]
    public var selectedShippingMethod: ShippingRate?
    public var appliedCoupon: Coupon?
    /// Errors for the sheet, most severe first; a checkout with errors must not be paid.
    public var errors: [PaymentError]
    /// The clock reading used (delivery dates count from it).
    public var pricedAt: Date
    /// The billing plan of a plan checkout (nothing shipped, no tax, no coupon; the total is what is due now).
    public var plan: BillingPlan? = nil

    /// Whether the checkout can be paid as priced: no errors and a serviceable zone (plans ship nothing).
    public var isPayable: Bool { errors.isEmpty && (zone != nil || plan != nil) }

    /// The Apple Pay JS `total` (`{label, amount, type: "final"}`).
    public var webTotal: PaymentSummaryItem {
        PaymentSummaryItem(
            label: totalLabel, amount: Money(minorUnits: total, currency: currency).amountString, type: .final)
    }

    /// The Apple Pay JS `lineItems`.
    public var webLineItems: [PaymentSummaryItem] {
        lines.map {
            PaymentSummaryItem(
                label: $0.label, amount: Money(minorUnits: $0.amount, currency: currency).amountString, type: .final)
        }
    }

    /// The Apple Pay JS `shippingMethods`, with `dateComponentsRange` counted from ``pricedAt`` (UTC days).
    public var webShippingMethods: [ShippingMethod] {
        shippingMethods.map { method in
            ShippingMethod(
                label: method.label, detail: method.detail,
                amount: (Money(rounding: method.amount, currency: currency) ?? .zero(currency)).amountString,
                identifier: method.identifier,
                dateComponentsRange: method.deliveryEstimate.map {
                    DateComponentsRange(
                        startDateComponents: .init(date: pricedAt, addingDays: $0.minimumDays),
                        endDateComponents: .init(date: pricedAt, addingDays: $0.maximumDays))
                })
        }
    }
}

extension DateComponentsRange.DateComponents {
    /// The UTC calendar day `days` after `date`.
    init(date: Date, addingDays days: Int) {
        let day = CivilDay(date).adding(days: days)
        self.init(years: day.year, months: day.month, days: day.day)
    }
}

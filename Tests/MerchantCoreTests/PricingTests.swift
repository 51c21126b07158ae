import ApplePay
import Foundation
import Foundations
import MerchantTestSupport
import Testing

@testable import MerchantCore

private func decimal(_ text: String) -> Decimal { Decimal(string: text) ?? .nan }

/// A one-product, one-zone store in `currency` with `price` and `rate`, for rounding checks.
private func tinyStore(currency: String, price: String, rate: String) -> StoreConfiguration {
    StoreConfiguration(
        storeName: "Tiny", merchantIdentifier: "merchant.tiny", countryCode: "US", currencyCode: currency,
        supportedNetworks: ["visa"],
        products: [Product(sku: "P", name: "Thing", price: decimal(price), currencyCode: currency)],
        shippingZones: [
            ShippingZone(
                identifier: "all", name: "All", countries: ["US"],
                methods: [ShippingRate(identifier: "free", label: "Free", detail: "", amount: 0)],
                taxRate: decimal(rate))
        ])
}

@Suite("Checkout pricing")
struct PricingTests {
    let demo = StoreConfiguration.demo
    let pricing = CheckoutPricing(configuration: .demo, clock: { fixedNow })

    func demoCheckout() throws -> Checkout {
        try Checkout.create(
            items: [CheckoutItem(sku: "COFFEE-250", quantity: 2), CheckoutItem(sku: "MUG-01", quantity: 1)],
            configuration: demo, now: fixedNow)
    }

    @Test("before an address: home zone, first method, estimated tax (half-up)")
    func initialPrice() throws {
        let breakdown = try pricing.price(try demoCheckout())
        #expect(breakdown.subtotal == 4100)
        #expect(breakdown.shipping == 499)
        #expect(breakdown.tax == 230)  // 45.99 × 5% = 2.2995
        #expect(breakdown.total == 4829)
        #expect(
            breakdown.lines.map(\.label) == [
                "House Blend 250 g × 2", "Enamel Mug", "Shipping: Standard", "Estimated tax",
            ])
        #expect(
            breakdown.webTotal == PaymentSummaryItem(label: "Example Coffee Roasters", amount: "48.29", type: .final))
        #expect(breakdown.webLineItems.map(\.amount) == ["29.00", "12.00", "4.99", "2.30"])
        #expect(breakdown.shippingMethods.map(\.identifier) == ["standard", "express", "free"])
        #expect(breakdown.errors.isEmpty)
        #expect(breakdown.isPayable)
    }

    @Test("a state zone before the country zone: California's rate applies")
    func stateZone() throws {
        let checkout = try demoCheckout().selectingShippingContact(
            ShippingAddress(
                locality: "San Francisco", administrativeArea: "CA", postalCode: "94107", countryCode: "US"),
            configuration: demo)
        let breakdown = try pricing.price(checkout)
        #expect(breakdown.zone?.identifier == "us-ca")
        #expect(breakdown.tax == 333)  // 45.99 × 7.25% = 3.334275
        #expect(breakdown.total == 4932)
        #expect(breakdown.lines.last?.label == "Tax")
    }

    @Test("an address no zone covers is unserviceable: error, no methods, no shipping or tax")
    func unserviceable() throws {
        let checkout = try demoCheckout().selectingShippingContact(
            ShippingAddress(locality: "Paris", postalCode: "75001", countryCode: "FR"), configuration: demo)
        let breakdown = try pricing.price(checkout)
        #expect(
            breakdown.errors == [
                PaymentError(
                    code: .addressUnserviceable, contactField: "postalAddress",
                    message: breakdown.errors.first?.message ?? "")
            ])
        #expect(breakdown.shippingMethods.isEmpty)
        #expect(breakdown.shipping == 0 && breakdown.tax == 0)
        #expect(breakdown.total == 4100)
        #expect(!breakdown.isPayable)
        let update = try pricing.update(for: checkout, after: .shippingContact)
        #expect(update.errors?.map(\.code) == [.addressUnserviceable])
        #expect(update.newShippingMethods == [])
    }

    @Test("choosing a method; a method the new address's zone lacks falls back to the zone's first")
    func shippingMethods() throws {
        let express = try demoCheckout().selectingShippingMethod("express", configuration: demo)
        let breakdown = try pricing.price(express)
        #expect(breakdown.shipping == 1499)
        #expect(breakdown.shippingMethods.first?.identifier == "express")
        let error = #expect(throws: CheckoutError.self) {
            try demoCheckout().selectingShippingMethod("teleport", configuration: demo)
        }
        #expect(error?.code == .unknownShippingMethod)
        let abroad = express.selectingShippingContact(ShippingAddress(countryCode: "CA"), configuration: demo)
        #expect(abroad.shippingMethodIdentifier == nil)
        #expect(try pricing.price(abroad).shipping == 1900)
        let california = express.selectingShippingContact(
            ShippingAddress(administrativeArea: "CA", countryCode: "US"), configuration: demo)
        #expect(california.shippingMethodIdentifier == "express")
    }

    @Test("coupons: percent, fixed with minimum, case-insensitive, unknown and below-minimum invalid")
    func coupons() throws {
        let checkout = try demoCheckout()
        let welcome = try pricing.price(checkout.applyingCoupon("welcome10"))
        #expect(welcome.discount == 410)
        #expect(welcome.lines.contains(PricedLine(kind: .discount, label: "Welcome 10% off", amount: -410)))
        #expect(
            welcome.webLineItems.contains(PaymentSummaryItem(label: "Welcome 10% off", amount: "-4.10", type: .final)))
        #expect(welcome.tax == 209)  // (41.00 − 4.10 + 4.99) × 5% = 2.0945
        #expect(welcome.total == 4100 - 410 + 499 + 209)

        let five = try pricing.price(checkout.applyingCoupon("FIVEOFF"))
        #expect(five.discount == 500)

        let small = try Checkout.create(items: [CheckoutItem(sku: "MUG-01", quantity: 1)], configuration: demo)
        let belowMinimum = try pricing.price(small.applyingCoupon("FIVEOFF"))
        #expect(belowMinimum.errors.map(\.code) == [.couponCodeInvalid])
        #expect(belowMinimum.discount == 0)

        let unknown = try pricing.price(checkout.applyingCoupon("FREESTUFF"))
        #expect(unknown.errors.map(\.code) == [.couponCodeInvalid])
        #expect(unknown.total == 4829)

        let removed = checkout.applyingCoupon("FREESTUFF").applyingCoupon("  ")
        #expect(removed.couponCode == nil)
        #expect(try pricing.price(removed).errors.isEmpty)
    }

    @Test("coupon expiry follows the injected clock")
    func couponExpiry() throws {
        var store = tinyStore(currency: "USD", price: "100", rate: "0")
        let expiry = fixedNow.addingTimeInterval(3600)
        store.coupons = [Coupon(code: "SOON", discount: .percent(25), expiresAt: expiry)]
        let checkout = try Checkout.create(items: [CheckoutItem(sku: "P", quantity: 1)], configuration: store)
            .applyingCoupon("SOON")
        let before = try CheckoutPricing(configuration: store, clock: { expiry.addingTimeInterval(-1) }).price(checkout)
        #expect(before.discount == 2500 && before.errors.isEmpty)
        let after = try CheckoutPricing(configuration: store, clock: { expiry.addingTimeInterval(1) }).price(checkout)
        #expect(after.discount == 0)
        #expect(after.errors.map(\.code) == [.couponCodeExpired])
        // The demo's SPRING2020 expired long ago.
        #expect(
            try pricing.price(try demoCheckout().applyingCoupon("SPRING2020")).errors.map(\.code) == [
                .couponCodeExpired
            ])
    }

    @Test("a payment method fee applies to its type only, is not taxed, and follows the sheet's selection")
    func paymentMethodFee() throws {
        var store = demo
        store.paymentMethodFees = [
            PaymentMethodFee(type: "credit", label: "Credit card surcharge", percent: decimal("1.5"))
        ]
        try store.validate()
        let pricing = CheckoutPricing(configuration: store, clock: { fixedNow })
        let credit = try demoCheckout().selectingPaymentMethod(type: "credit", network: "Visa")
        let breakdown = try pricing.price(credit)
        #expect(breakdown.fee == 69)  // 45.99 × 1.5% = 0.68985
        #expect(breakdown.tax == 230)
        #expect(breakdown.total == 4829 + 69)
        #expect(breakdown.lines.last == PricedLine(kind: .fee, label: "Credit card surcharge", amount: 69))
        let debit = try pricing.price(credit.selectingPaymentMethod(type: "debit", network: "Visa"))
        #expect(debit.fee == 0 && debit.total == 4829)
        let update = try pricing.update(for: credit, after: .paymentMethod)
        #expect(update.newTotal?.amount == "48.98")
    }

    @Test("a fixed coupon larger than the items takes at most the items' price")
    func fixedCouponCap() throws {
        var store = tinyStore(currency: "USD", price: "3.00", rate: "0.1")
        store.coupons = [Coupon(code: "BIG", discount: .fixed(10))]
        let breakdown = try CheckoutPricing(configuration: store).price(
            try Checkout.create(items: [CheckoutItem(sku: "P", quantity: 1)], configuration: store).applyingCoupon(
                "BIG"))
        #expect(breakdown.discount == 300)
        #expect(breakdown.tax == 0)
        #expect(breakdown.total == 0)
        #expect(breakdown.webTotal.amount == "0.00")
    }

    @Test(
        "tax rounds half-up to the currency's minor unit (0, 2 and 3 decimals)",
        arguments: [
            // currency, unit price, rate, quantity, expected tax (minor units), expected total string
            ("USD", "0.25", "0.1", 1, 3 as Int64, "0.28"),  // 2.5 cents → 3 (half-even would give 2)
            ("USD", "0.35", "0.1", 1, 4, "0.39"),  // 3.5 cents → 4
            ("USD", "19.99", "0.0825", 3, 495, "64.92"),  // 4.947525 → 4.95
            ("JPY", "1235", "0.1", 1, 124, "1359"),  // 123.5 yen → 124
            ("JPY", "1234", "0.1", 1, 123, "1357"),  // 123.4 yen → 123
            ("KWD", "1.234", "0.05", 1, 62, "1.296"),  // 61.7 fils → 62
            ("BHD", "0.010", "0.05", 1, 1, "0.011"),  // 0.5 fils → 1
        ])
    func taxRounding(currency: String, price: String, rate: String, quantity: Int, tax: Int64, total: String) throws {
        let store = tinyStore(currency: currency, price: price, rate: rate)
        try store.validate()
        let checkout = try Checkout.create(items: [CheckoutItem(sku: "P", quantity: quantity)], configuration: store)
        let breakdown = try CheckoutPricing(configuration: store).price(checkout)
        #expect(breakdown.tax == tax)
        #expect(breakdown.webTotal.amount == total)
    }

    @Test("the payment request follows Apple's rules (checked by the ApplePay validator)")
    func paymentRequest() throws {
        let checkout = try demoCheckout()
        let request = try pricing.paymentRequest(for: checkout)
        #expect(request.merchantCapabilities.values.first == "supports3DS")
        #expect(request.total.label == "Example Coffee Roasters")
        #expect(request.supportsCouponCode == true)
        #expect(request.requiredShippingContactFields?.contains("postalAddress") == true)
        let applicationData = try #require(request.applicationData)
        let decoded = String(decoding: try #require(Data(base64Encoded: applicationData)), as: UTF8.self)
        #expect(decoded.hasPrefix("checkout:\(checkout.id):"))
        #expect(checkout.applicationDataCandidates.count == 2)
        // Dates: standard is 3–5 days from 2030-01-30.
        let standard = try #require(request.shippingMethods?.first)
        typealias Day = DateComponentsRange.DateComponents
        #expect(standard.dateComponentsRange?.startDateComponents == Day(years: 2030, months: 2, days: 2))
        #expect(standard.dateComponentsRange?.endDateComponents == Day(years: 2030, months: 2, days: 4))

        let json = try JSONEncoder().encode(request)
        let problems = try PaymentRequest.problems(decodingJSON: json)
        #expect(problems.filter { $0.severity == .error } == [], "\(problems)")

        // A store without supports3DS in its configuration still asks for it.
        var store = demo
        store.merchantCapabilities = ["supportsDebit"]
        let forced = try CheckoutPricing(configuration: store).paymentRequest(for: checkout)
        #expect(forced.merchantCapabilities == ["supports3DS", "supportsDebit"])
    }

    @Test("update dictionaries carry only the fields of their event")
    func updates() throws {
        let checkout = try demoCheckout().applyingCoupon("NOPE")
        let encoder = JSONEncoder()
        func keys(_ event: SheetEvent) throws -> Set<String> {
            let data = try encoder.encode(try pricing.update(for: checkout, after: event))
            return Set((try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]).keys)
        }
        #expect(try keys(.shippingContact) == ["newTotal", "newLineItems", "newShippingMethods", "errors"])
        #expect(try keys(.couponCode) == ["newTotal", "newLineItems", "newShippingMethods", "errors"])
        #expect(try keys(.paymentMethod) == ["newTotal", "newLineItems", "errors"])
        #expect(try keys(.shippingMethod) == ["newTotal", "newLineItems"])
        let update = try pricing.update(for: checkout, after: .couponCode)
        #expect(update.errors?.map(\.code) == [.couponCodeInvalid])
    }

    @Test("creating a checkout checks SKUs and quantities and merges repeated SKUs")
    func creation() throws {
        func code(_ items: [CheckoutItem]) -> CheckoutError.Code? {
            #expect(throws: CheckoutError.self) { try Checkout.create(items: items, configuration: demo) }?.code
        }
        #expect(code([]) == .emptyCheckout)
        #expect(code([CheckoutItem(sku: "NOPE", quantity: 1)]) == .unknownProduct)
        #expect(code([CheckoutItem(sku: "MUG-01", quantity: 0)]) == .invalidQuantity)
        #expect(code([CheckoutItem(sku: "MUG-01", quantity: 1000)]) == .invalidQuantity)
        #expect(
            code([CheckoutItem(sku: "MUG-01", quantity: 600), CheckoutItem(sku: "MUG-01", quantity: 600)])
                == .invalidQuantity)
        let merged = try Checkout.create(
            items: [CheckoutItem(sku: "MUG-01", quantity: 1), CheckoutItem(sku: "MUG-01", quantity: 2)],
            configuration: demo)
        #expect(merged.items == [CheckoutItem(sku: "MUG-01", quantity: 3)])
        #expect(merged.id.hasPrefix("chk_") && merged.id.count == 28)
        let other = try Checkout.create(items: merged.items, configuration: demo)
        #expect(other.id != merged.id && other.applicationData != merged.applicationData)
    }
}

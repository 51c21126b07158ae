import ApplePay
import Foundation
import JSONCoding
import Testing

@testable import MerchantHTTP

/// A checkout's answer written without Codable: the bytes SortedJSONEncoder writes, or left to it.
@Suite("PaymentRequestJSON: the checkout answer without Codable")
struct PaymentRequestJSONTests {
    struct Answer: Encodable {
        var id: String
        var clientSecret: String?
        var paymentRequest: PaymentRequest
    }

    static func request() -> PaymentRequest {
        var request = PaymentRequest(
            countryCode: "US", currencyCode: "USD", supportedNetworks: [.visa, .masterCard, "newNetwork"],
            merchantCapabilities: [.supports3DS, .supportsDebit],
            total: PaymentSummaryItem(label: "Example \"Coffee\" / Roasters", amount: "60.05"),
            lineItems: [
                PaymentSummaryItem(label: "Subtotal", amount: "50.00"),
                PaymentSummaryItem(label: "Shipping — é", amount: nil, type: .pending),
            ])
        request.shippingMethods = [
            ShippingMethod(label: "Standard", detail: "3 to 5 days", amount: "5.00", identifier: "standard"),
            ShippingMethod(label: "Pickup", amount: "0.00", identifier: "pickup"),
            ShippingMethod(
                label: "Express", amount: "14.99", identifier: "express",
                dateComponentsRange: DateComponentsRange(
                    startDateComponents: .init(years: 2026, months: 12, days: 3),
                    endDateComponents: .init(months: 1, days: 4, hours: 12))),
        ]
        request.shippingType = .shipping
        request.requiredShippingContactFields = [.postalAddress, .name, .email]
        request.requiredBillingContactFields = []
        request.applicationData = "Y2hlY2tvdXQ6Y2hr"
        request.supportsCouponCode = true
        request.couponCode = "WELCOME10"
        request.supportedCountries = ["US", "CA"]
        request.shippingContactEditingMode = .storePickup
        return request
    }

    @Test("a catalog checkout's answer is byte for byte SortedJSONEncoder's, with and without the client secret")
    func sameBytes() throws {
        var bare = PaymentRequest(
            countryCode: "FR", currencyCode: "EUR", supportedNetworks: [.cartesBancaires],
            total: PaymentSummaryItem(label: "Total", amount: "1.00"))
        bare.lineItems = nil
        for request in [Self.request(), bare] {
            for secret in ["0123456789abcdef", nil] {
                let expected = try SortedJSONEncoder().encode(
                    Answer(id: "chk_1", clientSecret: secret, paymentRequest: request))
                let written = PaymentRequestJSON.checkoutAnswer(
                    id: "chk_1", clientSecret: secret, paymentRequest: request)
                #expect(written == expected)
            }
        }
    }

    @Test("contacts, plan requests, a category code and extra fields are left to the encoder")
    func leavesTheRest() {
        var contact = Self.request()
        contact.shippingContact = Contact(emailAddress: "a@example.com")
        var extra = Self.request()
        extra.otherFields = ["future": .string("x")]
        var category = Self.request()
        category.merchantCategoryCode = 5812
        for request in [contact, extra, category] {
            #expect(!PaymentRequestJSON.isPlain(request))
            #expect(PaymentRequestJSON.checkoutAnswer(id: "c", clientSecret: nil, paymentRequest: request) == nil)
        }
        #expect(PaymentRequestJSON.isPlain(Self.request()))
    }
}

import ApplePay
import Foundation
import JSONCoding
import MerchantCore
import Testing

@testable import MerchantStore

/// The payment path's JSON columns without Codable: the same bytes as ``SortedJSONEncoder``, the same values as
/// `JSONDecoder`, and `nil` (so that `JSONDecoder` reads the row) for any other shape.
@Suite("StoredJSON: the payment path's columns written and read without Codable")
struct StoredJSONTests {
    static func sorted(_ value: some Encodable) throws -> String {
        String(decoding: try SortedJSONEncoder().encode(value), as: UTF8.self)
    }

    static func decoded<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    static let lines: [[OrderLine]] = [
        [],
        [OrderLine(sku: "mug", name: "Mug", quantity: 2, unitPrice: 1250, amount: 2500)],
        [
            OrderLine(sku: "tee-\"xl\"", name: "T-shirt \\ «été» 👕\n\t\u{1}", quantity: 999, unitPrice: 0, amount: 0),
            OrderLine(sku: "neg", name: "", quantity: 1, unitPrice: -5, amount: Int64.min + 1),
            OrderLine(sku: "big", name: "/slash/", quantity: Int(Int32.max), unitPrice: .max, amount: .max),
        ],
    ]

    static let contacts: [Contact] = {
        var full = Contact(
            phoneNumber: "+1 555 0100", emailAddress: "a@example.com", givenName: "Zoë", familyName: "O\"Brien",
            phoneticGivenName: "ゾーイ", phoneticFamilyName: "オブライエン",
            postalAddress: PostalAddress(
                street: ["1 Infinite Loop", "Suite \\ 2"], subLocality: "Downtown", city: "Cupertino",
                postalCode: "95014", subAdministrativeArea: "Santa Clara", state: "CA", country: "United States",
                isoCountryCode: "US"))
        var emptyStreet = Contact(emailAddress: "b@example.com")
        emptyStreet.addressLines = []
        full.subLocality = nil
        return [Contact(), full, emptyStreet, Contact(postalAddress: PostalAddress(postalCode: "10001"))]
    }()

    @Test("order lines, shipping methods, contacts and details are written byte for byte as SortedJSONEncoder")
    func writesTheSortedEncodersBytes() throws {
        for lines in Self.lines { #expect(StoredJSON.text(lines) == (try Self.sorted(lines))) }
        for contact in Self.contacts { #expect(StoredJSON.text(contact) == (try Self.sorted(contact))) }
        for method in [
            OrderShippingMethod(identifier: "standard", label: "Standard — 3 days", amount: 500),
            OrderShippingMethod(identifier: "", label: "\u{7f}", amount: 0),
        ] {
            #expect(StoredJSON.text(method) == (try Self.sorted(method)))
        }
        for detail in [[:], ["b": "2", "a": "1", "countryCode": "US", "country": "x", "Z": "\"", "é": "e"]] {
            #expect(StoredJSON.text(detail) == (try Self.sorted(detail)))
        }
    }

    @Test("what it writes reads back as JSONDecoder reads it, and as the value written (a new order is not read back)")
    func readsAsJSONDecoder() throws {
        for lines in Self.lines {
            let text = StoredJSON.text(lines)
            #expect(StoredJSON.orderLines(text) == (try Self.decoded([OrderLine].self, text)))
            #expect(StoredJSON.orderLines(text) == lines)
        }
        for contact in Self.contacts {
            let text = StoredJSON.text(contact)
            #expect(StoredJSON.contact(text) == (try Self.decoded(Contact.self, text)))
            #expect(StoredJSON.contact(text) == contact)
        }
        let method = OrderShippingMethod(identifier: "express", label: "Express", amount: 1500)
        #expect(StoredJSON.shippingMethod(StoredJSON.text(method)) == method)
        let detail = ["orderId": "ord_1", "status": "paid\u{0}"]
        #expect(StoredJSON.stringMap(StoredJSON.text(detail)) == detail)
    }

    @Test("a checkout's state reads as JSONDecoder reads it, shipping address, secrets and dates included")
    func readsCheckouts() throws {
        var checkout = Checkout(
            id: "chk_1", items: [CheckoutItem(sku: "mug", quantity: 2), CheckoutItem(sku: "tee", quantity: 1)],
            currency: try #require(Currency(code: "EUR")), applicationData: "Y2hlY2tvdXQ=",
            createdAt: Date(timeIntervalSince1970: 1_764_600_000.123_456))
        let bare = checkout
        checkout.shippingAddress = ShippingAddress(
            redacting: Contact(
                postalAddress: PostalAddress(
                    city: "Paris", postalCode: "75001", state: "IDF", country: "France", isoCountryCode: "FR")))
        checkout.shippingMethodIdentifier = "standard"
        checkout.couponCode = "WELCOME10"
        checkout.paymentMethodType = "debit"
        checkout.paymentMethodNetwork = "visa"
        checkout.clientSecret = "0123456789abcdef"
        checkout.subscriptionSecret = "fedcba9876543210"
        for value in [bare, checkout] {
            let text = try Self.sorted(value)
            #expect(StoredJSON.text(value) == text)
            let fast = try #require(StoredJSON.checkout(text))
            #expect(fast == (try Self.decoded(Checkout.self, text)))
            #expect(fast.createdAt == (try Self.decoded(Checkout.self, text)).createdAt)
        }
    }

    @Test(
        "any other shape is left to JSONDecoder",
        arguments: [
            #"[{"amount":1.5,"name":"a","quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[{"amount":1e2,"name":"a","quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[{"amount":1,"amount":2,"name":"a","quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[{"am\u006funt":1,"name":"a","quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[{"name":"a","quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[{"amount":1,"name":null,"quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[{"amount":99999999999999999999,"name":"a","quantity":1,"sku":"s","unitPrice":1}]"#,
            #"[] []"#,
            #"{}"#,
        ])
    func leavesOtherShapes(text: String) {
        #expect(StoredJSON.orderLines(text) == nil)
    }

    @Test("unknown members are skipped, as JSONDecoder skips them; a plan checkout is left to JSONDecoder")
    func skipsUnknownMembers() throws {
        let text = #"[{"amount":2,"extra":{"nested":[1,{"a":null}]},"name":"a","quantity":1,"sku":"s","unitPrice":2}]"#
        #expect(StoredJSON.orderLines(text) == (try Self.decoded([OrderLine].self, text)))
        let plan =
            #"{"applicationData":"x","createdAt":0,"currencyCode":"USD","id":"c","items":[],"#
            + #""planPaymentMethods":{"t":{"network":"visa"}}}"#
        #expect(StoredJSON.checkout(plan) == nil)
        #expect(StoredJSON.text(try Self.decoded(Checkout.self, plan)) == nil)
        #expect((try decodeStored(Checkout.self, plan, fast: StoredJSON.checkout)).planPaymentMethods != nil)
        #expect(
            StoredJSON.checkout(#"{"applicationData":"x","createdAt":0,"currencyCode":"XXQ","id":"c","items":[]}"#)
                == nil)
    }
}

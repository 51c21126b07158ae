import ApplePay
import Foundation
import Testing

@testable import MerchantCore

@Suite("Catalog, zones and money")
struct CatalogTests {
    @Test("products encode in the GET /v1/products shape with exact decimal strings")
    func productJSON() throws {
        let product = try #require(StoreConfiguration.demo.product(sku: "COFFEE-250"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(product), as: UTF8.self)
        #expect(text == #"{"currencyCode":"USD","name":"House Blend 250 g","price":"14.50","sku":"COFFEE-250"}"#)
        #expect(StoreConfiguration.demo.product(sku: "NOPE") == nil)
    }

    @Test("zones match country, state and postal-code prefix, ignoring case and spaces")
    func zoneMatching() {
        let zone = ShippingZone(
            identifier: "z", name: "z", countries: ["GB"], postalCodePrefixes: ["SW1", "EC"],
            methods: [ShippingRate(identifier: "m", label: "m", detail: "", amount: 1)])
        #expect(zone.covers(ShippingAddress(postalCode: "sw1a 1aa", countryCode: "gb")))
        #expect(zone.covers(ShippingAddress(postalCode: "EC1", countryCode: "GB")))
        #expect(!zone.covers(ShippingAddress(postalCode: "SW2 1AA", countryCode: "GB")))
        #expect(!zone.covers(ShippingAddress(postalCode: "SW1A", countryCode: "IE")))
        #expect(!zone.covers(ShippingAddress(postalCode: nil, countryCode: "GB")))
        #expect(!zone.covers(ShippingAddress(countryCode: nil)))
        let state = ShippingZone(
            identifier: "ca", name: "ca", countries: ["US"], administrativeAreas: ["CA"],
            methods: [ShippingRate(identifier: "m", label: "m", detail: "", amount: 1)])
        #expect(state.covers(ShippingAddress(administrativeArea: "ca", countryCode: "US")))
        #expect(!state.covers(ShippingAddress(administrativeArea: "NY", countryCode: "US")))
    }

    @Test("a redacted contact keeps only the redacted fields")
    func redaction() {
        var contact = Contact(emailAddress: "a@example.com", givenName: "Ada")
        contact.addressLines = ["1 Infinite Loop"]
        contact.locality = "Cupertino"
        contact.administrativeArea = "CA"
        contact.postalCode = "95014"
        contact.countryCode = "US"
        let address = ShippingAddress(redacting: contact)
        #expect(
            address
                == ShippingAddress(
                    locality: "Cupertino", administrativeArea: "CA", postalCode: "95014", countryCode: "US"))
    }

    @Test("configuration decimal strings: the whole text must be one plain decimal, not just a prefix of one")
    func decimalStrings() {
        #expect(parseConfigurationDecimal("19.99") == Decimal(string: "19.99"))
        #expect(parseConfigurationDecimal("-2") == -2)
        #expect(parseConfigurationDecimal(" +3 ") == 3)
        for text in ["1.2.3", "1-2", "--1", "+-1", "1+", "-", "+", ".", "1..2", "", " "] {
            #expect(parseConfigurationDecimal(text) == nil, "\(text)")
        }
    }
}

@Suite("A checkout's client secret")
struct CheckoutClientSecretTests {
    static func make(_ sku: String = "MUG-01") throws -> Checkout {
        try Checkout.create(items: [CheckoutItem(sku: sku, quantity: 1)], configuration: .demo)
    }

    @Test("made with the checkout: 32 hex digits of its own, apart from the subscription's, kept through its JSON")
    func made() throws {
        let checkout = try Self.make("BEANS-MONTHLY")
        let secret = try #require(checkout.clientSecret)
        #expect(secret.count == 32 && secret.allSatisfy(\.isHexDigit))
        #expect(secret != checkout.subscriptionSecret)
        #expect(try Self.make().clientSecret != secret)
        let stored = try JSONDecoder().decode(Checkout.self, from: try JSONEncoder().encode(checkout))
        #expect(stored.clientSecret == secret)
        #expect(stored.acceptsClientSecret(secret))
    }

    @Test("only its own secret opens it: not a missing, empty, shorter, longer or changed one")
    func accepts() throws {
        let checkout = try Self.make()
        let secret = try #require(checkout.clientSecret)
        #expect(checkout.acceptsClientSecret(secret))
        for wrong in [nil, "", String(secret.dropLast()), secret + "0", secret.uppercased(), " " + secret] {
            #expect(!checkout.acceptsClientSecret(wrong), "\(wrong ?? "nil")")
        }
        #expect(!checkout.acceptsClientSecret(checkout.subscriptionSecret))
    }

    @Test("a checkout stored before checkouts had secrets decodes without one and refuses every secret")
    func storedBefore() throws {
        var json = try #require(
            try JSONSerialization.jsonObject(with: try JSONEncoder().encode(try Self.make())) as? [String: Any])
        json["clientSecret"] = nil
        let legacy = try JSONDecoder().decode(Checkout.self, from: try JSONSerialization.data(withJSONObject: json))
        #expect(legacy.clientSecret == nil)
        for secret in [nil, "", "null", String(repeating: "0", count: 32)] {
            #expect(!legacy.acceptsClientSecret(secret))
        }
    }

    @Test("neither description nor dump shows the client or the subscription secret")
    func neverPrinted() throws {
        let checkout = try Self.make("BEANS-MONTHLY")
        var dumped = ""
        dump(checkout, to: &dumped)
        for text in [checkout.description, "\(checkout)", String(reflecting: checkout), dumped] {
            #expect(text.contains(checkout.id))
            #expect(!text.contains(try #require(checkout.clientSecret)))
            #expect(!text.contains(try #require(checkout.subscriptionSecret)))
        }
    }
}

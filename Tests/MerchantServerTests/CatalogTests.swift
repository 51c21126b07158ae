import ApplePay
import Foundation
import MerchantServer
import Testing

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

    @Test(
        "amount strings have exactly the currency's decimals",
        arguments: [
            (1250 as Int64, "USD", "12.50"), (-5, "USD", "-0.05"), (0, "USD", "0.00"), (1250, "JPY", "1250"),
            (1250, "KWD", "1.250"), (-1, "BHD", "-0.001"), (Int64.max, "USD", "92233720368547758.07"),
        ])
    func amountStrings(minor: Int64, currency: String, text: String) {
        #expect(Money.string(minorUnits: minor, currencyCode: currency) == text)
    }

    @Test("decimal ↔ minor units: exact conversion refuses extra decimals; rounding is half-up")
    func conversions() throws {
        #expect(Money.minorUnits(exactly: try #require(Decimal(string: "12.34")), currencyCode: "USD") == 1234)
        #expect(Money.minorUnits(exactly: try #require(Decimal(string: "12.345")), currencyCode: "USD") == nil)
        #expect(Money.minorUnits(exactly: 500, currencyCode: "JPY") == 500)
        #expect(Money.minorUnits(rounding: try #require(Decimal(string: "0.125")), currencyCode: "USD") == 13)
        #expect(Money.minorUnits(rounding: try #require(Decimal(string: "0.135")), currencyCode: "USD") == 14)
        #expect(Money.minorUnits(rounding: try #require(Decimal(string: "-0.125")), currencyCode: "USD") == -13)
        #expect(Money.minorUnits(rounding: try #require(Decimal(string: "1e30")), currencyCode: "USD") == nil)
        #expect(Money.multiply(25, by: try #require(Decimal(string: "0.1"))) == 3)
        #expect(Money.decimal(minorUnits: 1234, currencyCode: "KWD") == Decimal(string: "1.234"))
        #expect(Money.parseDecimal("1,5") == nil)
        #expect(Money.parseDecimal("0x10") == nil)
    }

    @Test("decimal strings: the whole text must be one plain decimal, not just a prefix of one")
    func decimalStrings() {
        #expect(Money.parseDecimal("19.99") == Decimal(string: "19.99"))
        #expect(Money.parseDecimal("-2") == -2)
        #expect(Money.parseDecimal(" +3 ") == 3)
        for text in ["1.2.3", "1-2", "--1", "+-1", "1+", "-", "+", ".", "1..2", "", " "] {
            #expect(Money.parseDecimal(text) == nil, "\(text)")
        }
    }
}

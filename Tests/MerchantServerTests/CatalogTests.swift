import ApplePay
import Foundation
import Testing

@testable import MerchantCore
@testable import MerchantServer

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

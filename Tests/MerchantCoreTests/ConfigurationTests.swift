import Foundation
import Foundations
import MerchantTestSupport
import TestSupport
import Testing

@testable import MerchantCore

@Suite("Store configuration")
struct ConfigurationTests {
    @Test("a JSON file decodes with strings or numbers for money, and defaults for optional fields")
    func decodeSample() throws {
        let folder = try TemporaryDirectory(prefix: "store-config")
        defer { folder.remove() }
        let url = URL(fileURLWithPath: folder.path("store.json"))
        try Data(sampleStoreConfiguration.utf8).write(to: url)
        let configuration = try StoreConfiguration.load(from: url)
        #expect(configuration.storeName == "Tiny Tea")
        #expect(configuration.products[0].price == Decimal(string: "4.2"))
        #expect(configuration.products[1].price == Decimal(string: "3.5"))
        #expect(configuration.merchantCapabilities == ["supports3DS"])
        #expect(configuration.requiredBillingContactFields == ["postalAddress"])
        #expect(configuration.shippingZones[0].postalCodePrefixes == ["SW", "EC"])
        #expect(configuration.shippingZones[1].methods[0].detail == "2–3 days")
        #expect(configuration.shippingZones[0].taxRate == Decimal(string: "0.2"))
        #expect(configuration.coupons[0].discount == .fixed(5))
        #expect(configuration.coupons[0].expiresAt == Date(timeIntervalSince1970: 1_924_992_000))
        #expect(configuration.merchantValidation.gatewayBaseURL == "https://127.0.0.1:8443")
        #expect(configuration.processor.timeout == .milliseconds(2500))
        #expect(configuration.processor.kind == "sandbox")
        #expect(configuration.paymentMethodFees == [PaymentMethodFee(type: "credit", label: "Card fee", percent: 2)])
    }

    @Test("the demo configuration is valid and survives a JSON round trip")
    func demoRoundTrip() throws {
        try StoreConfiguration.demo.validate()
        let data = try JSONEncoder().encode(StoreConfiguration.demo)
        #expect(try StoreConfiguration.decode(data) == StoreConfiguration.demo)
    }

    static let invalid: [(String, StoreConfigurationError.Code, @Sendable (inout [String: Any]) -> Void)] = [
        ("store name missing", .malformed, { $0["storeName"] = nil }),
        ("price with three decimals in GBP", .invalidAmount, { setProduct(&$0, "price", "4.205") }),
        ("negative price", .invalidAmount, { setProduct(&$0, "price", "-1") }),
        ("price that is not a number", .malformed, { setProduct(&$0, "price", "four") }),
        ("price with two decimal points", .malformed, { setProduct(&$0, "price", "4.20.5") }),
        ("price that is only a sign", .malformed, { setProduct(&$0, "price", "-") }),
        ("tax rate with a sign in the middle", .malformed, { setZone(&$0, "taxRate", "0.2-1") }),
        ("unknown currency", .invalidCurrency, { $0["currencyCode"] = "XYZ" }),
        ("lower-case country", .invalidCountry, { $0["countryCode"] = "gb" }),
        ("product in another currency", .currencyMismatch, { setProduct(&$0, "currencyCode", "EUR") }),
        ("no networks", .noNetworks, { $0["supportedNetworks"] = [String]() }),
        ("no products", .emptyCatalog, { $0["products"] = [Any]() }),
        ("duplicate SKU", .duplicateSKU, { setProduct(&$0, "sku", "TEA-2") }),
        ("tax as a percentage", .invalidRate, { setZone(&$0, "taxRate", "20") }),
        ("zone with an unknown country", .invalidZone, { setZone(&$0, "countries", ["ZZ"]) }),
        ("zone without methods", .invalidZone, { setZone(&$0, "methods", [Any]()) }),
        ("coupon of an unknown kind", .malformed, { setCoupon(&$0, "kind", "bogo") }),
        ("coupon with a bad date", .malformed, { setCoupon(&$0, "expiresAt", "next week") }),
        (
            "coupon over 100 percent", .invalidRate,
            {
                setCoupon(&$0, "kind", "percent")
                setCoupon(&$0, "value", "150")
            }
        ),
        ("fee for an unknown payment method type", .duplicateIdentifier, { setFee(&$0, "type", "cash") }),
        ("fee above 10 percent", .invalidRate, { setFee(&$0, "percent", "12") }),
        ("processor timeout above the sheet's 30 s", .invalidProcessor, { $0["processor"] = ["timeoutSeconds": 31] }),
        ("a processor kind the server cannot run", .invalidProcessor, { $0["processor"] = ["kind": "paypal"] }),
    ]

    /// The sample changed by `mutate` is refused (the expectation named `name`): the error, nil if none was thrown.
    static func refusal(
        _ name: String, of mutate: (inout [String: Any]) -> Void
    ) throws -> StoreConfigurationError? {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(sampleStoreConfiguration.utf8)) as? [String: Any])
        mutate(&object)
        let data = try JSONSerialization.data(withJSONObject: object)
        return #expect(throws: StoreConfigurationError.self, "\(name)") { try StoreConfiguration.decode(data) }
    }

    @Test("invalid configurations are refused with a stable code", arguments: invalid.indices)
    func invalidConfigurations(index: Int) throws {
        let (name, code, mutate) = Self.invalid[index]
        let error = try Self.refusal(name, of: mutate)
        #expect(error?.code == code, "\(name): \(error?.description ?? "")")
        #expect(error?.message.isEmpty == false)
    }

    @Test("processor settings built in code: a NaN or huge timeout is refused and converts without trapping")
    func processorSettingsInCode() throws {
        var configuration = StoreConfiguration.demo
        for seconds in [Double.nan, .infinity, -1, 0, 1e300] {
            configuration.processor = ProcessorSettings(timeoutSeconds: seconds)
            #expect(throws: StoreConfigurationError.self, "\(seconds)") { try configuration.validate() }
            #expect(configuration.processor.timeout <= .seconds(86_400))
        }
        configuration.processor = ProcessorSettings(timeoutSeconds: 2.5)
        try configuration.validate()
        #expect(configuration.processor.timeout == .milliseconds(2500))
    }

    @Test("a missing field is named in the message; unreadable files and non-JSON have their own codes")
    func messages() throws {
        let error = #expect(throws: StoreConfigurationError.self) {
            try StoreConfiguration.decode(Data(#"{"storeName": "x"}"#.utf8))
        }
        #expect(error?.code == .malformed)
        #expect(error?.message.contains("merchantIdentifier") == true)
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(sampleStoreConfiguration.utf8)) as? [String: Any])
        setProduct(&object, "price", true)
        let wrongType = #expect(throws: StoreConfigurationError.self) {
            try StoreConfiguration.decode(try JSONSerialization.data(withJSONObject: object))
        }
        #expect(wrongType?.message.contains("products[0].price") == true, "\(wrongType?.message ?? "")")
        let notJSON = #expect(throws: StoreConfigurationError.self) { try StoreConfiguration.decode(Data("{".utf8)) }
        #expect(notJSON?.code == .malformed)
        let missing = #expect(throws: StoreConfigurationError.self) {
            try StoreConfiguration.load(from: URL(fileURLWithPath: "/nonexistent/store.json"))
        }
        #expect(missing?.code == .unreadable)
        var matched = false
        do { _ = try StoreConfiguration.decode(Data("[]".utf8)) } catch StoreConfigurationError.Code.malformed {
            matched = true
        } catch {}
        #expect(matched)
    }

    static let fields: [(String, String?, @Sendable (inout [String: Any]) -> Void)] = [
        ("store name missing", "storeName", { $0["storeName"] = nil }),
        ("price that is not a number", "products[0].price", { setProduct(&$0, "price", "four") }),
        ("price of the wrong type", "products[0].price", { setProduct(&$0, "price", true) }),
        ("price with three decimals in GBP", "products[0].price", { setProduct(&$0, "price", "4.205") }),
        ("unknown currency", "currencyCode", { $0["currencyCode"] = "XYZ" }),
        ("duplicate SKU", "products[1].sku", { setProduct(&$0, "sku", "TEA-2") }),
        ("tax as a percentage", "shippingZones[0].taxRate", { setZone(&$0, "taxRate", "20") }),
        ("zone with an unknown country", "shippingZones[0].countries[0]", { setZone(&$0, "countries", ["ZZ"]) }),
        ("fee above 10 percent", "paymentMethodFees[0].percent", { setFee(&$0, "percent", "12") }),
        ("a processor kind the server cannot run", "processor.kind", { $0["processor"] = ["kind": "paypal"] }),
    ]

    @Test(
        "the failing field is a property of the error, not something to parse from the message",
        arguments: fields.indices)
    func failingField(index: Int) throws {
        let (name, field, mutate) = Self.fields[index]
        let error = try Self.refusal(name, of: mutate)
        #expect(error?.field == field, "\(name): \(error?.description ?? "")")
    }

    @Test("a file that is not JSON, or cannot be read, has no failing field")
    func noField() {
        let notJSON = #expect(throws: StoreConfigurationError.self) { try StoreConfiguration.decode(Data("{".utf8)) }
        #expect(notJSON?.field == nil)
        let missing = #expect(throws: StoreConfigurationError.self) {
            try StoreConfiguration.load(from: URL(fileURLWithPath: "/nonexistent/store.json"))
        }
        #expect(missing?.field == nil)
    }
}

/// Sets `key` of the first entry of the list `list` (products, shipping zones, coupons, fees) of a configuration.
private func setFirst(_ object: inout [String: Any], of list: String, _ key: String, _ value: Any) {
    var entries = object[list] as? [[String: Any]] ?? []
    entries[0][key] = value
    object[list] = entries
}

private func setProduct(_ object: inout [String: Any], _ key: String, _ value: Any) {
    setFirst(&object, of: "products", key, value)
}

private func setZone(_ object: inout [String: Any], _ key: String, _ value: Any) {
    setFirst(&object, of: "shippingZones", key, value)
}

private func setCoupon(_ object: inout [String: Any], _ key: String, _ value: Any) {
    setFirst(&object, of: "coupons", key, value)
}

private func setFee(_ object: inout [String: Any], _ key: String, _ value: Any) {
    setFirst(&object, of: "paymentMethodFees", key, value)
}

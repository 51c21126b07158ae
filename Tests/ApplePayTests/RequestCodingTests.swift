import ApplePay
import Foundation
import Foundations
import TestSupport
import Testing

/// `Tests/Fixtures/requests`: payment requests modelled on Apple Pay JS's documented examples.
enum RequestFixtures {
    static let folder = Repository.root.appendingPathComponent("Tests/Fixtures/requests")
    static let valid = [
        "basic.json", "shipping-and-coupon.json", "recurring.json", "deferred.json", "automatic-reload.json",
        "multi-token.json",
    ]

    static func data(_ name: String) throws -> Data { try Data(contentsOf: folder.appendingPathComponent(name)) }

    static func request(_ name: String) throws -> PaymentRequest {
        try JSONDecoder().decode(PaymentRequest.self, from: data(name))
    }
}

@Suite("PaymentRequest JSON in Apple Pay JS's shape")
struct RequestCodingTests {
    @Test(
        "Apple's documented examples round-trip: decoding then encoding gives equal JSON",
        arguments: RequestFixtures.valid)
    func roundTrip(name: String) throws {
        let original = try RequestFixtures.data(name)
        let request = try JSONDecoder().decode(PaymentRequest.self, from: original)
        let encoded = try JSONEncoder().encode(request)
        #expect(try JSONValue(parsing: encoded) == JSONValue(parsing: original))
        #expect(try JSONDecoder().decode(PaymentRequest.self, from: encoded) == request)
    }

    @Test("Apple's documented examples are valid, without warnings", arguments: RequestFixtures.valid)
    func examplesAreValid(name: String) throws {
        let problems = try RequestFixtures.request(name).validate()
        #expect(problems == [], "\(problems)")
    }

    @Test("the decoded model carries every field of the fuller example")
    func decodedFields() throws {
        let request = try RequestFixtures.request("shipping-and-coupon.json")
        #expect(request.currency?.code == "USD")
        #expect(request.merchantCapabilities.nativeValue == 1 | 4 | 8)
        #expect(request.shippingMethods?.count == 2)
        #expect(request.shippingMethods?[1].dateComponentsRange?.endDateComponents.hours == 17)
        #expect(request.lineItems?[2].decimalAmount == Decimal(string: "-3.5"))
        #expect(request.shippingContact?.postalAddress?.city == "Cupertino")
        #expect(request.shippingContact?.postalAddress?.isoCountryCode == "US")
        #expect(request.couponCode == "FESTIVE10")
        #expect(request.merchantCategoryCode?.value == 5699)
        #expect(request.requiredShippingContactFields?.contains(.phone) == true)
        #expect(request.shippingContactEditingMode == .available)

        let recurring = try RequestFixtures.request("recurring.json")
        #expect(recurring.recurringPaymentRequest?.regularBilling.recurringPaymentIntervalUnit == .month)
        #expect(recurring.recurringPaymentRequest?.regularBilling.recurringStart != nil)
        let deferred = try RequestFixtures.request("deferred.json")
        #expect(deferred.deferredPaymentRequest?.deferredBilling.deferredDate != nil)
        #expect(deferred.deferredPaymentRequest?.freeCancellationDateTimeZone == "America/Los_Angeles")
        let reload = try RequestFixtures.request("automatic-reload.json")
        #expect(
            reload.automaticReloadPaymentRequest?.automaticReloadBilling.automaticReloadPaymentThresholdAmount == "5.00"
        )
        #expect(try RequestFixtures.request("multi-token.json").multiTokenContexts?.count == 2)
    }

    @Test("values are tolerated at decoding and reported by validate(): bad amount, unknown network and capability")
    func tolerantValues() throws {
        let json = """
            {"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": ["supports3DS", "supportsMagic"],
             "supportedNetworks": ["visa", "newNetwork2030"], "total": {"label": "Shop", "amount": "twelve"}}
            """
        let request = try JSONDecoder().decode(PaymentRequest.self, from: Data(json.utf8))
        #expect(request.supportedNetworks[1].rawValue == "newNetwork2030")
        #expect(!request.supportedNetworks[1].isKnown)
        let encoded = try JSONValue(parsing: JSONEncoder().encode(request))
        #expect(encoded["supportedNetworks"]?[1] == .string("newNetwork2030"))
        let codes = request.validate().map { "\($0.path) \($0.code)" }
        #expect(codes.contains("total.amount amount.notADecimal"))
        #expect(codes.contains("supportedNetworks[1] networks.unknown"))
        #expect(codes.contains("merchantCapabilities[1] capabilities.unknown"))
    }

    @Test("members the model does not know are kept and written back, and reported as warnings")
    func unknownMembers() throws {
        let json = """
            {"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": ["supports3DS"],
             "supportedNetworks": ["visa"], "total": {"label": "Shop", "amount": "1.00"},
             "lineitems": [{"label": "typo", "amount": "1.00"}], "futureField": {"a": [1, 2.5, true, null]}}
            """
        let request = try JSONDecoder().decode(PaymentRequest.self, from: Data(json.utf8))
        #expect(request.otherFields.keys.sorted() == ["futureField", "lineitems"])
        #expect(try JSONValue(parsing: JSONEncoder().encode(request)) == JSONValue(parsing: Data(json.utf8)))
        let problems = request.validate()
        #expect(problems.isValid)
        #expect(problems.map(\.path) == ["futureField", "lineitems"])
        #expect(problems.allSatisfy { $0.code == .unknownField && $0.severity == .warning })
    }

    @Test(
        "JSON of the wrong shape fails to decode, and problems(decodingJSON:) names the path",
        arguments: [
            (
                #"{"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": ["supports3DS"], "supportedNetworks": ["visa"]}"#,
                "total", "json.missingField"
            ),
            (
                #"{"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": ["supports3DS"], "supportedNetworks": ["visa"], "total": {"label": "A", "amount": 1.5}}"#,
                "total.amount", "json.wrongType"
            ),
            (
                #"{"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": "supports3DS", "supportedNetworks": ["visa"], "total": {"label": "A", "amount": "1"}}"#,
                "merchantCapabilities", "json.wrongType"
            ),
            (
                #"{"countryCode": "US", "currencyCode": "USD", "merchantCapabilities": ["supports3DS"], "supportedNetworks": ["visa"], "total": {"label": "A", "amount": "1"}, "lineItems": [{"label": "B", "amount": "1"}, {"amount": "2"}]}"#,
                "lineItems[1].label", "json.missingField"
            ),
            (#"[1, 2]"#, "", "json.notAnObject"),
            (#""just a string""#, "", "json.notAnObject"),
        ])
    func wrongShape(json: String, path: String, code: String) throws {
        if json.hasPrefix("{") {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(PaymentRequest.self, from: Data(json.utf8)) }
        }
        let problems = try PaymentRequest.problems(decodingJSON: Data(json.utf8))
        #expect(problems.count == 1)
        #expect(problems.first?.path == path)
        #expect(problems.first?.code.rawValue == code)
        #expect(problems.first?.severity == .error)
    }

    @Test(
        "bytes that are not JSON throw RequestDocumentError",
        arguments: ["", "{", "not json", "{\"a\": }", "\u{FEFF}\u{0}"])
    func notJSON(text: String) {
        #expect(throws: RequestDocumentError(.notJSON, "")) {
            try PaymentRequest.problems(decodingJSON: Data(text.utf8))
        }
    }

    @Test("a merchant category code is kept as the JSON wrote it: number or string")
    func merchantCategoryCodeForms() throws {
        for (json, isNumber) in [("5812", true), ("\"5812\"", false)] {
            let code = try JSONDecoder().decode(MerchantCategoryCode.self, from: Data(json.utf8))
            #expect(code.value == 5812 && code.isNumber == isNumber)
            #expect(String(decoding: try JSONEncoder().encode(code), as: UTF8.self) == json)
        }
        // Found by the request fuzz target: a number too long for Int (or with a fraction) stays a number.
        for json in ["5692222222222222222222222222222222222222229", "5812.5", "-4"] {
            let code = try JSONDecoder().decode(MerchantCategoryCode.self, from: Data(json.utf8))
            let again = try JSONDecoder().decode(MerchantCategoryCode.self, from: JSONEncoder().encode(code))
            #expect(again == code && again.isNumber && code.value == nil)
        }
    }

    @Test("a request built in code encodes the Apple Pay JS field names")
    func buildsJSON() throws {
        let usd = try #require(Currency(code: "USD"))
        var request = PaymentRequest(
            countryCode: "US", currencyCode: "USD", supportedNetworks: [.visa, .masterCard],
            total: PaymentSummaryItem(label: "Example Store", amount: Decimal(string: "9.5")!, currency: usd))
        request.shippingMethods = [
            ShippingMethod(label: "Pickup", detail: "Today", amount: "0.00", identifier: "pickup")
        ]
        request.shippingType = .storePickup
        let json = try JSONValue(parsing: JSONEncoder().encode(request))
        #expect(json["total"]?["amount"] == .string("9.50"))
        #expect(json["merchantCapabilities"] == .array([.string("supports3DS")]))
        #expect(json["supportedNetworks"] == .array([.string("visa"), .string("masterCard")]))
        #expect(json["shippingType"] == .string("storePickup"))
        #expect(json["lineItems"] == nil)
        #expect(request.validate() == [])
    }

    @Test("a contact is one flat object, and its postal address view reads and writes the same fields")
    func contactView() throws {
        var contact = Contact(givenName: "Ann", familyName: "Example")
        #expect(contact.postalAddress == nil)
        contact.postalAddress = PostalAddress(
            street: ["1 Main St", "Apt 2"], city: "Springfield", postalCode: "12345",
            state: "IL", isoCountryCode: "US")
        let json = try JSONValue(parsing: JSONEncoder().encode(contact))
        #expect(json["addressLines"] == .array([.string("1 Main St"), .string("Apt 2")]))
        #expect(json["locality"] == .string("Springfield"))
        #expect(json["administrativeArea"] == .string("IL"))
        #expect(json["countryCode"] == .string("US"))
        #expect(json["givenName"] == .string("Ann"))
        contact.postalAddress = nil
        #expect(contact == Contact(givenName: "Ann", familyName: "Example"))
    }
}

import ApplePay
import Foundation
import Testing

@Suite("Apple Pay JS update and answer dictionaries")
struct UpdateTests {
    @Test("ApplePayError encodes as {code, contactField, message} and decodes back")
    func paymentError() throws {
        let error = PaymentError(
            code: .shippingContactInvalid, contactField: .postalCode, message: "ZIP code is invalid")
        let json = try JSONValue(parsing: JSONEncoder().encode(error))
        #expect(
            json
                == .object([
                    "code": .string("shippingContactInvalid"), "contactField": .string("postalCode"),
                    "message": .string("ZIP code is invalid"),
                ]))
        #expect(try JSONDecoder().decode(PaymentError.self, from: JSONEncoder().encode(error)) == error)
        let bare = try JSONDecoder().decode(PaymentError.self, from: Data(#"{"code": "couponCodeExpired"}"#.utf8))
        #expect(bare.code == .couponCodeExpired && bare.contactField == nil && bare.message == nil)
        #expect(PaymentErrorCode.known.count == 6)
    }

    @Test("a shipping contact update as a page sends it decodes, with every field")
    func shippingContactUpdate() throws {
        let json = """
            {"newTotal": {"label": "Shop", "amount": "15.00"},
             "newLineItems": [{"label": "Shipping", "amount": "3.00"}],
             "newShippingMethods": [{"label": "Ground", "detail": "3-5 days", "amount": "3.00", "identifier": "ground"}],
             "errors": [{"code": "addressUnserviceable", "contactField": "postalAddress", "message": "We do not ship there"}]}
            """
        let update = try JSONDecoder().decode(ShippingContactUpdate.self, from: Data(json.utf8))
        #expect(update.newTotal?.amount == "15.00")
        #expect(update.newShippingMethods?.first?.identifier == "ground")
        #expect(update.errors?.first?.code == .addressUnserviceable)
        #expect(try JSONValue(parsing: JSONEncoder().encode(update)) == JSONValue(parsing: Data(json.utf8)))
    }

    @Test("applying an update and validating tells whether the merchant broke the rules")
    func applyingUpdates() throws {
        let request = Samples.request
        let good = ShippingMethodUpdate(
            newTotal: PaymentSummaryItem(label: "Example Store", amount: "17.00"),
            newLineItems: [
                PaymentSummaryItem(label: "Subtotal", amount: "12.00"),
                PaymentSummaryItem(label: "Express", amount: "5.00"),
            ])
        let updated = request.applying(good)
        #expect(updated.total.amount == "17.00")
        #expect(updated.lineItems?.count == 2)
        #expect(updated.supportedNetworks == request.supportedNetworks)
        #expect(updated.validate() == [])

        let bad = CouponCodeUpdate(
            newTotal: PaymentSummaryItem(label: "Example Store", amount: "-3.00"),
            newLineItems: [PaymentSummaryItem(label: "Coupon", amount: "-15.001")],
            newShippingMethods: Samples.methods([("0.00", "a"), ("1.00", "a")]),
            errors: [PaymentError(code: .couponCodeInvalid)])
        let codes = request.applying(bad).validate().map(\.code)
        #expect(codes.contains(.totalNegative))
        #expect(codes.contains(.amountTooManyDecimals))
        #expect(codes.contains(.shippingIdentifierDuplicate))

        var withContexts = PaymentMethodUpdate(newTotal: PaymentSummaryItem(label: "Example Store", amount: "10.00"))
        withContexts.newMultiTokenContexts = Samples.contexts(["6.00", "6.00"])
        #expect(request.applying(withContexts).validate().map(\.code) == [.tokenContextsExceedTotal])
        #expect(request.applying(ShippingContactUpdate()) == request)
    }

    @Test(
        "an authorization result writes its status as Apple Pay JS's number, and reads the number or the name",
        arguments: [
            (PaymentAuthorizationStatus.success, 0, "success"), (.failure, 1, "failure"),
            (.pinLockout, 7, "pinLockout"),
        ])
    func authorizationStatus(status: PaymentAuthorizationStatus, number: Int, name: String) throws {
        let result = PaymentAuthorizationResult(status: status)
        #expect(String(decoding: try JSONEncoder().encode(result), as: UTF8.self) == #"{"status":\#(number)}"#)
        for form in ["\(number)", "\"\(name)\""] {
            let decoded = try JSONDecoder().decode(
                PaymentAuthorizationResult.self, from: Data(#"{"status":\#(form)}"#.utf8))
            #expect(decoded.status == status)
        }
    }

    @Test("an unknown status is a decoding error, not a crash", arguments: ["8", "-1", "\"ok\"", "true"])
    func unknownStatus(form: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(PaymentAuthorizationResult.self, from: Data(#"{"status":\#(form)}"#.utf8))
        }
    }

    @Test("a failure with errors and a success with order details keep Apple's field names")
    func authorizationResults() throws {
        let failure = PaymentAuthorizationResult(
            status: .failure, errors: [PaymentError(code: .billingContactInvalid, contactField: .addressLines)])
        let json = try JSONValue(parsing: JSONEncoder().encode(failure))
        #expect(json["errors"]?[0]?["contactField"] == .string("addressLines"))
        let success = PaymentAuthorizationResult(
            status: .success,
            orderDetails: PaymentOrderDetails(
                orderTypeIdentifier: "order.com.example", orderIdentifier: "42",
                webServiceURL: "https://example.com/orders", authenticationToken: "abc"))
        let encoded = try JSONEncoder().encode(success)
        #expect(
            try JSONValue(parsing: encoded)["orderDetails"]?["webServiceURL"] == .string("https://example.com/orders"))
        #expect(try JSONDecoder().decode(PaymentAuthorizationResult.self, from: encoded) == success)
    }

    @Test("a payment keeps the token as raw JSON and never prints it")
    func payment() throws {
        let json = """
            {"token": {"paymentData": {"version": "EC_v1", "data": "c2VjcmV0", "signature": "c2ln",
                                       "header": {"transactionId": "ab12", "publicKeyHash": "aGFzaA=="}},
                       "paymentMethod": {"displayName": "Visa 0492", "network": "Visa", "type": "debit"},
                       "transactionIdentifier": "AB12"},
             "shippingContact": {"givenName": "Ann", "locality": "Cupertino", "countryCode": "US"}}
            """
        let payment = try JSONDecoder().decode(Payment.self, from: Data(json.utf8))
        #expect(payment.token["paymentData"]?["version"] == .string("EC_v1"))
        #expect(payment.token["transactionIdentifier"]?.stringValue == "AB12")
        #expect(payment.shippingContact?.postalAddress?.city == "Cupertino")
        #expect(try JSONValue(parsing: JSONEncoder().encode(payment)) == JSONValue(parsing: Data(json.utf8)))
        #expect(!"\(payment)".contains("c2VjcmV0"))
        #expect(!String(describing: payment).contains("EC_v1"))
        var dumped = ""
        dump(payment, to: &dumped)
        for text in [dumped, String(reflecting: payment), "\([payment])"] {
            #expect(!text.contains("c2VjcmV0") && !text.contains("c2ln"), "\(text)")
        }
    }

    @Test("a payment method reads Apple Pay JS's fields; unknown types and networks are kept")
    func paymentMethod() throws {
        let json =
            #"{"displayName": "MasterCard 1471", "network": "masterCard", "type": "credit", "billingContact": {"postalCode": "95014"}}"#
        let method = try JSONDecoder().decode(PaymentMethod.self, from: Data(json.utf8))
        #expect(method.network == .masterCard && method.type == .credit)
        #expect(method.billingContact?.postalCode == "95014")
        let odd = try JSONDecoder().decode(
            PaymentMethod.self, from: Data(#"{"network": "Zzz", "type": "crypto"}"#.utf8))
        #expect(odd.type?.isKnown == false && odd.network?.isKnown == false)
        #expect(PaymentMethodType.known == [.debit, .credit, .prepaid, .store, .eMoney])
    }

    @Test("JSONValue keeps numbers, booleans and nulls exactly")
    func jsonValue() throws {
        let text = #"{"a": 12345678901234567890.123, "b": true, "c": false, "d": null, "e": [0, -1.5, "x"], "f": 1}"#
        let value = try JSONValue(parsing: Data(text.utf8))
        #expect(value["a"] == .number(Decimal(string: "12345678901234567890.123")!))
        #expect(value["b"] == .bool(true) && value["c"] == .bool(false) && value["d"] == .null)
        #expect(value["f"] == .number(1))
        #expect(value["e"]?[1]?.numberValue == Decimal(string: "-1.5"))
        #expect(try JSONValue(parsing: JSONEncoder().encode(value)) == value)
        #expect(throws: (any Error).self) { try JSONValue(parsing: Data("{".utf8)) }
    }
}

import Foundation
import MerchantTestSupport
import Testing

/// The payment body's contacts are read without JSONDecoder when they have the shape Apple Pay JS sends; any other
/// shape still gets JSONDecoder's precise refusal, and what is read reaches the order.
@Suite("The payment body's contacts")
struct PaymentBodyContactsTests {
    @Test("contacts of another shape are refused as before, field named; contacts read reach the order")
    func contacts() async throws {
        try await ServerHarness.with { server in
            let (checkout, body) = try await server.shippedCheckout()
            for (contacts, message) in [
                (#""shippingContact":{"givenName":5}"#, "Field shippingContact.givenName should be a string."),
                (#""billingContact":[]"#, "Field billingContact should be an object."),
                (
                    #""shippingContact":{"addressLines":"1 Main St"}"#,
                    "Field shippingContact.addressLines should be an array."
                ),
            ] {
                let raw = Data(("{" + contacts + #","token":{}}"#).utf8)
                let reply = try await server.pay(checkout, raw: raw)
                #expect(reply.status == 400)
                #expect((reply.json["error"] as? [String: Any])?["message"] as? String == message)
            }
            var payment = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            payment["shippingContact"] = [
                "givenName": "Zoë", "familyName": "O\"Brien", "addressLines": ["1 Infinite Loop", "Suite 2"],
                "locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US",
                "emailAddress": NSNull(), "unknownField": ["nested": true],
            ]
            let reply = try await server.pay(checkout, raw: try JSONSerialization.data(withJSONObject: payment))
            #expect(reply.status == 200)
            let orderID = try #require(reply.json["orderId"] as? String)
            let order = try await server.admin("GET", "/admin/v1/orders/\(orderID)")
            let shipping = try #require(order.json["shippingContact"] as? [String: Any])
            #expect(shipping["givenName"] as? String == "Zoë")
            #expect(shipping["familyName"] as? String == "O\"Brien")
            #expect(shipping["addressLines"] as? [String] == ["1 Infinite Loop", "Suite 2"])
            #expect(shipping["emailAddress"] == nil && shipping["unknownField"] == nil)
        }
    }
}

import Foundation
import MerchantTestSupport
import Testing

/// The checkout body's items are read without JSONDecoder when they have the plain shape; any other shape still gets
/// JSONDecoder's precise refusal, and what is read is what is priced.
@Suite("The checkout body")
struct CheckoutBodyTests {
    @Test("items of another shape are refused as before, field named; items read are priced, other members skipped")
    func items() async throws {
        try await ServerHarness.with { server in
            for (body, message) in [
                (#"{}"#, "Missing field items."),
                (#"{"items":{}}"#, "Field items should be an array."),
                (#"{"items":[{"sku":5,"quantity":1}]}"#, "Field items[0].sku should be a string."),
                (#"{"items":[{"sku":"MUG-01"}]}"#, "Missing field items[0].quantity."),
                (
                    #"{"items":[{"sku":"MUG-01","quantity":null}]}"#,
                    "Field items[0].quantity should be a number, not null."
                ),
                (#"{"items":[{"sku":"MUG-01","quantity":"2"}]}"#, "Field items[0].quantity should be a number."),
            ] {
                let reply = try await server.post("/v1/checkouts", raw: Data(body.utf8))
                #expect(reply.status == 400, "\(body)")
                #expect(
                    (reply.json["error"] as? [String: Any])?["message"] as? String == message, "\(body): \(reply.text)")
            }
            // Escapes in a value, a member the server does not know, a whole quantity written 2.0 (JSONDecoder's).
            let plain = try await server.post(
                "/v1/checkouts", raw: Data(#"{"items":[{"sku":"MUG-01","quantity":2}]}"#.utf8))
            for body in [
                #"{"note":{"x":[1,2]},"items":[{"quantity":2,"gift":true,"sku":"MUG\u002D01"}]}"#,
                #"{"items":[{"sku":"MUG-01","quantity":2.0}]}"#,
            ] {
                let reply = try await server.post("/v1/checkouts", raw: Data(body.utf8))
                #expect(reply.status == plain.status, "\(body): \(reply.text)")
                let total = { (reply: ServerHarness.Reply) in
                    ((reply.json["paymentRequest"] as? [String: Any])?["total"] as? [String: Any])?["amount"] as? String
                }
                #expect(total(reply) != nil && total(reply) == total(plain), "\(body)")
            }
        }
    }
}

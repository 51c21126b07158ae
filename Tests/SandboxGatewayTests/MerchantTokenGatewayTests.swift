import ApplePay
import Cryptography
import Foundation
import HTTPClient
import Sandbox
import SandboxGateway
import TestSupport
import Testing

/// The sandbox gateway's merchant-token API as Apple documents it (merchant-tokens.md §3–4): the headers Apple
/// requires, `ErrorResponse` bodies, `400` for an event it does not have, `reason` on every event, and Update
/// Merchant Metadata; and the payment session's third initiative, `in_app`.
@Suite("The sandbox gateway's merchant-token API, as Apple documents it")
struct MerchantTokenGatewayTests {
    let headers = [("x-request-id", "test-1"), ("Content-Type", "application/json")]

    func identified(_ sandbox: Sandbox) -> HTTPClient {
        SandboxGatewayTests().client(for: sandbox, identity: sandbox)
    }

    /// The gateway on the shared sandbox, a client with the merchant's identity and a merchant token issued.
    func startedWithToken() async throws -> (Sandbox, SandboxGateway, HTTPClient, String) {
        let sandbox = try await GatewaySandboxes.gatewaySandbox()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        return (sandbox, gateway, identified(sandbox), try issued(sandbox))
    }

    func base(_ gateway: SandboxGateway, _ sandbox: Sandbox) -> String {
        "\(gateway.url)/paymentservices/v1/merchantId/\(sandbox.merchantIdentifier)/merchantToken"
    }

    /// A merchant token the sandbox issued, registered with a notification URL.
    func issued(_ sandbox: Sandbox) throws -> String {
        let card = try #require(SandboxCard.testCard(network: .visa))
        let request = MintRequest(card: card, amount: 1, currencyCode: "USD")
        return try sandbox.mintWithMerchantToken(request, tokenNotificationURL: "https://shop.example.com/apple-pay")
            .merchantToken.identifier
    }

    /// Apple's `ErrorResponse`: exactly `errorMessage`, `statusCode` and `subStatusCode`.
    func expectErrorResponse(_ response: HTTPClientResponse, status: Int) throws {
        #expect(response.status == status)
        let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        #expect(Set(object.keys) == ["errorMessage", "statusCode", "subStatusCode"], "\(object)")
        #expect(object["statusCode"] as? Int == status)
        #expect(object["subStatusCode"] is Int && object["errorMessage"] is String)
    }

    @Test("events: the headers Apple requires, 400 with an ErrorResponse for an unknown event, reason on every event")
    func events() async throws {
        let (sandbox, gateway, client, token) = try await startedWithToken()
        for type in ["UPDATED_METADATA", "UPDATED_CARD_ART", "UNLINK"] {
            let emission = try await MerchantTokenEvents.emit(type, sandbox: sandbox, merchantToken: token, attempts: 1)
            let url = base(gateway, sandbox) + "/event/\(emission.eventId)"
            let answer = try await client.send(HTTPClientRequest(url: url, headers: headers))
            #expect(answer.status == 200)
            let event = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            #expect((event["reason"] as? String)?.isEmpty == false, "\(type) carries a reason")
            if type == "UPDATED_METADATA" {
                let card = try #require(
                    (event["merchantTokenMetadata"] as? [String: Any])?["cardMetadata"] as? [String: Any])
                #expect((card["fpanSuffix"] as? String)?.count == 4 && card["suffix"] == nil)
                #expect(card["cardCountry"] as? String == "US")
            }
            // Without Content-Type or x-request-id: refused, as Apple marks both required.
            try expectErrorResponse(
                try await client.send(HTTPClientRequest(url: url, headers: [("x-request-id", "t")])), status: 400)
            try expectErrorResponse(
                try await client.send(HTTPClientRequest(url: url, headers: [("Content-Type", "application/json")])),
                status: 400)
        }
        try expectErrorResponse(
            try await client.send(HTTPClientRequest(url: base(gateway, sandbox) + "/event/0123abcd", headers: headers)),
            status: 400)
        #expect(gateway.activity.refused["eventNotFound"] == 1)
        await gateway.shutdown()
    }

    @Test("updateMerchantMetadata changes a token's notification URL; refuses another merchant's token and http")
    func updateMerchantMetadata() async throws {
        let (sandbox, gateway, client, token) = try await startedWithToken()
        func update(_ identifier: String, _ url: String) async throws -> HTTPClientResponse {
            let body = try JSONSerialization.data(withJSONObject: [
                "merchantTokenIdentifier": identifier, "merchantMetadata": ["tokenNotificationURL": url],
            ])
            return try await client.send(
                .postJSON(base(gateway, sandbox) + "/updateMerchantMetadata", body: body, headers: [headers[0]]))
        }
        let moved = try await update(token, "https://new.example.com/apple-pay")
        #expect(moved.status == 200)
        #expect(sandbox.merchantTokens.token(token)?.tokenNotificationURL == "https://new.example.com/apple-pay")
        try expectErrorResponse(try await update("DNITHE000000000000000000", "https://new.example.com"), status: 404)
        try expectErrorResponse(try await update(token, "http://new.example.com/apple-pay"), status: 400)
        #expect(gateway.activity.merchantMetadataUpdates == 1)
        await gateway.shutdown()
    }

    @Test("the payment session takes Apple's in_app initiative, with a context that is not a domain name")
    func inAppInitiative() async throws {
        let sandbox = try await GatewaySandboxes.gatewaySandbox()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        let tests = SandboxGatewayTests()
        var body = SandboxGatewayTests.validBody
        body["initiative"] = "in_app"
        body["initiativeContext"] = "com.example.CoffeeApp"
        let response = try await tests.post(identified(sandbox), gateway, body)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        body["initiativeContext"] = ""
        #expect(try await tests.post(identified(sandbox), gateway, body).status == 400)
        await gateway.shutdown()
    }
}

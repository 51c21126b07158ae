import Foundation
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantTestSupport
import Sandbox
import Testing

/// `POST /v1/sandbox/tokens`, the web checkout page's sandbox sheet: a merchant token (MPAN) whenever the
/// checkout's payment request carries a recurring, automatic-reload or deferred request, registered with that
/// request's `tokenNotificationURL`, as Apple does; a device token otherwise.
@Suite("The web sandbox sheet's tokens")
struct SandboxTokensTests {
    /// The payment body the page posts after the sheet's authorization (the sandbox wallet's contacts).
    static func payment(token: Any) throws -> Data {
        try ServerHarness.paymentJSON(token: token, givenName: "Jane", familyName: "Appleseed")
    }

    @Test(
        "a plan checkout gets a merchant token registered with its tokenNotificationURL; paying it starts the plan",
        arguments: [
            ("BEANS-MONTHLY", "recurringPaymentRequest"), ("CAFE-CARD", "automaticReloadPaymentRequest"),
            ("TASTING-SEAT", "deferredPaymentRequest"),
        ])
    func planCheckoutGetsMerchantToken(sku: String, requestKey: String) async throws {
        try await ServerHarness.with(processor: SandboxProcessor(), live: true) { server in
            let checkout = try await server.createCheckout([["sku": sku, "quantity": 1]])
            let shown = try await server.get("/v1/checkouts/\(checkout.id)", checkoutSecret: checkout.secret)
            let special = try ((shown.json["paymentRequest"] as? [String: Any])?[requestKey] as? [String: Any])
                .orThrow("no \(requestKey)")
            let notificationURL = try (special["tokenNotificationURL"] as? String).orThrow("tokenNotificationURL")

            let minted = try await server.post("/v1/sandbox/tokens", json: ["checkoutId": checkout.id, "card": "visa"])
            #expect(minted.status == 200, "\(minted.text)")
            #expect(minted.json["merchantToken"] as? Bool == true)
            let token = try minted.json["token"].orThrow("no token")
            // The answer carries the encrypted token only: no MPAN, no identifier in the clear.
            #expect(!minted.text.contains("DNITHE"))

            let paid = try await server.pay(checkout, raw: try Self.payment(token: token))
            #expect(paid.status == 200, "\(paid.text)")
            #expect(paid.json["merchantToken"] as? Bool == true)
            let id = try (paid.json["subscriptionId"] as? String).orThrow("no subscription: \(paid.text)")
            let subscription = try #require(try await server.application.api.subscriptions?.store.subscription(id: id))
            let identifier = try subscription.merchantTokenIdentifier.orThrow("no merchant token identifier")
            #expect(identifier.hasPrefix("DNITHE"))
            // The sandbox registered the token as Apple would, with the request's notification URL.
            let record = try server.sandbox.merchantTokens.token(identifier).orThrow("not registered")
            #expect(record.tokenNotificationURL == notificationURL)
            #expect(record.unlinkedAt == nil)
        }
    }

    @Test("a checkout without a plan gets a device token, and pays without a subscription")
    func plainCheckoutGetsDeviceToken() async throws {
        try await ServerHarness.with(processor: SandboxProcessor()) { server in
            let checkout = try await server.createCheckout()
            _ = try await server.shipToCalifornia(checkout)
            let minted = try await server.post("/v1/sandbox/tokens", json: ["checkoutId": checkout.id, "card": "visa"])
            #expect(minted.status == 200, "\(minted.text)")
            #expect(minted.json["merchantToken"] as? Bool == false)
            let token = try minted.json["token"].orThrow("no token")
            let paid = try await server.pay(checkout, raw: try Self.payment(token: token))
            #expect(paid.status == 200, "\(paid.text)")
            #expect(paid.json["subscriptionId"] == nil)
            #expect(paid.json["merchantToken"] == nil)
        }
    }
}

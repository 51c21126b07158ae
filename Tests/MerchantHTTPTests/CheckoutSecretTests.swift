import ApplePay
import Foundation
import HTTPCore
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantTestSupport
import TestSupport
import Testing

/// Issue 30: a checkout's id is in every log line, so it opens nothing; its client secret, given once in the
/// creation answer, is the key to every route under `/v1/checkouts/{id}` (`Checkout-Secret`).
@Suite("Checkout secret: every checkout route wants it, and answers anyone else as an unknown checkout")
struct CheckoutSecretTests {
    /// The routes under a checkout but the payment: the read and the four sheet updates.
    static let checkoutRoutes = ["", "/shipping-contact", "/shipping-method", "/payment-method", "/coupon"]

    /// A body `route` takes (`nil`: the read, a `GET`).
    static func body(_ route: String) -> [String: Any]? {
        switch route {
        case "/shipping-contact":
            ["locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"]
        case "/shipping-method": ["identifier": "express"]
        case "/payment-method": ["type": "credit", "network": "Visa"]
        case "/coupon": ["couponCode": "WELCOME10"]
        default: nil
        }
    }

    /// A request to `route` of `checkoutID` with `secret` as its `Checkout-Secret` (none when `nil`).
    static func call(
        _ server: ServerHarness, _ checkoutID: String, _ route: String, body: [String: Any]?, secret: String?
    ) async throws -> ServerHarness.Reply {
        let path = "/v1/checkouts/\(checkoutID)\(route)"
        guard let body else { return try await server.get(path, checkoutSecret: secret) }
        return try await server.post(path, json: body, checkoutSecret: secret)
    }

    @Test("the creation answer carries clientSecret: 32 hex digits, apart from the id and the payment request")
    func creationAnswer() async throws {
        try await ServerHarness.with { server in
            let created = try await server.post("/v1/checkouts", json: ["items": [["sku": "MUG-01", "quantity": 1]]])
            #expect(created.status == 201)
            let secret = try #require(created.json["clientSecret"] as? String)
            #expect(secret.count == 32 && secret.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            let id = try #require(created.json["id"] as? String)
            #expect(!id.contains(secret))
            let request = try JSONSerialization.data(withJSONObject: try #require(created.json["paymentRequest"]))
            #expect(!String(decoding: request, as: UTF8.self).contains(secret))
            let other = try await server.createCheckout()
            #expect(other.secret != secret, "each checkout has a secret of its own")
            // The read answers the payment request, not the secret again.
            let shown = try await server.get("/v1/checkouts/\(id)", checkoutSecret: secret)
            #expect(shown.status == 200)
            #expect(shown.json["clientSecret"] == nil)
            #expect(!shown.text.contains(secret))
        }
    }

    @Test(
        "read and sheet updates: 404 without the header or with a wrong one, as for an unknown checkout; 200 with it",
        arguments: checkoutRoutes)
    func everyRoute(_ route: String) async throws {
        let body = Self.body(route)
        try await ServerHarness.with(live: true) { server in
            let checkout = try await server.createCheckout()
            let other = try await server.createCheckout()
            let unknownID = "chk_" + String(repeating: "0", count: 24)
            let unknown = try await Self.call(server, unknownID, route, body: body, secret: checkout.secret)
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "checkoutNotFound")
            let eventsBefore = try server.counts().events
            var flipped = Array(checkout.secret)
            flipped[31] = flipped[31] == "0" ? "1" : "0"
            let wrongs: [(String?, Comment)] = [
                (nil, "no header"), ("", "an empty header"), (String(flipped), "the last digit changed"),
                (String(checkout.secret.dropLast()), "one digit short"), (checkout.secret + "0", "one digit more"),
                (checkout.secret.uppercased(), "upper case"), (other.secret, "another checkout's secret"),
            ]
            for (wrong, comment) in wrongs {
                let reply = try await Self.call(server, checkout.id, route, body: body, secret: wrong)
                #expect(reply.status == 404, comment)
                #expect(reply.errorCode == "checkoutNotFound", comment)
                // Byte for byte the answer of an unknown checkout, but for the id the path named.
                #expect(reply.text == unknown.text.replacingOccurrences(of: unknownID, with: checkout.id), comment)
                #expect(reply.headers["Content-Type"] == unknown.headers["Content-Type"], comment)
            }
            #expect(try server.counts().events == eventsBefore, "a refused update writes nothing")
            let right = try await Self.call(server, checkout.id, route, body: body, secret: checkout.secret)
            #expect(right.status == 200, "\(right.text)")
        }
    }

    @Test("a refused sheet update changes nothing: the coupon posted without the secret is not applied")
    func refusedUpdateChangesNothing() async throws {
        try await ServerHarness.with { server in
            let checkout = try await server.createCheckout()
            let refused = try await server.post(
                "/v1/checkouts/\(checkout.id)/coupon", json: ["couponCode": "WELCOME10"])
            #expect(refused.status == 404)
            let shown = try await server.get("/v1/checkouts/\(checkout.id)", checkoutSecret: checkout.secret)
            let request = try #require(shown.json["paymentRequest"] as? [String: Any])
            #expect((request["total"] as? [String: Any])?["amount"] as? String == checkout.total)
            #expect(request["couponCode"] == nil)
        }
    }

    @Test("the payment: 404 without the secret or with a wrong one (nothing opened, charged or counted); paid with it")
    func payment() async throws {
        let processor = SandboxProcessor()
        try await ServerHarness.with(processor: processor, live: true) { server in
            let (checkout, body) = try await server.shippedCheckout()
            let path = "/v1/checkouts/\(checkout.id)/payment"
            let unknown = try await server.post(
                "/v1/checkouts/chk_\(String(repeating: "0", count: 24))/payment", raw: body,
                checkoutSecret: checkout.secret)
            #expect(unknown.status == 404)
            for wrong in [nil, "", String(repeating: "0", count: 32), String(checkout.secret.reversed())] {
                let reply = try await server.post(path, raw: body, checkoutSecret: wrong)
                #expect(reply.status == 404, "\(wrong ?? "no header")")
                #expect(reply.errorCode == "checkoutNotFound")
                #expect(reply.json["orderId"] == nil)
            }
            #expect(processor.chargeCount == 0)
            let counts = try server.counts()
            #expect(counts.orders == 0 && counts.payments == 0)
            #expect(!(try await server.get("/metrics").text).contains("applepay_payments_total{outcome="))
            let paid = try await server.pay(checkout, raw: body)
            #expect(paid.status == 200, "\(paid.text)")
            #expect(paid.json["orderId"] is String)
            // A retry of the paid payment (its answer lost) still needs the secret.
            let replay = try await server.post(path, raw: body)
            #expect(replay.status == 404)
            #expect(replay.json["orderSecret"] == nil)
            #expect(
                try await server.pay(checkout, raw: body).json["orderId"] as? String == paid.json["orderId"] as? String)
            #expect(processor.chargeCount == 1)
        }
    }

    @Test("a plan checkout's managementURL (the subscription's secret) is answered to the holder of its secret only")
    func managementSecret() async throws {
        try await ServerHarness.with(processor: SandboxProcessor()) { server in
            let plan = try await server.createCheckout([["sku": "BEANS-MONTHLY", "quantity": 1]])
            let stored = try #require(try await server.application.api.store.checkout(id: plan.id))
            let subscriptionSecret = try #require(stored.subscriptionSecret)
            #expect(subscriptionSecret != plan.secret, "two secrets, for two doors")
            for route in Self.checkoutRoutes {
                let refused = try await Self.call(server, plan.id, route, body: Self.body(route), secret: nil)
                #expect(refused.status == 404, "\(route)")
                #expect(!refused.text.contains(subscriptionSecret), "\(route)")
            }
            let minted = try await server.post("/v1/sandbox/tokens", json: ["checkoutId": plan.id, "card": "visa"])
            #expect(!minted.text.contains(subscriptionSecret))
            let shown = try await server.get("/v1/checkouts/\(plan.id)", checkoutSecret: plan.secret)
            let recurring = try #require(
                (shown.json["paymentRequest"] as? [String: Any])?["recurringPaymentRequest"] as? [String: Any])
            #expect((recurring["managementURL"] as? String)?.hasSuffix("&secret=\(subscriptionSecret)") == true)
            // The page of a subscription that has not started wants the subscription's secret, not the checkout's.
            let page = try await server.get("/v1/subscriptions/manage?checkout=\(plan.id)&secret=\(plan.secret)")
            #expect(page.status == 404)
        }
    }

    @Test("a checkout stored before checkouts had secrets (none in its state) refuses every secret, and no header")
    func checkoutWithoutSecret() async throws {
        try await ServerHarness.with { server in
            // What an earlier release stored: the state JSON has no clientSecret.
            let legacy = Checkout(
                id: "chk_" + String(repeating: "a", count: 24), items: [CheckoutItem(sku: "MUG-01", quantity: 1)],
                currency: .usDollar, applicationData: Data("checkout:legacy:0".utf8).base64EncodedString(),
                createdAt: Date())
            #expect(legacy.clientSecret == nil)
            try await server.application.api.store.insertCheckout(legacy)
            #expect(try await server.application.api.store.checkout(id: legacy.id)?.clientSecret == nil)
            for secret in [nil, "", "null", String(repeating: "0", count: 32)] {
                for route in Self.checkoutRoutes {
                    let reply = try await Self.call(server, legacy.id, route, body: Self.body(route), secret: secret)
                    #expect(reply.status == 404, "\(route) with \(secret ?? "no header")")
                }
                let payment = try await server.post(
                    "/v1/checkouts/\(legacy.id)/payment",
                    raw: try server.paymentBody(amount: "12.00", applicationData: legacy.applicationData),
                    checkoutSecret: secret)
                #expect(payment.status == 404)
            }
        }
    }

    @Test("the secret is never logged nor kept in the event log: not on success, not when it is wrong")
    func notLogged() async throws {
        try await ServerHarness.with(live: true) { server in
            let (checkout, _) = try await server.shippedCheckout()
            for route in Self.checkoutRoutes {
                #expect(
                    try await Self.call(server, checkout.id, route, body: Self.body(route), secret: checkout.secret)
                        .status
                        == 200)
            }
            let wrong = String(repeating: "f", count: 32)
            _ = try await Self.call(server, checkout.id, "", body: nil, secret: wrong)
            // Over the socket with a header of another spelling, and with the header twice.
            _ = try await server.send(
                "GET", "/v1/checkouts/\(checkout.id)", headers: [("checkout-secret", checkout.secret)])
            _ = try await server.send(
                "GET", "/v1/checkouts/\(checkout.id)",
                headers: [("Checkout-Secret", wrong), ("Checkout-Secret", checkout.secret)])
            // The sheet updates above changed the total: a fresh token for it pays.
            let shown = try await server.get("/v1/checkouts/\(checkout.id)", checkoutSecret: checkout.secret)
            let total = try #require(
                ((shown.json["paymentRequest"] as? [String: Any])?["total"] as? [String: Any])?["amount"] as? String)
            let paid = try await server.pay(
                checkout, raw: try server.paymentBody(amount: total, applicationData: checkout.applicationData))
            #expect(paid.status == 200, "\(paid.text)")
            let log = server.log.text
            #expect(server.log.requests.count >= Self.checkoutRoutes.count + 4)
            #expect(server.log.requests.contains { $0["checkoutId"] as? String == checkout.id })
            #expect(!log.contains(checkout.secret))
            #expect(!log.contains(wrong))
            #expect(!log.lowercased().contains("checkout-secret"))
            #expect(!(try server.dump("events")).contains(checkout.secret))
        }
    }
}

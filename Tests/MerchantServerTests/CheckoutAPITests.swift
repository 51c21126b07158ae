import Foundation
import HTTPClient
import HTTPCore
import MerchantCore
import MerchantServer
import MerchantTestSupport
import SQLite
import TestSupport
import Testing

@Suite("Checkout API over HTTP")
struct CheckoutAPITests {
    @Test("products, a checkout with its payment request, and the four sheet updates")
    func checkoutFlow() async throws {
        try await ServerHarness.with(live: true) { server in
            let products = try await server.get("/v1/products")
            #expect(products.status == 200)
            let list = products.json["products"] as? [[String: Any]]
            #expect(list?.contains { $0["sku"] as? String == "MUG-01" && $0["price"] as? String == "12.00" } == true)

            let created = try await server.post("/v1/checkouts", json: ["items": [["sku": "MUG-01", "quantity": 2]]])
            #expect(created.status == 201)
            let id = try (created.json["id"] as? String).orThrow("id")
            let secret = try (created.json["clientSecret"] as? String).orThrow("clientSecret")
            let request = try (created.json["paymentRequest"] as? [String: Any]).orThrow("paymentRequest")
            #expect(request["currencyCode"] as? String == "USD")
            #expect((request["total"] as? [String: Any])?["label"] as? String == "Example Coffee Roasters")
            #expect((request["merchantCapabilities"] as? [String])?.contains("supports3DS") == true)
            #expect((request["applicationData"] as? String)?.isEmpty == false)
            #expect((request["shippingMethods"] as? [Any])?.isEmpty == false)

            let contact = try await server.post(
                "/v1/checkouts/\(id)/shipping-contact",
                json: [
                    "locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US",
                ], checkoutSecret: secret)
            #expect(contact.status == 200)
            #expect(contact.json["newTotal"] != nil)
            #expect(contact.json["newLineItems"] != nil)
            let methods = try (contact.json["newShippingMethods"] as? [[String: Any]]).orThrow("methods")
            #expect(methods.count >= 2)

            let second = try (methods.last?["identifier"] as? String).orThrow("identifier")
            let method = try await server.post(
                "/v1/checkouts/\(id)/shipping-method", json: ["identifier": second], checkoutSecret: secret)
            #expect(method.status == 200)
            #expect(method.json["newShippingMethods"] == nil)
            let unknownMethod = try await server.post(
                "/v1/checkouts/\(id)/shipping-method", json: ["identifier": "teleport"], checkoutSecret: secret)
            #expect(unknownMethod.status == 400)
            #expect(unknownMethod.errorCode == "unknownShippingMethod")

            let card = try await server.post(
                "/v1/checkouts/\(id)/payment-method", json: ["type": "credit", "network": "Visa"],
                checkoutSecret: secret)
            #expect(card.status == 200)

            let coupon = try await server.post(
                "/v1/checkouts/\(id)/coupon", json: ["couponCode": "WELCOME10"], checkoutSecret: secret)
            #expect(coupon.status == 200)
            let lines = try (coupon.json["newLineItems"] as? [[String: Any]]).orThrow("lines")
            #expect(lines.contains { ($0["amount"] as? String)?.hasPrefix("-") == true })
            let badCoupon = try await server.post(
                "/v1/checkouts/\(id)/coupon", json: ["couponCode": "NOPE"], checkoutSecret: secret)
            #expect((badCoupon.json["errors"] as? [[String: Any]])?.first?["code"] as? String == "couponCodeInvalid")

            let far = try await server.post(
                "/v1/checkouts/\(id)/shipping-contact", json: ["locality": "Nowhere", "countryCode": "AQ"],
                checkoutSecret: secret)
            #expect(far.status == 200)
            #expect((far.json["errors"] as? [[String: Any]])?.first?["code"] as? String == "addressUnserviceable")
        }
    }

    @Test("errors are JSON with the right status: bad JSON, wrong shape, unknown checkout, route and method")
    func errors() async throws {
        try await ServerHarness.with { server in
            let notJSON = try await server.post("/v1/checkouts", raw: Data("{\"items\": [".utf8))
            #expect(notJSON.status == 400)
            #expect(notJSON.errorCode == "invalidJSON")
            let empty = try await server.post("/v1/checkouts", raw: Data())
            #expect(empty.errorCode == "invalidJSON")
            let shape = try await server.post("/v1/checkouts", json: ["items": [["sku": 7, "quantity": 1]]])
            #expect(shape.status == 400)
            #expect(shape.errorCode == "invalidRequest")
            #expect(
                (shape.json["error"] as? [String: Any])?["message"] as? String
                    == "Field items[0].sku should be a string.")
            let unknownProduct = try await server.post(
                "/v1/checkouts", json: ["items": [["sku": "NOPE", "quantity": 1]]])
            #expect(unknownProduct.errorCode == "unknownProduct")
            let unknownCheckout = try await server.post(
                "/v1/checkouts/chk_000000000000000000000000/coupon", json: ["couponCode": "WELCOME10"])
            #expect(unknownCheckout.status == 404)
            #expect(unknownCheckout.errorCode == "checkoutNotFound")
            let unknownOrder = try await server.get("/v1/orders/ord_nothing")
            #expect(unknownOrder.status == 404)
            #expect(unknownOrder.errorCode == "orderNotFound")
            let route = try await server.get("/v2/anything")
            #expect(route.status == 404)
            #expect(route.errorCode == "notFound")
            let method = try await server.get("/v1/checkouts")
            #expect(method.status == 405)
            #expect(method.errorCode == "methodNotAllowed")
            #expect(try server.counts().orders == 0)
        }
    }

    @Test("a plan with other products, or two of it: 400 planNotAlone, and the catalog marks plans (the page's notice)")
    func planNotAlone() async throws {
        try await ServerHarness.with { server in
            // The checkout page shows its "bought on its own" notice on this code, for the cart's products that
            // have a `plan` in the catalog.
            let products = try await server.get("/v1/products")
            let catalog = try (products.json["products"] as? [[String: Any]]).orThrow("no products")
            let plans = Set(catalog.filter { $0["plan"] != nil }.compactMap { $0["sku"] as? String })
            #expect(plans == ["BEANS-MONTHLY", "CAFE-CARD", "TASTING-SEAT"])
            for items in [
                [["sku": "MUG-01", "quantity": 1], ["sku": "BEANS-MONTHLY", "quantity": 1]],
                [["sku": "BEANS-MONTHLY", "quantity": 2]],
                [["sku": "BEANS-MONTHLY", "quantity": 1], ["sku": "CAFE-CARD", "quantity": 1]],
            ] {
                let refused = try await server.post("/v1/checkouts", json: ["items": items])
                #expect(refused.status == 400 && refused.errorCode == "planNotAlone", "\(items)")
                #expect(refused.json["paymentRequest"] == nil)
            }
            // The notice's button: the plan alone, quantity 1, is priced.
            let alone = try await server.post(
                "/v1/checkouts", json: ["items": [["sku": "BEANS-MONTHLY", "quantity": 1]]])
            #expect(alone.status == 201 || alone.status == 200, "\(alone.text)")
            #expect(alone.json["paymentRequest"] != nil)
            #expect(try server.counts().orders == 0)
        }
    }

    @Test("a body over 64 KB is refused with 413 before it is read; nothing is stored")
    func bodyLimit() async throws {
        try await ServerHarness.with(live: true) { server in
            var items: [[String: Any]] = []
            for _ in 0..<3000 { items.append(["sku": "MUG-01", "quantity": 1]) }
            let body = try JSONSerialization.data(withJSONObject: ["items": items])
            #expect(body.count > 64 * 1024)
            let reply = try await server.post("/v1/checkouts", raw: body)
            #expect(reply.status == 413)
            #expect(reply.errorCode == "payloadTooLarge")
            let connection = try Connection(path: server.databasePath, readOnly: true)
            #expect(try connection.query("SELECT count(*) AS n FROM checkouts").first?.int64("n") == 0)
            #expect(
                server.log.requests.contains {
                    $0["status"] as? Int == 413 && $0["code"] as? String == "payloadTooLarge"
                })
        }
    }

    @Test("answers (store included) while Swift's cooperative pool is held by blocking work elsewhere")
    func independentOfTheCooperativePool() async throws {
        // Kept apart from the tests that time the pool (see `CooperativePool`).
        try await CooperativePool.blockingEveryThread {
            try await ServerHarness.with { server in
                let checkout = try await server.createCheckout()
                let url = server.base + "/v1/checkouts/\(checkout.id)/coupon"
                let blockers = (0..<ProcessInfo.processInfo.activeProcessorCount + 1).map { _ in
                    Task.detached { _ = usleep(600_000) }
                }
                let (status, elapsed) = try await blocking { () throws -> (Int, Duration) in
                    usleep(100_000)
                    let clock = ContinuousClock()
                    let start = clock.now
                    let reply = try HTTPClient().send(
                        HTTPClientRequest.postJSON(
                            url, body: Data("{\"couponCode\": \"WELCOME10\"}".utf8),
                            headers: [("Checkout-Secret", checkout.secret)]))
                    return (reply.status, clock.now - start)
                }
                for blocker in blockers { await blocker.value }
                #expect(status == 200)
                #expect(elapsed < .milliseconds(350))
            }
        }
    }

    @Test("health, domain association, metrics")
    func operations() async throws {
        try await ServerHarness.with(
            configure: { $0.store.domainAssociation = "ASSOCIATION-FILE-CONTENTS" },
            body: {
                server in
                #expect(try await server.get("/healthz").json["status"] as? String == "ok")
                let association = try await server.get("/.well-known/apple-developer-merchantid-domain-association")
                #expect(association.status == 200)
                #expect(association.text == "ASSOCIATION-FILE-CONTENTS")
                _ = try await server.get("/v1/products")
                _ = try await server.get("/nope")
                let metrics = try await server.get("/metrics").text
                #expect(
                    metrics.contains(
                        "applepay_http_requests_total{route=\"/v1/products\",method=\"GET\",status=\"200\"} 1")
                )
                #expect(
                    metrics.contains(
                        "applepay_http_requests_total{route=\"other\",method=\"GET\",status=\"404\"} 1"))
                #expect(
                    metrics.contains(
                        "applepay_http_request_duration_seconds_bucket{route=\"/v1/products\",le=\"+Inf\"} 1"))
                #expect(metrics.contains("# TYPE applepay_payments_total counter"))
                // One JSON object per line, with route, status and duration.
                let line = try #require(server.log.requests.first { $0["route"] as? String == "/v1/products" })
                #expect(line["status"] as? Int == 200)
                #expect(line["durationMs"] != nil)
                #expect(line["time"] != nil)
                #expect(line["level"] as? String == "info")
            })
    }
}

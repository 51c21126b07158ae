import Foundation
import Foundations
import HTTPCore
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantServer
import MerchantStore
import MerchantTestSupport
import PaymentToken
import Testing

@Suite("Hostile clients: limits, media types, headers, metrics labels")
struct HostileClientTests {
    @Test("every answer carries Cache-Control: no-store and X-Content-Type-Options: nosniff, errors included")
    func securityHeaders() async throws {
        try await ServerHarness.with { server in
            for reply in [
                try await server.get("/v1/products"), try await server.get("/nowhere"),
                try await server.post("/v1/checkouts", json: ["items": []]),
            ] {
                #expect(reply.headers["Cache-Control"] == "no-store")
                #expect(reply.headers["X-Content-Type-Options"] == "nosniff")
            }
        }
    }

    @Test("a POST without Content-Type: application/json is 415; with a charset it is fine")
    func contentType() async throws {
        try await ServerHarness.with { server in
            let body = Data(#"{"items": [{"sku": "MUG-01", "quantity": 1}]}"#.utf8)
            for type in [nil, "text/plain", "application/x-www-form-urlencoded", "application/jsonp"] {
                let headers = type.map { [(name: "Content-Type", value: $0)] } ?? []
                let reply = try await server.send("POST", "/v1/checkouts", headers: headers, body: body)
                #expect(reply.status == 415, "\(type ?? "none")")
                #expect(reply.errorCode == "unsupportedMediaType")
            }
            let reply = try await server.send(
                "POST", "/v1/checkouts", headers: [("Content-Type", "Application/JSON; charset=utf-8")], body: body)
            #expect(reply.status == 201)
        }
    }

    @Test("a field over its limit is 400 fieldTooLong naming the field; an array over its limit too")
    func fieldLimits() async throws {
        try await ServerHarness.with { server in
            let checkout = try await server.createCheckout()
            let (id, secret) = (checkout.id, checkout.secret)
            let long = try await server.post(
                "/v1/checkouts/\(id)/shipping-contact",
                json: ["locality": String(repeating: "x", count: 60_000), "countryCode": "US"], checkoutSecret: secret)
            #expect(long.status == 400)
            #expect(long.errorCode == "fieldTooLong")
            #expect((long.json["error"] as? [String: Any])?["field"] as? String == "locality")
            let sku = try await server.post(
                "/v1/checkouts", json: ["items": [["sku": String(repeating: "s", count: 65), "quantity": 1]]])
            #expect((sku.json["error"] as? [String: Any])?["field"] as? String == "items[0].sku")
            let many = try await server.post(
                "/v1/checkouts", json: ["items": Array(repeating: ["sku": "MUG-01", "quantity": 1], count: 101)])
            #expect(many.errorCode == "fieldTooLong")
            let coupon = try await server.post(
                "/v1/checkouts/\(id)/coupon", json: ["couponCode": String(repeating: "c", count: 65)],
                checkoutSecret: secret)
            #expect((coupon.json["error"] as? [String: Any])?["field"] as? String == "couponCode")
            let fits = try await server.post(
                "/v1/checkouts/\(id)/shipping-contact",
                json: ["locality": String(repeating: "x", count: 128), "countryCode": "US"], checkoutSecret: secret)
            #expect(fits.status == 200)
        }
    }

    @Test("checkout creation is rate limited per client address with 429 and Retry-After; others are not")
    func rateLimit() async throws {
        try await ServerHarness.with(
            configure: {
                $0.rateLimits = RateLimits(
                    checkouts: RateLimit(perMinute: 1, burst: 3), updates: RateLimit(perMinute: 1, burst: 2))
            },
            body: { server in
                func create(from address: String) async -> HTTPResponse {
                    var request = HTTPRequest(
                        method: .post, path: "/v1/checkouts", headers: ["Content-Type": "application/json"],
                        body: Data(#"{"items": [{"sku": "MUG-01", "quantity": 1}]}"#.utf8))
                    request.clientAddress = address
                    return await server.application.api.respond(to: request)
                }
                var statuses: [Int] = []
                for _ in 0..<5 { statuses.append(await create(from: "203.0.113.7").status) }
                #expect(statuses == [201, 201, 201, 429, 429])
                let refused = await create(from: "203.0.113.7")
                #expect(refused.headers["Retry-After"].flatMap(Int.init).map { $0 >= 1 } == true)
                #expect(refused.headers["Cache-Control"] == "no-store")
                #expect(await create(from: "203.0.113.8").status == 201)
            })
    }

    /// Opens no token (these tests never pay).
    struct RefusingOpener: PaymentTokenOpening {
        func open(_ token: Data, expecting expectations: PaymentTokenExpectations) throws(PaymentTokenError)
            -> OpenedPaymentToken
        { throw PaymentTokenError(.signatureInvalid, "no tokens here") }
    }

    @Test("a checkout past its lifetime takes no more sheet updates: 410 checkoutExpired; it can still be read")
    func expiredCheckout() async throws {
        // The API alone (no pruner racing the test), on an in-memory store.
        let store = try SQLiteOrderStore(path: ":memory:")
        let api = MerchantAPI(
            services: MerchantServices(
                configuration: .demo, store: store, processor: SandboxProcessor(), tokenOpener: RefusingOpener(),
                validator: MerchantValidator(
                    merchantIdentifier: "merchant.test", displayName: "Test", domain: nil,
                    gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
                logger: .silent,
                limits: MerchantServices.Limits(checkoutLifetime: .seconds(86_400))))
        let old = try Checkout.create(
            items: [CheckoutItem(sku: "MUG-01", quantity: 1)], configuration: StoreConfiguration.demo,
            now: Date().addingTimeInterval(-2 * 86_400))
        try await store.insertCheckout(old)
        let secret = try #require(old.clientSecret)
        let update = await api.respond(
            to: HTTPRequest(
                method: .post, path: "/v1/checkouts/\(old.id)/coupon",
                headers: ["Content-Type": "application/json", "Checkout-Secret": secret],
                body: Data(#"{"couponCode": "WELCOME10"}"#.utf8)))
        #expect(update.status == 410)
        #expect(String(decoding: update.body, as: UTF8.self).contains("checkoutExpired"))
        // Without its secret an expired checkout is as unknown as any other: its expiry is not told either.
        let stranger = await api.respond(
            to: HTTPRequest(
                method: .post, path: "/v1/checkouts/\(old.id)/coupon", headers: ["Content-Type": "application/json"],
                body: Data(#"{"couponCode": "WELCOME10"}"#.utf8)))
        #expect(stranger.status == 404)
        let read = HTTPRequest(method: .get, path: "/v1/checkouts/\(old.id)", headers: ["Checkout-Secret": secret])
        #expect(await api.respond(to: read).status == 200)
    }

    @Test("the rate limiter's memory is bounded: old buckets are evicted")
    func boundedLimiter() {
        let limiter = RateLimiter(limit: RateLimit(perMinute: 1, burst: 1), maximumKeys: 100)
        for index in 0..<10_000 { _ = limiter.acquire("10.0.\(index / 256).\(index % 256)") }
        #expect(limiter.trackedKeys <= 100)
    }

    @Test("invented methods and routes fold into one `other` label; label values are escaped")
    func metricsLabels() async throws {
        try await ServerHarness.with { server in
            _ = try await server.get("/healthz")
            let before = try await server.get("/metrics").text.split(separator: "\n").count
            _ = try await server.send("M0", "/healthz")
            _ = try await server.send("M0", "/nowhere-0")
            let settled = try await server.get("/metrics").text.split(separator: "\n").count
            for index in 1..<50 {
                _ = try await server.send("M\(index)\"\n", "/healthz")
                _ = try await server.send("X\(index)", "/nowhere-\(index)")
            }
            let text = try await server.get("/metrics").text
            // The same series (lines); only their counts grow.
            let lines = text.split(separator: "\n").count
            #expect(lines == settled, "grew from \(settled) to \(lines) lines (first \(before))")
            #expect(!text.contains("M1"))
            #expect(text.contains(#"route="other",method="other",status="404""#))
        }
        let metrics = MerchantMetrics()
        metrics.recordPayment(outcome: "a\"b\\c\nd")
        #expect(metrics.render().contains(#"outcome="a\"b\\c\nd""#))
    }
}

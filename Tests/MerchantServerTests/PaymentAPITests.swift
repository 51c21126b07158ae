import ApplePay
import Foundation
import Foundations
import MerchantCore
import MerchantSandbox
import MerchantServer
import MerchantTestSupport
import Sandbox
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

func card(endingIn suffix: String) throws -> SandboxCard {
    try SandboxCard(network: .visa, devicePAN: testPAN(endingIn: suffix), expirationDate: "291231")
}

@Suite("Payment API over HTTP with sandbox tokens")
struct PaymentAPITests {
    @Test(
        "a valid token pays the checkout once; the order shows the last four digits only; a replay returns the first outcome"
    )
    func successAndReplay() async throws {
        let processor = SandboxProcessor(hangDuration: .seconds(5))
        try await ServerHarness.with(processor: processor, live: true) { server in
            let (checkout, body, paid) = try await server.paidCheckout()
            #expect(paid.status == 200)
            #expect(paid.json["status"] as? String == "success")
            let orderID = try (paid.json["orderId"] as? String).orThrow("orderId: \(paid.text)")
            let secret = try (paid.json["orderSecret"] as? String).orThrow("orderSecret: \(paid.text)")

            let replay = try await server.pay(checkout, raw: body)
            #expect(replay.status == 200)
            #expect(replay.json["orderId"] as? String == orderID)
            #expect(replay.body == paid.body, "a replay answers byte for byte what the first attempt answered")
            #expect(processor.chargeCount == 1)
            #expect(try server.counts().orders == 1)
            #expect(try server.statuses() == ["paid/approved"])

            // The customer's view needs the order's secret, and shows no contacts.
            #expect(try await server.get("/v1/orders/\(orderID)").status == 404)
            #expect(try await server.get("/v1/orders/\(orderID)?secret=0000").status == 404)
            let order = try await server.get("/v1/orders/\(orderID)?secret=\(secret)")
            #expect(order.status == 200)
            #expect(order.json["status"] as? String == "paid")
            #expect(order.json["shippingContact"] == nil && order.json["billingContact"] == nil)
            #expect(!server.log.text.contains(secret), "the order's secret is never logged")
            let payment = try (order.json["payment"] as? [String: Any]).orThrow("payment")
            #expect(payment["lastFour"] as? String == "0492")
            #expect((order.json["totals"] as? [String: Any])?["total"] as? String == checkout.total)
            // Never the PAN, the expiry or the cryptogram: not in the answer, the database or the log.
            let pan = "4761120010000492"
            #expect(!order.text.contains(pan))
            for table in ["orders", "payments", "events", "checkouts"] {
                #expect(try !server.dump(table).contains(pan))
            }
            #expect(!server.log.text.contains(pan))
            #expect(!server.log.text.contains("onlinePaymentCryptogram"))
            let line = try #require(
                server.log.requests.first { $0["route"] as? String == "/v1/checkouts/{id}/payment" })
            #expect(line["orderId"] as? String == orderID)
            #expect(line["checkoutId"] as? String == checkout.id)
            let metrics = try await server.get("/metrics").text
            #expect(metrics.contains("applepay_payments_total{outcome=\"approved\"} 1"))
            #expect(metrics.contains("applepay_payments_total{outcome=\"replayed\"} 1"))
        }
    }

    @Test("a retry after the token's 5 minutes gets the first answer when it was charged; an uncharged one is refused")
    func lateRetry() async throws {
        try await ServerHarness.withMovableClock { server, processor, clock in
            let (checkout, body, paid) = try await server.paidCheckout()
            #expect(paid.status == 200)
            let (unpaid, stale) = try await server.shippedCheckout()
            clock.move(ahead: 600)  // ten minutes later
            let retry = try await server.pay(checkout, raw: body)
            #expect(retry.status == 200, "\(retry.text)")
            #expect(retry.body == paid.body)
            let refused = try await server.pay(unpaid, raw: stale)
            #expect(refused.status == 400)
            #expect(refused.errorCode == "signingTimeOutOfRange")
            #expect(processor.chargeCount == 1)
        }
    }

    @Test(
        "a retry whose shipping address now prices the checkout differently still gets its first answer: it was charged"
    )
    func retryWithAnotherAddress() async throws {
        try await ServerHarness.with { server in
            let (checkout, body, paid) = try await server.paidCheckout()
            #expect(paid.status == 200)
            var payment = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            var contact = try #require(payment["shippingContact"] as? [String: Any])
            contact["administrativeArea"] = "NY"
            contact["locality"] = "New York"
            contact["postalCode"] = "10001"
            payment["shippingContact"] = contact
            let moved = try JSONSerialization.data(withJSONObject: payment)
            // New York prices the same items differently: a new token for the Californian total would be refused.
            let other = try await server.createCheckout()
            let newYork = try await server.post(
                "/v1/checkouts/\(other.id)/shipping-contact",
                json: ["locality": "New York", "administrativeArea": "NY", "postalCode": "10001", "countryCode": "US"],
                checkoutSecret: other.secret)
            #expect(newYork.status == 200, "\(newYork.text)")
            #expect((newYork.json["newTotal"] as? [String: Any])?["amount"] as? String != checkout.total)

            let retry = try await server.pay(checkout, raw: moved)
            #expect(retry.status == 200, "\(retry.text)")
            #expect(retry.body == paid.body)
            #expect(try server.statuses() == ["paid/approved"])
        }
    }

    @Test("an expired checkout takes no new payment (410 checkoutExpired); a payment recorded in time is replayed")
    func expiredCheckoutPayment() async throws {
        try await ServerHarness.withMovableClock { server, processor, clock in
            let (paid, body, first) = try await server.paidCheckout()
            #expect(first.status == 200)
            let unpaid = try await server.createCheckout()
            let unpaidTotal = try await server.shipToCalifornia(unpaid)
            clock.move(ahead: 2 * 86_400)  // two days later: past the default lifetime of a day
            let later = Date().addingTimeInterval(2 * 86_400)
            let fresh = try server.paymentBody(
                amount: unpaidTotal, applicationData: unpaid.applicationData, signingTime: later)
            let refused = try await server.pay(unpaid, raw: fresh)
            #expect(refused.status == 410, "\(refused.text)")
            #expect(refused.errorCode == "checkoutExpired")
            #expect(refused.json["status"] as? String == "failure")
            let retry = try await server.pay(paid, raw: body)
            #expect(retry.status == 200, "\(retry.text)")
            #expect(retry.body == first.body)
            #expect(processor.chargeCount == 1)
        }
    }

    @Test("the same token submitted twice at once (a double click) charges once; both answers name the same order")
    func doubleSubmit() async throws {
        let processor = SandboxProcessor(hangDuration: .seconds(30))
        try await ServerHarness.with(processor: processor) { server in
            let (checkout, body) = try await server.shippedCheckout()
            let path = "/v1/checkouts/\(checkout.id)/payment"
            async let first = server.post(path, raw: body, checkoutSecret: checkout.secret)
            async let second = server.post(path, raw: body, checkoutSecret: checkout.secret)
            let replies = try await [first, second]
            #expect(replies.map(\.status) == [200, 200])
            #expect(Set(replies.compactMap { $0.json["orderId"] as? String }).count == 1)
            #expect(processor.chargeCount == 1)
            #expect(try server.statuses() == ["paid/approved"])
        }
    }

    @Test("an RSA_v1 token pays too")
    func rsaToken() async throws {
        try await ServerHarness.with { server in
            let (checkout, body) = try await server.shippedCheckout(
                [["sku": "COFFEE-250", "quantity": 1]], version: .rsaV1)
            let paid = try await server.pay(checkout, raw: body)
            #expect(paid.status == 200, "\(paid.text)")
        }
    }

    @Test(
        "refusals before charging leave nothing written: amount, applicationData, signature, age, shape, unknown checkout"
    )
    func refusals() async throws {
        let processor = SandboxProcessor(hangDuration: .seconds(5))
        try await ServerHarness.with(processor: processor) { server in
            var checkout = try await server.createCheckout()
            checkout.total = try await server.shipToCalifornia(checkout)
            let other = try await server.createCheckout()
            let path = "/v1/checkouts/\(checkout.id)/payment"
            func expectRefused(_ body: Data, status: Int = 400, code: String, _ comment: Comment) async throws {
                let reply = try await server.post(path, raw: body, checkoutSecret: checkout.secret)
                #expect(reply.status == status, comment)
                #expect(reply.errorCode == code, "\(comment): \(reply.text)")
                if reply.json["status"] != nil { #expect(reply.json["status"] as? String == "failure") }
                let counts = try server.counts()
                #expect(counts.orders == 0 && counts.payments == 0, comment)
            }
            let cents = try Decimal(string: checkout.total).orThrow("total") + Decimal(string: "0.01")!
            try await expectRefused(
                try server.paymentBody(amount: "\(cents)", applicationData: checkout.applicationData),
                code: "amountMismatch", "one cent more")
            try await expectRefused(
                try server.paymentBody(amount: checkout.total, applicationData: other.applicationData),
                code: "applicationDataMismatch", "a token made for another checkout")
            try await expectRefused(
                try server.paymentBody(amount: checkout.total, applicationData: nil),
                code: "applicationDataMismatch", "a token with no applicationData")
            try await expectRefused(
                try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData) { token in
                    var paymentData = token["paymentData"] as? [String: Any] ?? [:]
                    var data = Array((paymentData["data"] as? String ?? "").utf8)
                    data[10] = data[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                    paymentData["data"] = String(decoding: data, as: UTF8.self)
                    token["paymentData"] = paymentData
                }, code: "signatureInvalid", "ciphertext changed after signing")
            try await expectRefused(
                try server.paymentBody(
                    amount: checkout.total, applicationData: checkout.applicationData,
                    signingTime: Date().addingTimeInterval(-3600)),
                code: "signingTimeOutOfRange", "a token signed an hour ago")
            try await expectRefused(Data("{\"token\": \"abc\"}".utf8), code: "invalidRequest", "token is a string")
            try await expectRefused(
                Data("{\"token\": {\"paymentData\": {\"version\": \"EC_v1\"}}}".utf8), code: "invalidRequest",
                "paymentData without data")
            try await expectRefused(Data("{\"token\": ".utf8), code: "invalidJSON", "cut JSON")

            // A checkout whose sheet still shows an error (an invalid coupon) cannot be paid.
            let blocked = try await server.createCheckout()
            let blockedTotal = try await server.shipToCalifornia(blocked)
            _ = try await server.post(
                "/v1/checkouts/\(blocked.id)/coupon", json: ["couponCode": "NOPE"], checkoutSecret: blocked.secret)
            let notPayable = try await server.pay(
                blocked,
                raw: try server.paymentBody(amount: blockedTotal, applicationData: blocked.applicationData))
            #expect(notPayable.status == 400)
            #expect(notPayable.errorCode == "checkoutNotPayable")
            #expect((notPayable.json["errors"] as? [[String: Any]])?.first?["code"] as? String == "couponCodeInvalid")
            #expect(try server.counts().orders == 0)

            let unknown = try await server.post(
                "/v1/checkouts/chk_ffffffffffffffffffffffff/payment",
                raw: try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData))
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "checkoutNotFound")
            #expect(processor.chargeCount == 0)
            let metrics = try await server.get("/metrics").text
            #expect(metrics.contains("applepay_payments_total{outcome=\"refused\"} 6"))
        }
    }

    @Test("a declined card fails the order with nothing captured; a retry of the same token gets the same answer")
    func declined() async throws {
        let processor = SandboxProcessor(hangDuration: .seconds(5))
        try await ServerHarness.with(processor: processor) { server in
            var checkout = try await server.createCheckout()
            checkout.total = try await server.shipToCalifornia(checkout)
            let body = try server.paymentBody(
                amount: checkout.total, applicationData: checkout.applicationData, card: try card(endingIn: "0051"))
            let first = try await server.pay(checkout, raw: body)
            #expect(first.status == 402)
            #expect(first.json["status"] as? String == "failure")
            #expect(first.errorCode == "insufficientFunds")
            let again = try await server.pay(checkout, raw: body)
            #expect(again.status == 402)
            #expect(again.json["orderId"] as? String == first.json["orderId"] as? String)
            #expect(try server.statuses() == ["declined/declined"])
            #expect(processor.chargeCount == 0)

            // After a decline, another card may pay the same checkout.
            let retry = try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData)
            let paid = try await server.pay(checkout, raw: retry)
            #expect(paid.status == 200)
            #expect(try server.statuses() == ["declined/declined", "paid/approved"])
        }
    }

    @Test("a full processor share refuses a new payment at once with 503 serviceBusy, nothing written or charged")
    func processorShareFull() async throws {
        try await ServerHarness.with(
            configure: {
                $0.store.processor.timeoutSeconds = 20
                $0.processorShare = .init(maximumInFlight: 1, maximumQueued: 0, maximumWait: .seconds(1))
            },
            body: { server in
                // The one place is held by a payment whose processor does not answer (the sandbox's 0054 card).
                var first = try await server.createCheckout()
                first.total = try await server.shipToCalifornia(first)
                let hanging = try server.paymentBody(
                    amount: first.total, applicationData: first.applicationData, card: try card(endingIn: "0054"))
                let held = Task { try await server.pay(first, raw: hanging) }
                while try server.statuses().isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                let (second, body) = try await server.shippedCheckout()
                let before = try server.counts()
                let clock = ContinuousClock()
                let start = clock.now
                let refused = try await server.pay(second, raw: body)
                #expect(clock.now - start < .seconds(15), "refused without waiting for the processor")
                #expect(refused.status == 503)
                #expect(refused.errorCode == "serviceBusy")
                #expect(refused.headers["Retry-After"] == "1")
                #expect(refused.text.contains("nothing was charged"))
                let after = try server.counts()
                #expect(after.orders == before.orders && after.payments == before.payments)
                // Once the place is free, the same token pays.
                _ = try await held.value
                let paid = try await server.pay(second, raw: body)
                #expect(paid.status == 200, "\(paid.text)")
            })
    }

    @Test("a processor that does not answer in time leaves the outcome unknown, then the reconciler settles it")
    func processorTimeout() async throws {
        try await ServerHarness.with(
            configure: { $0.store.processor.timeoutSeconds = 2 },
            body: { server in
                var checkout = try await server.createCheckout()
                checkout.total = try await server.shipToCalifornia(checkout)
                let body = try server.paymentBody(
                    amount: checkout.total, applicationData: checkout.applicationData, card: try card(endingIn: "0054"))
                let clock = ContinuousClock()
                let start = clock.now
                let reply = try await server.pay(checkout, raw: body)
                // Cut off at the 2 s limit, long before the sandbox's 30 s hang ends.
                #expect(clock.now - start < .seconds(20))
                #expect(reply.status == 202)
                #expect(reply.json["status"] as? String == "failure")
                #expect(reply.errorCode == "paymentOutcomeUnknown")
                #expect(!reply.text.contains("nothing was charged"))
                #expect(try server.statuses() == ["unknown/unknown"])
                let orderID = try (reply.json["orderId"] as? String).orThrow("orderId")
                let secret = try (reply.json["orderSecret"] as? String).orThrow("orderSecret")
                let order = try await server.get("/v1/orders/\(orderID)?secret=\(secret)")
                #expect(order.json["status"] as? String == "unknown")
                // Another token for the same checkout is not charged while the first is unconfirmed.
                let second = try await server.pay(
                    checkout,
                    raw: try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData))
                #expect(second.status == 409)
                #expect(second.errorCode == "checkoutPaymentUnconfirmed")
                // The processor has no charge for it (the hang never commits): reconciliation settles it declined.
                let pass = try await server.admin("POST", "/admin/v1/reconcile?olderThanSeconds=0")
                #expect(pass.status == 200, "\(pass.text)")
                #expect(try server.statuses() == ["declined/declined"])
                let settled = try await server.get("/v1/orders/\(orderID)?secret=\(secret)")
                #expect(settled.json["status"] as? String == "declined")
            })
    }

    @Test("a payment body cut short by the client never reaches the store")
    func truncatedBody() async throws {
        try await ServerHarness.with(
            configure: { $0.connectionTimeout = 1 },
            body: { server in
                let checkout = try await server.createCheckout()
                let body = try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData)
                let port = server.application.port
                let head =
                    "POST /v1/checkouts/\(checkout.id)/payment HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Checkout-Secret: \(checkout.secret)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                let answered = try await sendAndHangUp(port: port, data: Data(head.utf8) + body.prefix(body.count / 2))
                #expect(!answered)
                try await Task.sleep(for: .milliseconds(50))
                let counts = try server.counts()
                #expect(counts.orders == 0 && counts.payments == 0)
                #expect(try await server.get("/healthz").status == 200)
            })
    }
}

/// Sends bytes on a fresh connection, closes the sending side, and reports whether any answer came back.
/// Runs on its own thread: blocking socket calls must not occupy Swift's cooperative pool.
func sendAndHangUp(port: UInt16, data: Data) async throws -> Bool {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            let fd = LoopbackSocket.open()
            defer { close(fd) }
            guard LoopbackSocket.connect(fd, port: port) else {
                continuation.resume(throwing: HarnessError("cannot connect"))
                return
            }
            _ = data.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(fd, Int32(SHUT_WR))
            var buffer = [UInt8](repeating: 0, count: 1024)
            let received = recv(fd, &buffer, buffer.count, 0)
            continuation.resume(returning: received > 0)
        }.start()
    }
}

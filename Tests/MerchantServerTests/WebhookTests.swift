import ApplePay
import Cryptography
import Foundation
import Foundations
import MerchantCore
import MerchantServer
import MerchantStore
import MerchantTestSupport
import ProcessorAPI
import ProcessorService
import ProviderWebhooks
import SQLite
import TestSupport
import Testing

/// The providers' webhooks on a real server (loopback, libcurl → libmicrohttpd) with a real SQLite store: payments
/// whose outcome was not seen (the processor unreachable) settled by signed events, forgeries ignored and counted.
@Suite("Webhooks: POST /webhooks/stripe, /webhooks/adyen, /webhooks/checkout", .serialized)
struct WebhookTests {
    static let stripeSecret = "whsec_test_webhook_secret_0123456789"
    static let checkoutSecret = "checkout-webhook-secret-0123456789"
    static let adyenKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

    /// A server whose processor never answers (every payment ends `unknown`), taking all three providers' webhooks.
    static func withServer(
        processor: any PaymentProcessor = ThrowingProcessor(), _ body: (ServerHarness) async throws -> Void
    ) async throws {
        let secrets = try TemporaryDirectory(prefix: "webhook-secrets")
        defer { secrets.remove() }
        var files: [WebhookProvider: String] = [:]
        for (provider, text) in [
            (WebhookProvider.stripe, stripeSecret), (.checkout, checkoutSecret), (.adyen, adyenKey + "\n"),
        ] {
            let path = secrets.path(provider.rawValue + ".secret")
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            files[provider] = path
        }
        try await ServerHarness.with(
            processor: processor, live: true, configure: { $0.webhookSecretFiles = files }, body: body)
    }

    /// Pays a new checkout: the processor is unreachable, so the order is `unknown`. Returns the order id, the
    /// payment's transaction id and its amount in minor units.
    static func unknownPayment(_ server: ServerHarness) async throws -> (
        order: String, transaction: String, amount: Int64
    ) {
        var checkout = try await server.createCheckout()
        checkout.total = try await server.shipToCalifornia(checkout)
        let reply = try await server.pay(
            checkout,
            raw: try server.paymentBody(amount: checkout.total, applicationData: checkout.applicationData))
        #expect(reply.status == 202, "\(reply.text)")
        let orderID = try (reply.json["orderId"] as? String).orThrow("orderId")
        let order = try await server.admin("GET", "/admin/v1/orders/\(orderID)")
        let payment = try (order.json["payment"] as? [String: Any]).orThrow("payment")
        let transaction = try (payment["transactionId"] as? String).orThrow("transactionId")
        let amount = try Decimal(string: try (payment["amount"] as? String).orThrow("amount")).orThrow("amount")
        return (orderID, transaction, NSDecimalNumber(decimal: amount * 100).int64Value)
    }

    static func stripeHeader(_ body: Data, secret: String = stripeSecret, at time: Date = Date()) throws -> String {
        let t = Int64(time.timeIntervalSince1970)
        let mac = try HMAC.sha256(key: Data(secret.utf8), message: Data("\(t).".utf8) + body)
        return "t=\(t),v1=\(lowercaseHex(mac))"
    }

    static func postStripe(_ server: ServerHarness, _ event: [String: Any], header: ((Data) throws -> String?)? = nil)
        async throws -> ServerHarness.Reply
    {
        let body = try JSONSerialization.data(withJSONObject: event)
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json; charset=utf-8")]
        if let value = try (header ?? { try stripeHeader($0) })(body) { headers.append(("Stripe-Signature", value)) }
        return try await server.send("POST", "/webhooks/stripe", headers: headers, body: body)
    }

    static func stripeEvent(_ id: String, _ type: String, _ object: [String: Any]) -> [String: Any] {
        ["id": id, "object": "event", "type": type, "data": ["object": object]]
    }

    /// A count from `/metrics`, e.g. `applepay_webhook_rejections_total{provider="stripe",reason="signatureMismatch"}`.
    static func metric(_ server: ServerHarness, _ series: String) async throws -> Int? {
        let text = try await server.get("/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            .flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    static func eventCount(_ server: ServerHarness) throws -> Int64 { try server.counts().events }

    @Test(
        "Stripe: forged and unsigned events change nothing and are counted; a signed one settles; a replay is harmless")
    func stripeSettlesUnknownPayment() async throws {
        try await Self.withServer { server in
            let payment = try await Self.unknownPayment(server)
            #expect(try server.statuses() == ["unknown/unknown"])
            let succeeded = Self.stripeEvent(
                "evt_settle_1", "payment_intent.succeeded",
                [
                    "id": "pi_3Webhook", "object": "payment_intent", "amount": payment.amount,
                    "amount_received": payment.amount, "currency": "usd",
                    "metadata": ["reference": payment.transaction],
                ])
            let before = try Self.eventCount(server)

            let forged = try await Self.postStripe(server, succeeded) {
                try Self.stripeHeader($0, secret: "whsec_someone_else")
            }
            #expect(forged.status == 400)
            #expect(forged.errorCode == "invalidSignature")
            let unsigned = try await Self.postStripe(server, succeeded) { _ in nil }
            #expect(unsigned.status == 400)
            let stale = try await Self.postStripe(server, succeeded) {
                try Self.stripeHeader($0, at: Date().addingTimeInterval(-301))
            }
            #expect(stale.status == 400)
            #expect((stale.json["error"] as? [String: Any])?["field"] as? String == "timestampOutsideTolerance")
            #expect(try server.statuses() == ["unknown/unknown"])
            #expect(try Self.eventCount(server) == before)
            #expect(
                try await Self.metric(
                    server, #"applepay_webhook_rejections_total{provider="stripe",reason="signatureMismatch"}"#) == 1)
            #expect(
                try await Self.metric(
                    server, #"applepay_webhook_rejections_total{provider="stripe",reason="missingSignature"}"#) == 1)
            #expect(
                try await Self.metric(
                    server,
                    #"applepay_webhook_rejections_total{provider="stripe",reason="timestampOutsideTolerance"}"#) == 1)

            let signed = try await Self.postStripe(server, succeeded)
            #expect(signed.status == 200, "\(signed.text)")
            #expect(try server.statuses() == ["paid/approved"])
            let order = try await server.admin("GET", "/admin/v1/orders/\(payment.order)")
            #expect((order.json["payment"] as? [String: Any])?["processorReference"] as? String == "pi_3Webhook")
            let afterSettle = try Self.eventCount(server)
            #expect(afterSettle == before + 1)

            let replay = try await Self.postStripe(server, succeeded)
            #expect(replay.status == 200)
            #expect(try server.statuses() == ["paid/approved"])
            #expect(try Self.eventCount(server) == afterSettle)
            #expect(
                try await Self.metric(server, #"applepay_webhook_events_total{provider="stripe",outcome="duplicate"}"#)
                    == 1)
            #expect(!server.log.text.contains(Self.stripeSecret))
        }
    }

    @Test("Stripe: a refund is recorded against the order once; a dispute is recorded; the order is found by pi_")
    func stripeRefundAndDispute() async throws {
        try await Self.withServer { server in
            let payment = try await Self.unknownPayment(server)
            let settle = try await Self.postStripe(
                server,
                Self.stripeEvent(
                    "evt_settle_2", "payment_intent.succeeded",
                    [
                        "id": "pi_3Refund", "object": "payment_intent", "amount": payment.amount, "currency": "usd",
                        "metadata": ["reference": payment.order],
                    ]))
            #expect(settle.status == 200)
            let refundObject: [String: Any] = [
                "id": "re_3Partial", "object": "refund", "amount": 500, "currency": "usd",
                "payment_intent": "pi_3Refund", "status": "succeeded", "metadata": [:],
            ]
            let refund = try await Self.postStripe(
                server, Self.stripeEvent("evt_refund_1", "refund.created", refundObject))
            #expect(refund.status == 200, "\(refund.text)")
            #expect(try server.statuses() == ["partiallyRefunded/approved"])
            // The same refund in another event (refund.updated after refund.created): recorded once.
            let again = try await Self.postStripe(
                server, Self.stripeEvent("evt_refund_2", "refund.updated", refundObject))
            #expect(again.status == 200)
            let order = try await server.admin("GET", "/admin/v1/orders/\(payment.order)")
            #expect(order.json["refunded"] as? String == "5.00")
            let database = try Connection(path: server.databasePath, readOnly: true)
            let refunds = try database.query("SELECT processor_reference, amount_minor, status FROM refunds")
            #expect(refunds.count == 1)
            #expect(try refunds.first?.optionalString("processor_reference") == "re_3Partial")
            #expect(try refunds.first?.int64("amount_minor") == 500)

            let dispute = try await Self.postStripe(
                server,
                Self.stripeEvent(
                    "evt_dispute_1", "charge.dispute.created",
                    [
                        "id": "dp_3Dispute", "object": "dispute", "amount": payment.amount, "currency": "usd",
                        "payment_intent": "pi_3Refund", "reason": "fraudulent",
                    ]))
            #expect(dispute.status == 200)
            let disputes = try database.query("SELECT order_id, reference, reason, amount_minor FROM disputes")
            #expect(disputes.count == 1)
            #expect(try disputes.first?.string("order_id") == payment.order)
            #expect(try disputes.first?.string("reference") == "dp_3Dispute")
            #expect(try disputes.first?.optionalString("reason") == "fraudulent")
        }
    }

    @Test("Stripe: a plan payment whose answer was lost starts its subscription when a signed event settles it")
    func planPaymentSettledByWebhook() async throws {
        try await ProcessorHarness.with(armed: FaultBody(kind: .dropAfterCommit, count: 1)) { ledger in
            try await Self.withServer(processor: ledger.processor(timeout: .seconds(10))) { server in
                let (checkout, _, lost) = try await server.payWithMerchantToken(sku: "BEANS-MONTHLY")
                #expect(lost.status == 202, "\(lost.text)")
                let orderID = try (lost.json["orderId"] as? String).orThrow("orderId")
                let key = try await FailureTests.transactionID(of: orderID, server)
                try await ledger.waitForCharge(key)
                let amount = try Decimal(string: checkout.total).orThrow("total")
                let settle = try await Self.postStripe(
                    server,
                    Self.stripeEvent(
                        "evt_plan_1", "payment_intent.succeeded",
                        [
                            "id": "pi_3Plan", "object": "payment_intent",
                            "amount": NSDecimalNumber(decimal: amount * 100).int64Value, "currency": "usd",
                            "metadata": ["transaction_id": key],
                        ]))
                #expect(settle.status == 200, "\(settle.text)")
                #expect(try server.statuses() == ["paid/approved"])
                let list = try await server.admin("GET", "/admin/v1/subscriptions")
                let subscriptions = list.json["subscriptions"] as? [[String: Any]] ?? []
                #expect(subscriptions.count == 1, "\(list.text)")
                #expect(subscriptions.first?["orderId"] as? String == orderID)
                #expect(server.log.text.contains("subscription of a settled payment"))
            }
            ledger.service.disarm()
        }
    }

    @Test("Adyen: a signed AUTHORISATION is answered [accepted] and settles; a forged item changes nothing")
    func adyen() async throws {
        try await Self.withServer { server in
            let payment = try await Self.unknownPayment(server)
            let key = try #require(bytes(fromHex: Self.adyenKey))
            func notification(sign: Bool) throws -> Data {
                var item: [String: Any] = [
                    "pspReference": "NC6HT9CRT65ZGN82", "merchantAccountCode": "ExampleECOM",
                    "merchantReference": payment.transaction, "eventCode": "AUTHORISATION", "success": "true",
                    "eventDate": "2026-12-01T10:00:00+01:00",
                    "amount": ["value": payment.amount, "currency": "USD"],
                ]
                let text = AdyenSignature.signedText(
                    of: try JSONValue(parsing: JSONSerialization.data(withJSONObject: item)))
                let mac = try HMAC.sha256(key: sign ? key : Data([1, 2, 3]), message: Data(text.utf8))
                item["additionalData"] = ["hmacSignature": mac.base64EncodedString()]
                return try JSONSerialization.data(
                    withJSONObject: ["live": "false", "notificationItems": [["NotificationRequestItem": item]]])
            }
            let forged = try await server.send(
                "POST", "/webhooks/adyen", headers: [("Content-Type", "application/json")],
                body: try notification(sign: false))
            #expect(forged.status == 400)
            #expect(try server.statuses() == ["unknown/unknown"])
            let signed = try await server.send(
                "POST", "/webhooks/adyen", headers: [("Content-Type", "application/json")],
                body: try notification(sign: true))
            #expect(signed.status == 200)
            #expect(signed.text == "[accepted]")
            #expect(try server.statuses() == ["paid/approved"])
            let replay = try await server.send(
                "POST", "/webhooks/adyen", headers: [("Content-Type", "application/json")],
                body: try notification(sign: true))
            #expect(replay.text == "[accepted]")
            #expect(
                try await Self.metric(
                    server, #"applepay_webhook_rejections_total{provider="adyen",reason="signatureMismatch"}"#)
                    == 1)
        }
    }

    @Test(
        "Checkout.com: a signed payment_declined settles an unknown payment as declined; a bad Cko-Signature does not")
    func checkout() async throws {
        try await Self.withServer { server in
            let payment = try await Self.unknownPayment(server)
            let body = try JSONSerialization.data(
                withJSONObject: [
                    "id": "evt_ckoDeclined", "type": "payment_declined",
                    "data": [
                        "id": "pay_ckoDeclined", "reference": payment.transaction, "amount": payment.amount,
                        "currency": "USD", "response_summary": "Insufficient Funds",
                    ],
                ])
            let mac = try HMAC.sha256(key: Data(Self.checkoutSecret.utf8), message: body)
            let bad = try await server.send(
                "POST", "/webhooks/checkout", headers: [("Cko-Signature", String(repeating: "0", count: 64))],
                body: body)
            #expect(bad.status == 400)
            #expect(try server.statuses() == ["unknown/unknown"])
            let good = try await server.send(
                "POST", "/webhooks/checkout", headers: [("Cko-Signature", lowercaseHex(mac))], body: body)
            #expect(good.status == 200, "\(good.text)")
            #expect(try server.statuses() == ["declined/declined"])
        }
    }
}

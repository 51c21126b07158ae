import ApplePay
import Foundation
import MerchantCore
import Testing

@testable import ProviderWebhooks

@Suite("Provider events read from each provider's bodies")
struct ProviderEventReaderTests {
    private func example(_ path: String) throws -> Data {
        try Data(contentsOf: pspFolder.appendingPathComponent(path))
    }

    @Test("Adyen's own example webhooks: an authorisation, a failed refund, a cancellation (a void decided)")
    func adyenExamples() throws {
        let authorisation = try #require(
            ProviderEventReader.events(.adyen, body: try example("adyen/examples/adyen-webhook-authorisation.json")))
        #expect(
            authorisation == [
                ProviderEvent(
                    provider: "adyen", id: "AUTHORISATION:QFQTPCQ8HXSKGK82:true", kind: .paymentSucceeded,
                    merchantReference: "YOUR_MERCHANT_REFERENCE", paymentReference: "QFQTPCQ8HXSKGK82", amount: 1000,
                    currencyCode: "EUR")
            ])
        let refund = try #require(
            ProviderEventReader.events(.adyen, body: try example("adyen/examples/adyen-webhook-refund.json")))
        #expect(refund.first?.kind == .refundFailed)
        #expect(refund.first?.paymentReference == "9913140798220028")
        #expect(refund.first?.reference == "QFQTPCQ8HXSKGK82")
        // A reversal decided: the payment (originalReference) voided; the request's own reference is not ours.
        let cancellation = try #require(
            ProviderEventReader.events(.adyen, body: try example("adyen/examples/adyen-webhook-cancellation.json")))
        #expect(cancellation.first?.kind == .paymentVoided)
        #expect(cancellation.first?.paymentReference == "9913140798220028")
        #expect(cancellation.first?.merchantReference == nil)
    }

    @Test("Stripe: a payment intent, Stripe's refund fixture in a refund.updated event, a dispute; others not read")
    func stripe() throws {
        let refundObject = try JSONValue(parsing: try example("stripe/examples/stripe-refund-object-fixture.json"))
        let body = try JSONEncoder().encode(
            JSONValue.object([
                "id": .string("evt_1"), "type": .string("refund.updated"),
                "data": .object(["object": refundObject]),
            ]))
        let refund = try #require(ProviderEventReader.events(.stripe, body: body))
        #expect(refund.count == 1)
        #expect(refund.first?.kind == .refundSucceeded)
        #expect(refund.first?.reference == "re_1NnmX5GPxmnHQRkJzG1txqB9")
        #expect(refund.first?.amount == 100)
        #expect(refund.first?.currencyCode == "USD")
        // Stripe's fixture refunds a charge without a PaymentIntent: the charge is the payment's reference.
        #expect(refund.first?.paymentReference == "ch_1NnlpSGPxmnHQRkJcYsK19E8")
        let succeeded = Data(
            #"""
            {"id":"evt_2","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent",
            "amount":1099,"amount_received":1099,"currency":"eur","metadata":{"reference":"ord_1"}}}}
            """#.utf8)
        #expect(
            ProviderEventReader.events(.stripe, body: succeeded) == [
                ProviderEvent(
                    provider: "stripe", id: "evt_2", kind: .paymentSucceeded, merchantReference: "ord_1",
                    paymentReference: "pi_1", amount: 1099, currencyCode: "EUR")
            ])
        let dispute = Data(
            #"{"id":"evt_3","type":"charge.dispute.created","data":{"object":{"id":"dp_1","object":"dispute","amount":5,"currency":"usd","payment_intent":"pi_1","reason":"fraudulent"}}}"#
                .utf8)
        #expect(ProviderEventReader.events(.stripe, body: dispute)?.first?.kind == .disputeOpened)
        #expect(ProviderEventReader.events(.stripe, body: dispute)?.first?.reason == "fraudulent")
        let other = Data(#"{"id":"evt_4","type":"customer.created","data":{"object":{"id":"cus_1"}}}"#.utf8)
        #expect(ProviderEventReader.events(.stripe, body: other) == [])
        #expect(ProviderEventReader.events(.stripe, body: Data("nope".utf8)) == nil)
    }

    @Test("Checkout.com: captured, refunded (the action is the refund), declined; a reason with digits is dropped")
    func checkout() throws {
        func body(_ type: String, _ data: String) -> Data {
            Data(#"{"id":"evt_\#(type)","type":"\#(type)","data":\#(data)}"#.utf8)
        }
        let captured = ProviderEventReader.events(
            .checkout,
            body: body("payment_captured", #"{"id":"pay_1","reference":"ord_1","amount":500,"currency":"GBP"}"#))
        #expect(captured?.first?.kind == .paymentSucceeded)
        #expect(captured?.first?.merchantReference == "ord_1")
        let refunded = ProviderEventReader.events(
            .checkout, body: body("payment_refunded", #"{"id":"pay_1","action_id":"act_9","amount":200}"#))
        #expect(refunded?.first?.kind == .refundSucceeded)
        #expect(refunded?.first?.reference == "act_9")
        let declined = ProviderEventReader.events(
            .checkout, body: body("payment_declined", #"{"id":"pay_2","response_summary":"Card 4242 declined"}"#))
        #expect(declined?.first?.kind == .paymentFailed)
        #expect(declined?.first?.reason == nil)
        let negative = ProviderEventReader.events(
            .checkout, body: body("payment_refunded", #"{"id":"pay_1","action_id":"act_8","amount":-200}"#))
        #expect(negative?.first?.amount == nil)
        // One chargeback, told twice under different ids: both name it by its payment, so it is recorded once.
        let chargeback = ProviderEventReader.events(
            .checkout,
            body: body("payment_chargeback", #"{"id":"pay_3","action_id":"act_cb","amount":500,"reason_code":"10.4"}"#))
        let evidence = ProviderEventReader.events(
            .checkout,
            body: body(
                "dispute_evidence_required", #"{"id":"dsp_7","payment_id":"pay_3","amount":500,"reason_code":"10.4"}"#))
        #expect(chargeback?.first?.kind == .disputeOpened)
        #expect(evidence?.first?.kind == .disputeOpened)
        #expect(chargeback?.first?.reference == "pay_3")
        #expect(evidence?.first?.reference == chargeback?.first?.reference)
        #expect(evidence?.first?.paymentReference == "pay_3")
        #expect(ProviderEventReader.minorUnits(.string("1130")) == 1130)
        #expect(ProviderEventReader.minorUnits(.number(Decimal(string: "10.5")!)) == nil)
        #expect(ProviderEventReader.minorUnits(.number(Decimal(string: "1e30")!)) == nil)
    }

    @Test("refund webhooks carry our refund key back, and every provider's failed refund is refundFailed")
    func refundKeysAndFailures() throws {
        func stripe(_ type: String, status: String) -> Data {
            Data(
                #"""
                {"id":"evt_\#(type)_\#(status)","type":"\#(type)","data":{"object":{"id":"re_1","object":"refund",
                "amount":200,"currency":"usd","payment_intent":"pi_1","status":"\#(status)",
                "metadata":{"refund_key":"refund-one"}}}}
                """#.utf8)
        }
        let updated = try #require(
            ProviderEventReader.events(.stripe, body: stripe("refund.updated", status: "failed")))
        #expect(updated.map(\.kind) == [.refundFailed])
        #expect(updated.first?.refundKey == "refund-one")
        #expect(updated.first?.reference == "re_1" && updated.first?.paymentReference == "pi_1")
        // refund.failed is a failure whatever status the object shows; a pending refund waits for its final event.
        #expect(
            ProviderEventReader.events(.stripe, body: stripe("refund.failed", status: "pending"))?.map(\.kind) == [
                .refundFailed
            ])
        #expect(ProviderEventReader.events(.stripe, body: stripe("refund.updated", status: "pending")) == [])
        let charge = Data(
            #"""
            {"id":"evt_ch","type":"charge.refunded","data":{"object":{"id":"ch_1","object":"charge","amount":500,
            "currency":"usd","payment_intent":"pi_1","refunds":{"object":"list","data":[{"id":"re_2","object":"refund",
            "amount":100,"currency":"usd","payment_intent":"pi_1","status":"succeeded",
            "metadata":{"refund_key":"refund-two"}}]}}}}
            """#.utf8)
        let refunded = try #require(ProviderEventReader.events(.stripe, body: charge))
        #expect(refunded.map(\.kind) == [.refundSucceeded])
        #expect(refunded.first?.refundKey == "refund-two" && refunded.first?.reference == "re_2")

        // Adyen: a refund's merchantReference is the refund request's reference, our key.
        let adyen = try #require(
            ProviderEventReader.adyen(
                .object([
                    "eventCode": .string("REFUND"), "pspReference": .string("REF1"),
                    "originalReference": .string("PSP1"), "merchantReference": .string("refund-one"),
                    "success": .string("false"),
                    "amount": .object(["value": .number(200), "currency": .string("EUR")]),
                ])))
        #expect(adyen.kind == .refundFailed && adyen.refundKey == "refund-one" && adyen.merchantReference == nil)
        #expect(adyen.paymentReference == "PSP1" && adyen.reference == "REF1")
        let adyenFailed = ProviderEventReader.adyen(
            .object([
                "eventCode": .string("REFUND_FAILED"), "pspReference": .string("REF2"),
                "originalReference": .string("PSP1"), "merchantReference": .string("refund-two"),
                "success": .string("true"),
            ]))
        #expect(adyenFailed?.kind == .refundFailed && adyenFailed?.refundKey == "refund-two")

        // Checkout.com: the refund's `reference` is ours.
        let declined = try #require(
            ProviderEventReader.events(
                .checkout,
                body: Data(
                    #"""
                    {"id":"evt_r","type":"payment_refund_declined","data":{"id":"pay_1","action_id":"act_1",
                    "reference":"refund-one","amount":200,"currency":"USD","metadata":{"transaction_id":"tx-1"}}}
                    """#.utf8)))
        #expect(declined.map(\.kind) == [.refundFailed])
        #expect(declined.first?.refundKey == "refund-one" && declined.first?.reference == "act_1")
        #expect(declined.first?.merchantReference == "tx-1")
    }
}

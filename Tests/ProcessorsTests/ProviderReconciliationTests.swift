import ApplePay
import Foundation
import MerchantCore
import MerchantStore
import MerchantTestSupport
import TestSupport
import Testing

@testable import Processors

/// The reconciler and the provider connectors' ways of settling a lost answer: Stripe and Checkout.com are looked
/// up while they keep the key (24 hours), Adyen waits for its webhook (31 days); past that, a person decides.
@Suite("Reconciling provider payments")
struct ProviderReconciliationTests {
    /// A payment whose answer was never seen: the connector's provider is not listening.
    func unknownPayment(with processor: any PaymentProcessor) async throws -> (any OrderStore, Order) {
        let (store, checkout, breakdown) = try await inMemoryStore(mugs: 1)
        let configuration = StoreConfiguration.demo
        let order = NewOrder(
            checkout: checkout, breakdown: breakdown, transactionID: String(repeating: "ab", count: 32),
            token: testToken(), shippingContact: nil, billingContact: nil, configuration: configuration)
        let service = PaymentService(store: store, processor: processor, timeout: .seconds(10), logger: .silent)
        let result = try await service.pay(order, token: testToken())
        #expect(result.order.status == .unknown, "\(result.order.status)")
        return (store, result.order)
    }

    static let nowhere = URL(string: "http://127.0.0.1:9")!

    @Test("Stripe: looked up for 24 hours, then left to a person in the admin API")
    func stripeKeyLifetime() async throws {
        let stripe = StripeProcessor(
            baseURL: Self.nowhere, secretKey: "sk_test_unused", applePay: .decrypted, timeout: .seconds(3))
        #expect(stripe.unknownOutcomes == .lookUp(keyLifetime: .seconds(86_400)))
        let (store, order) = try await unknownPayment(with: stripe)
        func reconciler(after seconds: TimeInterval) -> Reconciler {
            Reconciler(
                store: store, processor: stripe, settleAfter: .seconds(31), timeout: .seconds(3), logger: .silent,
                clock: { fixedNow.addingTimeInterval(seconds) })
        }
        // Within the day: looked up (the provider is still unreachable, so it stays unknown), nobody flagged.
        #expect(try await reconciler(after: 3600).reconcileOnce().isEmpty)
        #expect(try await reconciler(after: 3600).needingAttention().isEmpty)
        // Past the key lifetime: no guess, a person.
        let flagged = try await reconciler(after: 86_400 + 60).needingAttention()
        #expect(flagged.map(\.id) == [order.id])
        #expect(try await reconciler(after: 86_400 + 60).reconcileOnce().isEmpty)
        #expect(try await store.order(id: order.id)?.status == .unknown)
    }

    @Test("Adyen: never looked up; its webhook settles, and past 31 days a person")
    func adyenWaitsForTheWebhook() async throws {
        let adyen = AdyenProcessor(
            baseURL: Self.nowhere, apiKey: "AQE-unused", merchantAccount: "ExampleECOM", applePay: .decrypted,
            returnURL: "https://shop.example/", timeout: .seconds(3))
        #expect(adyen.unknownOutcomes == .webhook(keyLifetime: .seconds(31 * 86_400)))
        let (store, order) = try await unknownPayment(with: adyen)
        let soon = Reconciler(
            store: store, processor: adyen, settleAfter: .seconds(31), timeout: .seconds(3), logger: .silent,
            clock: { fixedNow.addingTimeInterval(3600) })
        #expect(try await soon.reconcileOnce().isEmpty)
        #expect(try await soon.needingAttention().isEmpty)
        let late = Reconciler(
            store: store, processor: adyen, settleAfter: .seconds(31), timeout: .seconds(3), logger: .silent,
            clock: { fixedNow.addingTimeInterval(32 * 86_400) })
        #expect(try await late.needingAttention().map(\.id) == [order.id])
    }

    @Test("idempotency keys derived per request fit each provider's limit and differ by purpose")
    func derivedKeys() {
        let key = String(repeating: "0123456789abcdef", count: 4)
        #expect(ProviderKeys.key(key, limit: 64) == key)
        let refund = ProviderKeys.key(key, purpose: "refund", limit: 64)
        let void = ProviderKeys.key(key, purpose: "void", limit: 64)
        #expect(refund.count == 64 && void.count == 64 && refund != void && refund != key)
        #expect(ProviderKeys.key(key, purpose: "confirm", limit: 255) == "confirm-" + key)
    }

    @Test("Adyen's brand codes for Apple Pay's networks: cup and cartebancaire, as Adyen names them")
    func adyenBrands() {
        #expect(AdyenProcessor.brand("chinaUnionPay") == "cup")
        #expect(AdyenProcessor.brand("cartesBancaires") == "cartebancaire")
        #expect(AdyenProcessor.brand("MasterCard") == "mc")
        #expect(AdyenProcessor.brand("visa") == "visa")
    }

    @Test("a Stripe PaymentIntent still processing is not a decline, nor decided")
    func stripeProcessing() {
        let processing = JSONObject(["id": "pi_1", "object": "payment_intent", "status": "processing"])
        #expect(StripeProcessor.decided(processing) == .processing(reference: "pi_1"))
        let unconfirmed = JSONObject(["id": "pi_2", "status": "requires_payment_method"])
        #expect(StripeProcessor.decided(unconfirmed) == nil)
        let failed = JSONObject([
            "id": "pi_3", "status": "requires_payment_method",
            "last_payment_error": ["decline_code": "insufficient_funds"],
        ])
        #expect(StripeProcessor.decided(failed) == .declined(.insufficientFunds))
    }
}

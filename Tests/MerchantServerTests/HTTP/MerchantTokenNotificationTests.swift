import Cryptography
import Foundation
import HTTPClient
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import Sandbox
import SandboxGateway
import Testing

/// Apple's "tap and pull" through the sandbox gateway: `emit` records an event and calls the merchant's
/// notification URL; the merchant answers 200 at once and pulls the event over mutual TLS.
@Suite("Merchant token events through the sandbox gateway")
struct MerchantTokenNotificationTests {
    /// Waits (up to 10 s) until `condition` holds for the subscription.
    static func eventually(
        _ service: SubscriptionService, _ id: String, _ condition: (Subscription) -> Bool
    ) async throws -> Subscription {
        for _ in 0..<200 {
            if let current = try await service.store.subscription(id: id), condition(current) { return current }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try #require(try await service.store.subscription(id: id))
    }

    @Test("UPDATED_METADATA, UPDATED_CARD_ART and UNLINK apply once; unknown events get 200; no certificate, no answer")
    func eventsThroughTheGateway() async throws {
        let sandbox = try await SharedSandbox.get()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        defer { Task { await gateway.shutdown() } }
        let processor = SandboxProcessor()
        let configure: (inout MerchantServerConfiguration) -> Void = { $0.sandboxGatewayURL = gateway.url }
        try await ServerHarness.with(
            processor: processor, live: true, configure: configure,
            body: { harness in
                let checkout = try await harness.createCheckout([["sku": "BEANS-MONTHLY", "quantity": 1]])
                let body = try harness.paymentBody(
                    amount: checkout.total, applicationData: checkout.applicationData, merchantToken: true,
                    tokenNotificationURL: harness.base + "/apple-pay")
                let paid = try await harness.post("/v1/checkouts/\(checkout.id)/payment", raw: body)
                #expect(paid.status == 200, "\(paid.text)")
                let id = try (paid.json["subscriptionId"] as? String).orThrow("no subscription")
                let service = try #require(harness.application.api.subscriptions)
                let start = try #require(try await service.store.subscription(id: id))
                let token = try #require(start.merchantTokenIdentifier)
                let roots = Data(sandbox.rootCertificate.pemRepresentation.utf8)

                let metadata = try await MerchantTokenEvents.emit(
                    "UPDATED_METADATA", sandbox: sandbox, merchantToken: token, trustedRootsPEM: roots)
                #expect(metadata.status == 200)
                let expected = sandbox.merchantTokens.event(metadata.eventId)?.merchantTokenMetadata?.cardMetadata
                let updated = try await Self.eventually(service, id) { $0.cardSuffix == expected?.suffix }
                #expect(updated.cardSuffix == expected?.suffix)
                #expect(updated.cardExpiration == expected?.expirationDate)

                let art = try await MerchantTokenEvents.emit(
                    "UPDATED_CARD_ART", sandbox: sandbox, merchantToken: token, trustedRootsPEM: roots)
                let artURL = sandbox.merchantTokens.event(art.eventId)?.merchantTokenMetadata?.cardArt?.first?.url
                let withArt = try await Self.eventually(service, id) { $0.cardArtURL == artURL }
                #expect(withArt.cardArtURL == artURL && artURL != nil)

                // The same notification again changes nothing; an unknown event id is answered 200 too.
                let again = try await harness.get("/apple-pay/notification/merchantToken/\(art.eventId)")
                #expect(again.status == 200)
                let unknown = try await harness.get("/apple-pay/notification/merchantToken/0123456789abcdef")
                #expect(unknown.status == 200)
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await service.store.subscription(id: id)?.version == withArt.version)

                let unlink = try await MerchantTokenEvents.emit(
                    "UNLINK", sandbox: sandbox, merchantToken: token, trustedRootsPEM: roots)
                #expect(unlink.status == 200)
                let unlinked = try await Self.eventually(service, id) { $0.status == .unlinked }
                #expect(unlinked.status == .unlinked)
                #expect(unlinked.nextChargeAt == nil)
                // The next charge does not happen.
                #expect(await service.chargeDue(now: start.anchor.addingTimeInterval(86_400)).isEmpty)
                #expect(processor.chargeCount == 1)

                // The gateway demands the client certificate and x-request-id.
                let path =
                    "/paymentservices/v1/merchantId/\(sandbox.merchantIdentifier)/merchantToken/event/\(unlink.eventId)"
                let anonymous = HTTPClient(configuration: .init(timeout: .seconds(20), trustedRootsPEM: roots))
                let refused = try await anonymous.send(
                    HTTPClientRequest(url: gateway.url + path, headers: [("x-request-id", "test")]))
                #expect(refused.status == 401)
                let identified = HTTPClient(
                    configuration: .init(
                        timeout: .seconds(20),
                        clientIdentity: ClientIdentity(
                            certificatePEM: Data(sandbox.merchantIdentity.certificate.pemRepresentation.utf8),
                            privateKeyPEM: Data(sandbox.merchantIdentity.privateKey.pemRepresentation.utf8)),
                        trustedRootsPEM: roots))
                let noRequestID = try await identified.send(HTTPClientRequest(url: gateway.url + path))
                #expect(noRequestID.status == 400)
                let answered = try await identified.send(
                    HTTPClientRequest(url: gateway.url + path, headers: [("x-request-id", "test")]))
                #expect(answered.status == 200)
                #expect(String(decoding: answered.body, as: UTF8.self).contains("\"eventType\":\"UNLINK\""))
            })
    }

    @Test("a merchant-side cancellation unlinks the token at the gateway")
    func cancellationUnlinks() async throws {
        let sandbox = try await SharedSandbox.get()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        defer { Task { await gateway.shutdown() } }
        let configure: (inout MerchantServerConfiguration) -> Void = { $0.sandboxGatewayURL = gateway.url }
        try await ServerHarness.with(
            configure: configure,
            body: { harness in
                let paid = try await SubscriptionTests.subscribe(harness, sku: "BEANS-MONTHLY")
                let id = try (paid["subscriptionId"] as? String).orThrow("no subscription")
                let cancelled = try await harness.admin("POST", "/admin/v1/subscriptions/\(id)/cancel")
                #expect(cancelled.status == 200 && cancelled.json["status"] as? String == "cancelled")
                let token = try (cancelled.json["merchantTokenIdentifier"] as? String).orThrow("no token")
                #expect(sandbox.merchantTokens.token(token)?.unlinkedAt != nil)
                #expect(gateway.activity.merchantTokensUnlinked == 1)
            })
    }
}

import ApplePay
import Cryptography
import Foundation
import Foundations
import HTTPClient
import MerchantCore
import MerchantHTTP
import MerchantSandbox
import MerchantServer
import MerchantTestSupport
import Sandbox
import SandboxGateway
import TestSupport
import Testing

/// Apple's "tap and pull" through the sandbox gateway: `emit` records an event and calls the merchant's
/// notification URL; the merchant pulls the event over mutual TLS, applies it, and only then answers 200.
@Suite("Merchant token events through the sandbox gateway")
struct MerchantTokenNotificationTests {
    @Test(
        "the card's fpanSuffix is shown; UPDATED_METADATA, UPDATED_CARD_ART and UNLINK apply once; unknown events get 200"
    )
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
                // The card's own last four digits differ from the device account's and the merchant token's.
                var card = try #require(SandboxCard.testCard(network: .visa))
                card.displayLastFour = "8431"
                let body = try harness.paymentBody(
                    amount: checkout.total, applicationData: checkout.applicationData, card: card,
                    merchantToken: true, tokenNotificationURL: harness.base + "/apple-pay")
                let paid = try await harness.pay(checkout, raw: body)
                #expect(paid.status == 200, "\(paid.text)")
                let id = try (paid.json["subscriptionId"] as? String).orThrow("no subscription")
                let service = try #require(harness.application.api.subscriptions)
                let start = try #require(try await service.store.subscription(id: id))
                let token = try #require(start.merchantTokenIdentifier)
                #expect(start.cardSuffix == "8431", "Apple's fpanSuffix, not the MPAN's last four digits")
                #expect(start.cardCountry == "US" && start.cardDescription == "visa debit")
                let secret = try (paid.json["subscriptionSecret"] as? String).orThrow("no secret")
                let page = try await harness.get("/v1/subscriptions/\(id)/manage?secret=\(secret)")
                #expect(page.text.contains("visa debit ending in 8431"), "\(page.text)")
                // The managementURL the payment request gave Apple opens the same page.
                let shown = try await harness.get("/v1/checkouts/\(checkout.id)", checkoutSecret: checkout.secret)
                let special =
                    (shown.json["paymentRequest"] as? [String: Any])?["recurringPaymentRequest"] as? [String: Any]
                let link = try (special?["managementURL"] as? String).orThrow("no managementURL: \(shown.text)")
                let pagePath = try link.range(of: "/v1/subscriptions/manage?").orThrow(link)
                let fromApple = try await harness.get(String(link[pagePath.lowerBound...]))
                #expect(fromApple.status == 200 && fromApple.text.contains("visa debit ending in 8431"))
                let roots = Data(sandbox.rootCertificate.pemRepresentation.utf8)

                let metadata = try await MerchantTokenEvents.emit(
                    "UPDATED_METADATA", sandbox: sandbox, merchantToken: token, trustedRootsPEM: roots)
                #expect(metadata.status == 200)
                let expected = sandbox.merchantTokens.event(metadata.eventId)?.merchantTokenMetadata?.cardMetadata
                // Answered 200 only once applied: the subscription already shows the new card.
                let updated = try #require(try await service.store.subscription(id: id))
                #expect(updated.cardSuffix == expected?.fpanSuffix && expected?.fpanSuffix != nil)
                #expect(updated.cardExpiration == expected?.expirationDate)

                let art = try await MerchantTokenEvents.emit(
                    "UPDATED_CARD_ART", sandbox: sandbox, merchantToken: token, trustedRootsPEM: roots)
                let artURL = sandbox.merchantTokens.event(art.eventId)?.merchantTokenMetadata?.cardArt?.first?.url
                #expect(art.status == 200)
                let withArt = try #require(try await service.store.subscription(id: id))
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
                let unlinked = try #require(try await service.store.subscription(id: id))
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
                let json = ("Content-Type", "application/json")
                let noRequestID = try await identified.send(HTTPClientRequest(url: gateway.url + path, headers: [json]))
                #expect(noRequestID.status == 400)
                let noContentType = try await identified.send(
                    HTTPClientRequest(url: gateway.url + path, headers: [("x-request-id", "test")]))
                #expect(noContentType.status == 400, "Apple requires Content-Type on the GET too")
                let answered = try await identified.send(
                    HTTPClientRequest(url: gateway.url + path, headers: [("x-request-id", "test"), json]))
                #expect(answered.status == 200)
                #expect(String(decoding: answered.body, as: UTF8.self).contains("\"eventType\":\"UNLINK\""))
            })
    }

    @Test(
        "a notification whose event cannot be pulled (the gateway a black hole) is answered 500 within the time limit; a repeat joins the pull in flight; a full share answers 503 at once"
    )
    func unreachableGateway() async throws {
        let hole = try BlackHole()
        let configure: (inout MerchantServerConfiguration) -> Void = {
            $0.sandboxGatewayURL = "https://127.0.0.1:\(hole.port)"
            $0.tokenNotificationTimeLimit = .seconds(2)
            $0.tokenNotificationShare = .init(maximumInFlight: 1, maximumQueued: 0, maximumWait: .zero)
        }
        try await ServerHarness.with(
            configure: configure,
            body: { harness in
                let service = try #require(harness.application.api.subscriptions)
                async let first = harness.get("/apple-pay/notification/merchantToken/event0001")
                // The first pull holds the one place; wait until it is in flight.
                for _ in 0..<500 where service.notifications.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
                #expect(service.notifications.count == 1)
                let repeated = try await harness.get("/apple-pay/notification/merchantToken/event0001")
                #expect(repeated.status == 500, "the same event joins the pull in flight, which does not finish")
                #expect(service.notifications.count == 1, "one pull for the two notifications")
                let other = try await harness.get("/apple-pay/notification/merchantToken/event0002")
                #expect(other.status == 503, "no place for a second pull: refused at once so that Apple retries")
                #expect(try await first.status == 500)
            })
        withExtendedLifetime(hole) {}  // listening (and never answering) until the end
    }

    /// A server pulling from a sandbox gateway, with a subscription to the monthly plan: `body` gets them and the
    /// subscription's id.
    static func withSubscription(
        _ body: (ServerHarness, Sandbox, SandboxGateway, String) async throws -> Void
    ) async throws {
        let sandbox = try await SharedSandbox.get()
        let gateway = try SandboxGateway.start(sandbox: sandbox)
        defer { Task { await gateway.shutdown() } }
        let configure: (inout MerchantServerConfiguration) -> Void = { $0.sandboxGatewayURL = gateway.url }
        try await ServerHarness.with(
            configure: configure,
            body: { harness in
                let paid = try await SubscriptionTests.subscribe(harness, sku: "BEANS-MONTHLY")
                try await body(harness, sandbox, gateway, try (paid["subscriptionId"] as? String).orThrow("no id"))
            })
    }

    @Test("a merchant-side cancellation unlinks the token at the gateway")
    func cancellationUnlinks() async throws {
        try await Self.withSubscription { harness, sandbox, gateway, id in
            let cancelled = try await harness.admin("POST", "/admin/v1/subscriptions/\(id)/cancel")
            #expect(cancelled.status == 200 && cancelled.json["status"] as? String == "cancelled")
            let token = try (cancelled.json["merchantTokenIdentifier"] as? String).orThrow("no token")
            #expect(sandbox.merchantTokens.token(token)?.unlinkedAt != nil)
            #expect(gateway.activity.merchantTokensUnlinked == 1)
        }
    }

    @Test("the admin API points a token's notifications elsewhere through Apple's updateMerchantMetadata")
    func updateMerchantMetadata() async throws {
        try await Self.withSubscription { harness, sandbox, gateway, id in
            let path = "/admin/v1/subscriptions/\(id)/token-notification-url"
            let moved = try await harness.admin(
                "POST", path, json: ["tokenNotificationURL": "https://moved.example.com/apple-pay"])
            #expect(moved.status == 200, "\(moved.text)")
            let token = try #require(
                try await harness.application.api.subscriptions?.store.subscription(id: id)?.merchantTokenIdentifier
            )
            #expect(
                sandbox.merchantTokens.token(token)?.tokenNotificationURL == "https://moved.example.com/apple-pay")
            // Without a URL: the server's own, from its public URL (https, as Apple takes only https).
            let back = try await harness.admin("POST", path)
            #expect(back.status == 200, "\(back.text)")
            let current = try #require(back.json["tokenNotificationURL"] as? String)
            #expect(current.hasPrefix("https://") && current.hasSuffix("/apple-pay"))
            #expect(sandbox.merchantTokens.token(token)?.tokenNotificationURL == current)
            let plain = try await harness.admin("POST", path, json: ["tokenNotificationURL": "http://x.example"])
            #expect(plain.status == 400)
            #expect(gateway.activity.merchantMetadataUpdates == 2)
        }
    }
}

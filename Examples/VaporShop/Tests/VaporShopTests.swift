// The shop's test: a sandbox token paid through VaporTesting, in process, on an SQLite file.
import ApplePay
import Foundation
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import PaymentToken
import Sandbox
import Testing
import Vapor
import VaporShop
import VaporTesting

@Suite("Examples/VaporShop: Apple Pay in a Vapor app's own routes")
struct VaporShopTests {
    /// The test's world: a sandbox playing Apple, the shop's services over it on an SQLite file in a temporary folder.
    struct World {
        let folder: URL
        let sandbox: Sandbox
        let services: MerchantServices

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("vapor-shop-\(UUID())")
            sandbox = try Sandbox.create(
                at: folder.appendingPathComponent("sandbox"), merchantIdentifier: "merchant.com.example.shop")
            // The merchant's Payment Processing keys (the sandbox's), trusting the sandbox's root instead of Apple's.
            let merchants = try [sandbox.paymentProcessingEC, sandbox.paymentProcessingRSA].map {
                try MerchantIdentity(certificate: $0.certificate, privateKey: $0.privateKey)
            }
            let decryptor = try PaymentTokenDecryptor(
                merchants: merchants, verifier: PaymentTokenVerifier(roots: [sandbox.rootCertificate]))
            services = try makeServices(
                configuration: .demo, storePath: folder.appendingPathComponent("orders.sqlite").path,
                processor: SandboxProcessor(),
                tokenOpener: PaymentTokenOpeners.decrypting(with: decryptor),
                validator: MerchantValidator(
                    merchantIdentifier: "merchant.com.example.shop", displayName: "Shop", domain: nil,
                    gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
                logger: Logger(label: "applepay.silent") { _ in SwiftLogNoOpLogHandler() })
        }

        /// `ApplePayPayment` as Apple Pay JS posts it: a Visa token the sandbox signed and encrypted for the
        /// merchant, for `amount` and the checkout's `applicationData`, shipped to Cupertino.
        func paymentBody(amount: String, applicationData: String) throws -> ByteBuffer {
            let card = try #require(SandboxCard.testCard(network: .visa))
            let token = try sandbox.mint(
                MintRequest(
                    card: card, amount: try #require(Decimal(string: amount)), currencyCode: "USD",
                    applicationData: .base64(applicationData)))
            let payment: [String: Any] = [
                "token": try JSONSerialization.jsonObject(with: token.jsonData()),
                "shippingContact": [
                    "givenName": "Ada", "familyName": "Lovelace", "addressLines": ["1 Infinite Loop"],
                    "locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US",
                ],
                "billingContact": ["postalCode": "95014", "countryCode": "US"],
            ]
            return ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: payment))
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    static func object(_ response: TestingHTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body.string.utf8)) as? [String: Any])
    }

    @Test("a checkout paid with a sandbox token is a paid order in the store; Apple's shapes; the shop's route stays")
    func paysASandboxToken() async throws {
        let world = try World()
        defer { world.remove() }
        let services = world.services
        let configureShop: @Sendable (Application) async throws -> Void = { try configure($0, services: services) }
        try await withApp(configure: configureShop) { app in
            let json: HTTPHeaders = ["Content-Type": "application/json"]
            var checkout: [String: Any] = [:]
            try await app.testing().test(
                .POST, "apple-pay/checkouts", headers: json,
                body: ByteBuffer(string: #"{"items": [{"sku": "MUG-01", "quantity": 2}]}"#)
            ) { response in
                #expect(response.status == .created)
                checkout = try Self.object(response)
            }
            let id = try #require(checkout["id"] as? String)
            let secret = try #require(checkout["clientSecret"] as? String)
            let request = try #require(checkout["paymentRequest"] as? [String: Any])
            // Apple Pay JS's ApplePayPaymentRequest: the merchant's capabilities, networks and a total to show.
            #expect(request["merchantCapabilities"] as? [String] != nil)
            let total = try #require((request["total"] as? [String: Any])?["amount"] as? String)
            let applicationData = try #require(request["applicationData"] as? String)

            // Without the checkout's secret the checkout is unknown; nothing is charged.
            var paying = json
            try await app.testing().test(
                .POST, "apple-pay/checkouts/\(id)/payment", headers: paying,
                body: try world.paymentBody(amount: "1.00", applicationData: applicationData)
            ) { response in
                #expect(response.status == .notFound)
                let answer = try Self.object(response)
                #expect(answer["status"] as? Int == 1)
            }

            // The customer pays. The server prices the checkout with the address the sheet authorized (Cupertino:
            // shipping and California's tax), so the token carries that total, as the sheet's would.
            paying.add(name: "Checkout-Secret", value: secret)
            let cupertino = try JSONDecoder().decode(
                Contact.self,
                from: Data(
                    #"{"locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"}"#
                        .utf8))
            let stored = try #require(try await world.services.store.checkout(id: id))
            let priced = try world.services.pricing.price(
                stored.selectingShippingContact(
                    ShippingAddress(redacting: cupertino), configuration: world.services.configuration))
            let amount = Money(minorUnits: priced.total, currency: .usDollar).amountString
            #expect(amount != total, "the address changes the total: the server prices what was authorized")
            var orderID: String?
            try await app.testing().test(
                .POST, "apple-pay/checkouts/\(id)/payment", headers: paying,
                body: try world.paymentBody(amount: amount, applicationData: applicationData)
            ) { response in
                #expect(response.status == .ok)
                let answer = try Self.object(response)
                // ApplePayPaymentAuthorizationResult: STATUS_SUCCESS is 0.
                #expect(answer["status"] as? Int == 0)
                #expect(answer["errors"] == nil)
                orderID = answer["orderId"] as? String
            }

            let paidID = try #require(orderID)
            let order = try #require(try await world.services.store.order(id: paidID))
            #expect(order.status == .paid)
            #expect(order.checkoutID == id)
            #expect(Money(minorUnits: order.totals.total, currency: .usDollar).amountString == amount)

            // Merchant validation refuses a URL that is not Apple's before anything goes out.
            try await app.testing().test(
                .POST, "apple-pay/merchant-session", headers: json,
                body: ByteBuffer(string: #"{"validationURL": "https://attacker.example/session"}"#)
            ) { response in
                #expect(response.status == .badRequest)
                #expect(response.body.string.contains("\"validationURLNotAllowed\""))
            }

            try await app.testing().test(.GET, "hello") { response in
                #expect(response.status == .ok)
                #expect(response.body.string == "Hello from the shop.")
            }
        }
    }
}

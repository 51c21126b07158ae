// The shop's test: a sandbox token paid through HummingbirdTesting, in process, on an SQLite file.
import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdShop
import HummingbirdTesting
import Logging
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import NIOCore
import PaymentToken
import Sandbox
import Testing

@Suite("Examples/HummingbirdShop: Apple Pay mounted in a Hummingbird app")
struct HummingbirdShopTests {
    /// The test's world: a sandbox playing Apple, the shop built over it on an SQLite file in a temporary folder.
    struct World {
        let folder: URL
        let sandbox: Sandbox
        let shop: (application: Application<RouterResponder<ShopRequestContext>>, services: MerchantServices)

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("hummingbird-shop-\(UUID())")
            sandbox = try Sandbox.create(
                at: folder.appendingPathComponent("sandbox"), merchantIdentifier: "merchant.com.example.shop")
            // The merchant's Payment Processing keys (the sandbox's), trusting the sandbox's root instead of Apple's.
            let merchants = try [sandbox.paymentProcessingEC, sandbox.paymentProcessingRSA].map {
                try MerchantIdentity(certificate: $0.certificate, privateKey: $0.privateKey)
            }
            let decryptor = try PaymentTokenDecryptor(
                merchants: merchants, verifier: PaymentTokenVerifier(roots: [sandbox.rootCertificate]))
            shop = try buildApplication(
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

    static let json: HTTPFields = [.contentType: "application/json"]

    static func object(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
    }

    @Test("a checkout paid with a sandbox token is a paid order in the store; the shop's own route still answers")
    func paysASandboxToken() async throws {
        let world = try World()
        defer { world.remove() }
        try await world.shop.application.test(.router) { client in
            // The shop's page asks for a checkout, then the sheet gives the shipping address.
            let created = try await client.execute(
                uri: "/v1/checkouts", method: .post, headers: Self.json,
                body: ByteBuffer(string: #"{"items": [{"sku": "MUG-01", "quantity": 2}]}"#))
            #expect(created.status == .created)
            let checkout = try Self.object(created)
            let id = try #require(checkout["id"] as? String)
            var headers = Self.json
            headers[try #require(HTTPField.Name("Checkout-Secret"))] = try #require(checkout["clientSecret"] as? String)
            let request = try #require(checkout["paymentRequest"] as? [String: Any])
            let applicationData = try #require(request["applicationData"] as? String)
            let shipped = try await client.execute(
                uri: "/v1/checkouts/\(id)/shipping-contact", method: .post, headers: headers,
                body: ByteBuffer(
                    string:
                        #"{"locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"}"#
                ))
            #expect(shipped.status == .ok)
            let total = try #require((try Self.object(shipped)["newTotal"] as? [String: Any])?["amount"] as? String)

            // The customer pays: the token goes to the payment route.
            let paid = try await client.execute(
                uri: "/v1/checkouts/\(id)/payment", method: .post, headers: headers,
                body: try world.paymentBody(amount: total, applicationData: applicationData))
            #expect(paid.status == .ok)
            // The shop's middleware runs around the merchant API's routes too; the API's own headers are there.
            #expect(paid.headers[try #require(HTTPField.Name("X-Shop"))] == "HummingbirdShop")
            #expect(paid.headers[.cacheControl] == "no-store")
            let answer = try Self.object(paid)
            #expect(answer["status"] as? String == "success")
            let orderID = try #require(answer["orderId"] as? String)

            // The order is paid, in the shop's SQLite file.
            let order = try #require(try await world.shop.services.store.order(id: orderID))
            #expect(order.status == .paid)
            #expect(order.checkoutID == id)
            #expect(Money(minorUnits: order.totals.total, currency: .usDollar).amountString == total)
            #expect(order.panLastFour == "0492")

            // The shop's own route is untouched.
            let hello = try await client.execute(uri: "/hello", method: .get)
            #expect(hello.status == .ok)
            #expect(String(buffer: hello.body) == "Hello from the shop.")
        }
    }
}

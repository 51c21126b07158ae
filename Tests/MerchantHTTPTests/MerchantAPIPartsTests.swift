import Foundation
import HTTPCore
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantSandbox
import MerchantStore
import MerchantTestSupport
import Testing

@Suite("MerchantAPI over MerchantServices, whole or in parts")
struct MerchantAPIPartsTests {
    static let adminToken = "parts-admin-token-0123456789abcdef"

    /// An API on a fresh in-memory store (which keeps subscriptions, so Apple's notifications have a route).
    static func api(_ parts: MerchantAPI.Parts) throws -> MerchantAPI {
        let services = MerchantServices(
            configuration: .demo, store: try SQLiteOrderStore(path: ":memory:"), processor: SandboxProcessor(),
            tokenOpener: HostileClientTests.RefusingOpener(),
            validator: MerchantValidator(
                merchantIdentifier: "merchant.test", displayName: "Test", domain: nil,
                gatewayBaseURL: "https://apple-pay-gateway.apple.com", identity: nil),
            logger: .silent)
        return MerchantAPI(services: services, adminToken: adminToken, parts: parts)
    }

    static func status(_ api: MerchantAPI, _ method: HTTPMethod, _ path: String, body: String? = nil) async -> Int {
        var headers: HTTPHeaders = ["Authorization": "Bearer \(adminToken)"]
        if body != nil { headers["Content-Type"] = "application/json" }
        let request = HTTPRequest(method: method, path: path, headers: headers, body: Data((body ?? "").utf8))
        return await api.respond(to: request).status
    }

    @Test("the whole API lists every route a framework must send to it, in the order matched")
    func wholeAPI() throws {
        let endpoints = try Self.api(.all).endpoints
        let names = endpoints.map { "\($0.method) \($0.pattern)" }
        for expected in [
            "POST /v1/checkouts", "POST /v1/checkouts/{id}/payment", "POST /v1/apple-pay/merchant-session",
            "GET /apple-pay/notification/merchantToken/{eventId}", "GET /admin/v1/orders", "GET /healthz", "GET /",
            "GET /orders/{id}", "GET /v1/subscriptions/{id}/manage",
        ] {
            #expect(names.contains(expected), "\(expected) missing")
        }
        #expect(Set(names).count == names.count, "a route listed twice")
        // The subscription pages come before the JSON API's `/v1/subscriptions/{id}`, which would take `manage`.
        let manage = try #require(names.firstIndex(of: "GET /v1/subscriptions/manage"))
        let json = try #require(names.firstIndex(of: "GET /v1/subscriptions/{id}"))
        #expect(manage < json)
    }

    @Test("checkout and payments alone: the payment routes answer, the admin API, pages and operations do not exist")
    func checkoutOnly() async throws {
        let api = try Self.api(.checkout)
        #expect(
            await Self.status(api, .post, "/v1/checkouts", body: #"{"items":[{"sku":"MUG-01","quantity":1}]}"#) == 201)
        #expect(await Self.status(api, .get, "/v1/products") == 200)
        #expect(await Self.status(api, .get, "/admin/v1/orders") == 404)
        #expect(await Self.status(api, .get, "/healthz") == 404)
        #expect(await Self.status(api, .get, "/") == 404)
        #expect(await Self.status(api, .get, "/apple-pay/notification/merchantToken/evt_1") == 404)
        #expect(!api.endpoints.contains { $0.pattern.hasPrefix("/admin/") || $0.pattern.hasPrefix("/wallet/") })
    }

    @Test("each part alone serves its own routes only")
    func partsAlone() throws {
        #expect(
            try Self.api(.appleNotifications).endpoints == [
                Router.Endpoint(method: .get, pattern: "/apple-pay/notification/merchantToken/{eventId}")
            ])
        #expect(try Self.api(.operations).endpoints.map(\.pattern) == ["/healthz", "/metrics"])
        #expect(try Self.api(.admin).endpoints.allSatisfy { $0.pattern.hasPrefix("/admin/v1/") })
        // No webhook endpoints configured, no Wallet orders: nothing to serve.
        #expect(try Self.api(.webhooks).endpoints.isEmpty)
        #expect(try Self.api(.wallet).endpoints.isEmpty)
    }
}

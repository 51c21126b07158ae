import ApplePay
import Foundation
import Foundations
import HTTPCore
import MerchantCore
import MerchantHTTP
import MerchantIntegrations
import MerchantServer
import MerchantStore
import MerchantTestSupport
import TestSupport
import Testing
import WalletOrders

/// The configuration file: every section optional, every problem reported with its path, old keys read as
/// aliases, and the one public URL under which every published URL lies.
@Suite("Server configuration file")
struct ServerConfigurationTests {
    /// Writes `object` as the file and loads it.
    static func load(_ object: [String: Any]) throws -> MerchantServerConfiguration {
        let directory = try TemporaryDirectory(prefix: "server-config")
        defer { directory.remove() }
        let file = directory.path("config.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: file))
        return try MerchantServerConfiguration.load(file: file)
    }

    /// The problems `load` reports for `object`.
    static func problems(_ object: [String: Any]) -> [ConfigurationProblem] {
        do {
            _ = try load(object)
            return []
        } catch let error as ServerStartError {
            #expect(error.code == .invalidConfiguration)
            for problem in error.problems { #expect(error.message.contains(problem.path), "\(error.message)") }
            return error.problems
        } catch {
            Issue.record("\(error)")
            return []
        }
    }

    @Test("a file holding only a server section serves the demo catalog with the sandbox processor")
    func serverOnly() throws {
        let configuration = try Self.load(["server": ["port": 9000, "store": "sqlite::memory:"]])
        #expect(configuration.store == StoreConfiguration.demo)
        #expect(configuration.port == 9000)
        #expect(configuration.storeLocation == .sqlite(path: ":memory:"))
        #expect(configuration.processor == .sandbox)
        #expect(configuration.publicURL == nil)
    }

    @Test("a file holding only a processor section serves the demo catalog with that processor")
    func processorOnly() throws {
        let configuration = try Self.load([
            "processor": ["kind": "http", "url": "https://processor.internal:9090", "timeoutSeconds": 5]
        ])
        #expect(configuration.processor == .http(url: URL(string: "https://processor.internal:9090")!))
        #expect(configuration.store.processor.timeout == .seconds(5))
        var demo = StoreConfiguration.demo
        demo.processor = configuration.store.processor
        #expect(configuration.store == demo)
        #expect(configuration.host == "127.0.0.1")
        // A url alone means kind http.
        #expect(try Self.load(["processor": ["url": "http://127.0.0.1:9"]]).processor.kind == .http)
    }

    @Test("a webhook secret file belongs to the kinds whose provider signs with it; an empty one is refused")
    func webhookSecretFiles() {
        let wrongKind = Self.problems([
            "processor": [
                "kind": "http", "url": "https://processor.internal:9090", "webhookSecretFile": "stripe.secret",
                "webhookHMACKeyFile": "adyen.hmac",
            ]
        ])
        #expect(wrongKind.map(\.path).sorted() == ["processor.webhookHMACKeyFile", "processor.webhookSecretFile"])
        #expect(wrongKind.allSatisfy { $0.code == .invalidProcessor })
        let empty = Self.problems(["processor": ["webhookHMACKeyFile": ""]])
        #expect(empty.map(\.path) == ["processor.webhookHMACKeyFile"])
        #expect(empty.first?.code == .malformed)
        #expect(Self.problems(["processor": ["webhookSecretFile": 7]]).map(\.path) == ["processor.webhookSecretFile"])
    }

    @Test("every problem in the server and processor sections is reported at once, each with its path")
    func everyProblem() {
        let problems = Self.problems([
            "server": [
                "host": 3, "port": 70_000, "storePoolSize": 0, "store": "mysql://x", "publicURL": "http://shop",
                "requestTimeout": 0, "rateLimits": "sometimes", "threads": 0, "adminToken": "",
            ],
            "processor": ["kind": "paypal", "timeoutSeconds": 31],
        ])
        let paths = Set(problems.map(\.path))
        #expect(
            paths == [
                "server.host", "server.port", "server.storePoolSize", "server.store", "server.publicURL",
                "server.requestTimeout", "server.rateLimits", "server.threads", "server.adminToken",
                "processor.kind", "processor.timeoutSeconds",
            ], "\(problems)")
        #expect(problems.first { $0.path == "server.store" }?.code == .invalidStore)
        #expect(problems.first { $0.path == "server.publicURL" }?.code == .invalidURL)
        #expect(problems.first { $0.path == "server.port" }?.code == .outOfRange)
        #expect(problems.first { $0.path == "server.host" }?.code == .malformed)
    }

    @Test("the outside parties' shares, the notification time limit and the admin failure limit come from the file")
    func sharesAndLimits() throws {
        let configuration = try Self.load([
            "server": [
                "shares": [
                    "processor": ["inFlight": 200, "queued": 50, "waitMilliseconds": 500],
                    "tokenNotifications": ["queued": 2],
                ],
                "tokenNotificationTimeLimitSeconds": 3, "adminFailureLimit": ["perMinute": 6, "burst": 3],
            ]
        ])
        #expect(
            configuration.processorShare
                == Bulkhead.Limits(maximumInFlight: 200, maximumQueued: 50, maximumWait: .milliseconds(500)))
        var notifications = TokenNotifications.defaultShare
        notifications.maximumQueued = 2
        #expect(configuration.tokenNotificationShare == notifications, "the fields left out keep their defaults")
        #expect(configuration.merchantValidationShare == MerchantValidator.defaultShare)
        #expect(configuration.tokenNotificationTimeLimit == .seconds(3))
        #expect(configuration.adminFailureLimit == RateLimit(perMinute: 6, burst: 3))
        #expect(try Self.load(["server": ["adminFailureLimit": "off"]]).adminFailureLimit == nil)
        #expect(try Self.load(["server": ["port": 0]]).adminFailureLimit == BearerAuthentication.defaultFailureLimit)

        let problems = Self.problems([
            "server": [
                "shares": [
                    "merchantValidation": ["inFlight": 0, "waitMilliseconds": -1], "processor": ["queued": -1],
                ],
                "tokenNotificationTimeLimitSeconds": 0, "adminFailureLimit": ["perMinute": 0, "burst": 1],
            ]
        ])
        #expect(
            Set(problems.map(\.path)) == [
                "server.shares.merchantValidation.inFlight", "server.shares.merchantValidation.waitMilliseconds",
                "server.shares.processor.queued", "server.tokenNotificationTimeLimitSeconds",
                "server.adminFailureLimit",
            ], "\(problems)")
        #expect(
            Self.problems(["server": ["adminFailureLimit": "sometimes"]]).map(\.path) == ["server.adminFailureLimit"])
        #expect(
            Self.problems(["server": ["shares": ["processor": ["queued": "x"]]]]).map(\.path) == [
                "server.shares.processor.queued"
            ])
    }

    @Test("every rule the catalog breaks is reported, not only the first")
    func everyCatalogProblem() throws {
        var catalog = try #require(
            try JSONSerialization.jsonObject(with: Data(sampleStoreConfiguration.utf8)) as? [String: Any])
        catalog["currencyCode"] = "XYZ"
        catalog["supportedNetworks"] = [String]()
        catalog["server"] = ["port": -1]
        let problems = Self.problems(catalog)
        let paths = Set(problems.map(\.path))
        #expect(paths.isSuperset(of: ["currencyCode", "supportedNetworks", "server.port"]), "\(problems)")
        #expect(problems.first { $0.path == "currencyCode" }?.code.rawValue == "invalidCurrency")
    }

    @Test("a processor of kind http needs a url, and only it has one")
    func processorKinds() {
        #expect(Self.problems(["processor": ["kind": "http"]]).map(\.path) == ["processor.url"])
        #expect(Self.problems(["processor": ["kind": "sandbox", "url": "https://p"]]).map(\.path) == ["processor.url"])
        #expect(Self.problems(["processor": ["url": "ftp://p"]]).map(\.code) == [.invalidURL])
    }

    @Test("old keys are read as aliases: publicBaseURL for server.publicURL, server.processor for processor.url")
    func aliases() throws {
        let configuration = try Self.load([
            "publicBaseURL": "https://shop.example.com", "server": ["processor": "http://127.0.0.1:9"],
        ])
        #expect(configuration.publicURL == PublicURL("https://shop.example.com"))
        #expect(configuration.processor == .http(url: URL(string: "http://127.0.0.1:9")!))
        let conflicts = Self.problems([
            "publicBaseURL": "https://a.example", "processor": ["url": "https://p.example"],
            "server": ["publicURL": "https://b.example", "processor": "https://q.example"],
        ])
        #expect(Set(conflicts.map(\.path)) == ["publicBaseURL", "server.processor"], "\(conflicts)")
        #expect(conflicts.allSatisfy { $0.code == .conflict })
    }

    @Test("a configured public URL is https with a host and no trailing slash; the default is the server's address")
    func publicURLRules() {
        #expect(PublicURL("https://shop.example.com/pay")?.text == "https://shop.example.com/pay")
        for bad in ["http://shop.example.com", "https://shop.example.com/", "https://", "https://x?a=1", "shop"] {
            #expect(PublicURL(bad) == nil, "\(bad)")
        }
        #expect(PublicURL(serverHost: "0.0.0.0", port: 8080).text == "http://127.0.0.1:8080")
        #expect(PublicURL(serverHost: "::1", port: 80).text == "http://[::1]:80")
    }

    @Test("every URL the server publishes is under the one public URL")
    func publishedURLs() async throws {
        let base = "https://shop.example.com/pay"
        try await ServerHarness.with(
            configure: { $0.publicURL = PublicURL(base) },
            body: { server in
                #expect(server.application.publicURL.text == base)
                #expect(server.application.configuration.store.publicBaseURL == base)

                // A plan checkout: its managementURL and tokenNotificationURL.
                let plan = try await server.createCheckout([["sku": "BEANS-MONTHLY", "quantity": 1]])
                let shown = try await server.get("/v1/checkouts/\(plan.id)", checkoutSecret: plan.secret)
                let request = try JSONDecoder().decode(
                    PaymentRequest.self,
                    from: try JSONSerialization.data(withJSONObject: shown.json["paymentRequest"] as Any))
                let recurring = try #require(request.recurringPaymentRequest)
                #expect(
                    recurring.managementURL.hasPrefix("\(base)/v1/subscriptions/manage?checkout=\(plan.id)&secret="))
                #expect(recurring.tokenNotificationURL == "\(base)/apple-pay")

                // The subscription's management link in the payment answer.
                let subscribed = try await SubscriptionTests.subscribe(server, sku: "BEANS-MONTHLY")
                let management = try (subscribed["managementURL"] as? String).orThrow("managementURL")
                #expect(management.hasPrefix("\(base)/v1/subscriptions/"), "\(management)")

                // Wallet: the web service and the order's management page.
                let (details, orderID) = try await server.payForOrderDetails()
                #expect(details.webServiceURL == "\(base)/wallet")
                let package = try await server.send(
                    "GET", "/wallet/v1/orders/\(details.orderTypeIdentifier)/\(orderID)",
                    headers: [("Authorization", "AppleOrder \(details.authenticationToken)")])
                #expect(package.status == 200, "\(package.text)")
                let files = try ZIPArchive.read(package.body)
                let order = try JSONDecoder().decode(
                    WalletOrder.self, from: try files["order.json"].orThrow("order.json"))
                #expect(order.orderManagementURL.hasPrefix("\(base)/orders/\(orderID)?secret="))
                #expect(order.webServiceURL == "\(base)/wallet")
                #expect(order.merchant.url == base)
            })
    }

    @Test("without a public URL, the published URLs are under the server's own address (https for Apple's)")
    func defaultPublicURL() async throws {
        try await ServerHarness.with { server in
            #expect(server.application.publicURL.text == server.base)
            let (details, _) = try await server.payForOrderDetails()
            #expect(details.webServiceURL == "https://" + server.base.dropFirst("http://".count) + "/wallet")
            let plan = try await server.createCheckout([["sku": "BEANS-MONTHLY", "quantity": 1]])
            let shown = try await server.get("/v1/checkouts/\(plan.id)", checkoutSecret: plan.secret)
            let special =
                try (shown.json["paymentRequest"] as? [String: Any])?["recurringPaymentRequest"]
                as? [String: Any]
            let https = "https://" + server.base.dropFirst("http://".count)
            #expect(special?["tokenNotificationURL"] as? String == https + "/apple-pay")
            let managementURL = try (special?["managementURL"] as? String).orThrow("no managementURL")
            #expect(managementURL.hasPrefix(https + "/v1/subscriptions/manage?checkout=\(plan.id)&secret="))
            // Apple's link answers the customer's page (before the payment: not started yet), not a fixed sentence.
            let before = try await server.get(String(managementURL.dropFirst(https.count)))
            #expect(before.status == 200 && before.text.contains("has not started yet"), "\(before.text)")
            let subscribed = try await SubscriptionTests.subscribe(server, sku: "BEANS-MONTHLY")
            let management = try (subscribed["managementURL"] as? String).orThrow("managementURL")
            #expect(management.hasPrefix(server.base + "/v1/subscriptions/"), "\(management)")
        }
    }
    @Test("trusted proxies: addresses and networks of both families; each bad entry reported with its path")
    func trustedProxies() throws {
        let configuration = try Self.load([
            "server": ["trustedProxies": ["10.0.0.0/8", "::1", "2001:db8::/32"], "forwardedHeader": "forwarded"]
        ])
        #expect(configuration.trustedProxies.networks.map(\.description) == ["10.0.0.0/8", "::1/128", "2001:db8::/32"])
        #expect(configuration.trustedProxies.header == .forwarded)
        #expect(try Self.load([:]).trustedProxies == TrustedProxies())
        #expect(try Self.load(["server": ["trustedProxies": ["192.0.2.1"]]]).trustedProxies.header == .xForwardedFor)
        let problems = Self.problems([
            "server": [
                "trustedProxies": ["10.0.0.0/8", "10.0.0.1/8", "garbage", "::/129", ""], "forwardedHeader": "X-Real-IP",
            ]
        ])
        #expect(
            problems.map(\.path) == [
                "server.trustedProxies[1]", "server.trustedProxies[2]", "server.trustedProxies[3]",
                "server.trustedProxies[4]", "server.forwardedHeader",
            ], "\(problems)")
        #expect(problems.dropLast().allSatisfy { $0.code == .invalidAddress })
        #expect(problems.last?.code == .invalidChoice)
        #expect(Self.problems(["server": ["trustedProxies": "10.0.0.0/8"]]).map(\.path) == ["server.trustedProxies"])
    }

    /// Writes `object` as a file of mode `mode` and loads it.
    static func load(_ object: [String: Any], mode: mode_t) throws -> MerchantServerConfiguration {
        let directory = try TemporaryDirectory(prefix: "server-config")
        defer { directory.remove() }
        let file = directory.path("config.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: file))
        chmod(file, mode)
        return try MerchantServerConfiguration.load(file: file)
    }

    @Test("server.adminToken: at least 32 characters, in a file only its owner may read")
    func adminToken() throws {
        let token = String(repeating: "t", count: 32)
        #expect(try Self.load(["server": ["adminToken": token]], mode: 0o600).adminToken == token)
        for mode: mode_t in [0o644, 0o640, 0o604, 0o620] {
            do {
                _ = try Self.load(["server": ["adminToken": token]], mode: mode)
                Issue.record("a file of mode \(String(mode, radix: 8)) holding the admin token was accepted")
            } catch let error as ServerStartError {
                #expect(error.code == .insecureConfigurationFile)
                #expect(error.message.contains("chmod 600"))
                #expect(!error.message.contains(token))
            }
        }
        // Without a token, a file may be read by others.
        #expect(try Self.load(["server": ["port": 9000]], mode: 0o644).port == 9000)
        do {
            _ = try Self.load(["server": ["adminToken": String(token.dropLast())]], mode: 0o600)
            Issue.record("a 31-character admin token was accepted")
        } catch let error as ServerStartError {
            #expect(error.problems.map(\.path) == ["server.adminToken"])
            #expect(error.problems.map(\.code) == [.tooShort])
            #expect(!error.message.contains(String(token.dropLast())))
        }
    }
}
